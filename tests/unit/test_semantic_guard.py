"""What makes two similar queries different questions for the semantic cache."""

from __future__ import annotations

import pytest
from edgeindex.search.semantic_guard import signature

VOCAB = frozenset({"invoice", "the", "show", "me", "report", "quarterly", "revenue", "how", "do", "rotate",
                   "schedule", "oncall", "our", "we"})


@pytest.mark.parametrize("a,b", [
    ("invoice 4711", "invoice 4712"),
    ("error err_42 in build", "error err_43 in build"),
    ('find "blue whale" sightings', 'find "grey whale" sightings'),
    ("release v1.2.3 notes", "release v1.2.4 notes"),
    ("quarterly report acme", "quarterly report globex"),        # rare words (not in the model's vocabulary)
])
def test_different_questions_have_different_signatures(a, b):
    assert signature(a, VOCAB) != signature(b, VOCAB)


@pytest.mark.parametrize("a,b", [
    ("how do we rotate the oncall schedule", "rotate our oncall schedule"),
    ("show me invoice 4711", "invoice 4711"),
    ("quarterly revenue report", "the quarterly revenue report"),
])
def test_paraphrases_share_a_signature(a, b):
    assert signature(a, VOCAB) == signature(b, VOCAB)


class _Vocabulary:
    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces

    def tokenizer(self):
        return self

    def get_vocab(self) -> dict[str, int]:
        return {piece: i for i, piece in enumerate(self.pieces)}


def test_model_vocabulary_is_whole_words_of_wordpiece_and_sentencepiece():
    from edgeindex.search.semantic_guard import model_vocabulary

    assert model_vocabulary(_Vocabulary(["[UNK]", "berlin", "##er", "wall", "1961"])) == {"berlin", "wall"}
    # SentencePiece (multilingual-e5-small): a word begins with ▁; pieces without it continue a word
    pieces = ["<unk>", "\u2581Berlin", "er", "\u2581Mauer", "\u2581", "\u25811961", "\u2581长城"]
    assert model_vocabulary(_Vocabulary(pieces)) == {"berlin", "mauer", "长城"}
