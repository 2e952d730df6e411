"""Object keys carry document ids of any shape, encoded, and give them back from a bucket event."""

from __future__ import annotations

from urllib.parse import quote_plus

import pytest
from edgeindex import object_keys as keys

IDS = ["reports/2025/q3.pdf", "..", ".hidden", "<dbpedia:Babylon_5:_Voices>", "a b+c", "été-報告", "x" * 512]


@pytest.mark.parametrize("document_id", IDS)
def test_a_document_id_round_trips_through_its_object_key(document_id):
    key = keys.object_key("team-a", document_id, 3, keys.safe_filename(document_id))
    assert key.count("/") == 4 and ".." not in key.split("/")
    ref = keys.parse_object_key(quote_plus(key, safe="/"))  # as S3 events send it
    assert (ref.entity_id, ref.document_id, ref.version) == ("team-a", document_id, 3)
    assert key.startswith(keys.document_objects_prefix("team-a", document_id))


def test_prefixes_of_two_documents_never_overlap():
    a, b = keys.document_objects_prefix("e", "a"), keys.document_objects_prefix("e", "ab")
    assert not b.startswith(a) and not a.startswith(b)
    assert not keys.run_prefix("e", "ab").startswith(keys.run_prefix("e", "a"))


def test_keys_written_before_the_encoding_still_parse():
    ref = keys.parse_object_key("docs/team%3Aa/report-1/v3/q3+results.pdf")
    assert (ref.entity_id, ref.document_id, ref.version) == ("team:a", "report-1", 3)


def test_the_default_file_name_never_carries_the_raw_id():
    assert keys.safe_filename("reports/2025/q3.pdf") == "q3.pdf"
    assert keys.safe_filename("..") == "document"


def test_a_key_names_the_life_of_the_document_it_belongs_to():
    generation = "1a2b3c4d-0000-4000-8000-000000000000"
    key = keys.object_key("team-a", "reports/q3.pdf", 2, "q3.pdf", generation)
    ref = keys.parse_object_key(quote_plus(key, safe="/"))
    assert (ref.document_id, ref.version, ref.generation) == ("reports/q3.pdf", 2, "1a2b3c4d")
    assert ref.of_generation(generation) and not ref.of_generation("ffffffff-0000-4000-8000-000000000000")
    assert key != keys.object_key("team-a", "reports/q3.pdf", 2, "q3.pdf", "ffffffff")  # a new life, a new key
    assert keys.of_generation(key, generation) and not keys.of_generation(key, "ffffffff")
    artifact = keys.run_artifacts_prefix("team-a", "reports/q3.pdf", 2, generation) + "text.txt"
    assert keys.of_generation(artifact, generation) and not keys.of_generation(artifact, "ffffffff")
    # keys written before generations were named belong to whatever life holds the id
    old = keys.parse_object_key("docs/team-a/report-1/v3/q3.pdf")
    assert old.generation is None and old.of_generation(generation)
