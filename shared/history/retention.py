"""How much history an entity keeps: replaced versions by count and by age."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..worker_vars import HistoryVars

MAX_VERSIONS = 10_000  # HistoryVars' bounds: an entity's own bounds are checked against the same
MAX_DAYS = 36_500


@dataclass(frozen=True)
class Retention:
    """``versions`` replaced versions kept per document (0: no history); replaced versions older
    than ``days`` dropped (0: no age bound). The live version is always kept."""

    versions: int
    days: int

    def params(self) -> dict:
        return {"versions": self.versions, "days": self.days}

    @classmethod
    def of(cls, env) -> Retention:
        """The deployment's: the worker's HISTORY_VERSIONS and HISTORY_DAYS."""
        return cls(versions=env.var("HISTORY_VERSIONS", int), days=env.var("HISTORY_DAYS", int))


_FIELDS = HistoryVars.model_fields
DEFAULT = Retention(versions=_FIELDS["HISTORY_VERSIONS"].default, days=_FIELDS["HISTORY_DAYS"].default)


class RetentionRequest(BaseModel):
    """``PUT /entities/{e}/history``: an entity's own bounds; null falls back to the deployment's."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    versions: Annotated[int, Field(ge=0, le=MAX_VERSIONS)] | None = None
    days: Annotated[int, Field(ge=0, le=MAX_DAYS)] | None = None
