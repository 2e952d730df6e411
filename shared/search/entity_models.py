"""Entities served by another embedding model than the deployment's (``edgeindex models cutover --entity``).

A search worker keeps one ``SearchService`` per model serving some entity (runtime/serving_model.py
builds them on that model's bindings and refreshes the map each poll). A search whose entities are
all served by one such model is answered by that model's service: its query vector, its semantic
cache, its cache keys. Any other search (the deployment's entities, or a mix of models) is answered
by the deployment's service, whose query vectors score only the chunks of its model: an entity of
another model in a mixed scope is found by full text alone, never by vectors of two models at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EntityModels:
    models: dict[str, str] = field(default_factory=dict)     # entity id → its model (not the deployment's)
    services: dict[str, Any] = field(default_factory=dict)   # model id → the SearchService of that model

    def service_for(self, entity_ids: list[str]) -> Any | None:
        """The service of the one model every entity is served by, if it is not the deployment's
        and this worker has it; None: the deployment's service answers."""
        if not entity_ids:
            return None
        first = self.models.get(entity_ids[0])
        if first is None or any(self.models.get(e) != first for e in entity_ids[1:]):
            return None
        return self.services.get(first)
