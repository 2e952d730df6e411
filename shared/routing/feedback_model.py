"""The ``POST /feedback`` body."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

ChunkId = Annotated[UUID, Field(strict=False)]


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    search_id: Annotated[UUID, Field(strict=False)]
    useful: Annotated[list[ChunkId], Field(max_length=1000)] = []
    not_useful: Annotated[list[ChunkId], Field(max_length=1000)] = []

    @model_validator(mode="after")
    def _some(self) -> FeedbackRequest:
        if not self.useful and not self.not_useful:
            raise ValueError("name at least one chunk in useful or not_useful")
        return self
