"""An entity with no tools or indices registered is an empty catalogue, not a 500 (found by the catalogue test)."""

from __future__ import annotations

import numpy as np
from edgeindex.selection.scoring import Catalogue


def test_an_empty_catalogue_builds_and_has_nothing_to_score():
    for vectors in (np.zeros((0, 384), np.float32), np.zeros((0, 1), np.float32)):
        catalogue = Catalogue([], vectors, [])
        assert catalogue.size == 0 and catalogue.vectors.shape[0] == 0
