"""The router's pure parts: features, the model's fit, its bounded steps, the feedback reward."""

from __future__ import annotations

import numpy as np
from edgeindex.routing.features import NAMES, Evidence, features
from edgeindex.routing.model import Bounds, RouterModel, ranking_reward


def test_features_measure_identifiers_digits_quotes_and_script():
    vocabulary = frozenset({"invoice", "timeout", "what", "is", "the", "capital", "of", "france"})
    ids = features("err_42 v1.2.3 sha256 timeout", None, vocabulary, Evidence())
    assert ids["identifier_share"] == 0.75 and ids["digit_share"] == 0.75
    prose = features("what is the capital of france?", None, vocabulary, Evidence())
    assert prose["identifier_share"] == 0 and prose["question"] == 1 and prose["oov_share"] == 0
    assert features('"exact phrase" here', None, vocabulary, Evidence())["quoted"] == 1
    assert features("zylophonic quibbles", None, vocabulary, Evidence())["oov_share"] == 1


def test_evidence_features_from_the_lexical_statement():
    evidence = Evidence.from_lexical({"terms": 4, "matched": 3, "rare": 1, "best_idf": 5.0, "chunks": 1000},
                                     [0.8, 0.2], [0.0, 0.0], candidates=40)
    f = features("a b c d", None, None, evidence)
    assert f["matched_share"] == 0.75 and f["rare_share"] == round(1 / 3, 4)
    assert f["bm25_best"] == 0.8 and f["bm25_gap"] == 0.75
    assert 0 < f["best_idf"] <= 1 and set(f) == set(NAMES)


def test_fit_learns_which_bin_wins_per_feature():
    rng = np.random.default_rng(0)
    model = RouterModel.blank()
    names = [n for n, _ in model.bins]
    x = np.zeros((400, len(model.features)))
    ident = model.features.index("identifier_share")
    x[:200, ident] = rng.uniform(0.6, 1.0, 200)  # identifier-heavy: text wins
    ndcg = np.full((400, len(names)), 0.3)
    ndcg[:200, names.index("text")] = 0.9
    ndcg[200:, names.index("vector")] = 0.9
    model.fit(x, ndcg)
    chosen = [names[model.decide(dict(zip(model.features, row, strict=True)))] for row in x]
    assert chosen[:200] == ["text"] * 200 and chosen[200:] == ["vector"] * 200


def test_bounded_step_caps_each_move_drift_and_keeps_the_blend_reachable():
    base = RouterModel.blank()
    bounds = Bounds(learning_rate=10.0, max_step=0.05, max_drift=0.12, floor_margin=0.5)
    model = base.copy()
    push = np.zeros_like(model.weights)
    push[0, 0] = 100.0  # feedback that keeps pushing the text bin's bias up
    for _ in range(10):
        moved = model.bounded_step(push, base, bounds)
        assert np.abs(moved.weights - model.weights).max() <= bounds.max_step + 1e-9
        model = moved
    assert np.abs(model.weights - base.weights).max() <= bounds.max_drift + 1e-9
    scores = model.weights @ model.vector({})
    assert scores.max() - scores[model.default_bin] <= bounds.floor_margin + 1e-9

    tight = Bounds(learning_rate=10.0, max_step=5.0, max_drift=5.0, floor_margin=0.5)
    pushed = base.bounded_step(push, base, tight)  # the text bin gains 5: the blend is lifted to within 0.5
    scores = pushed.weights @ pushed.vector({})
    assert np.isclose(scores.max() - scores[pushed.default_bin], 0.5)


def test_ranking_reward_prefers_the_blend_that_ranks_useful_chunks_first():
    results = [{"chunk_id": "a", "scores": {"vector": 0.9, "text": 0.0, "trigram": 0.0}},
               {"chunk_id": "b", "scores": {"vector": 0.5, "text": 0.9, "trigram": 0.0}}]
    assert ranking_reward(results, {"b"}, {"a"}, 0.0) > ranking_reward(results, {"b"}, {"a"}, 1.0)
    assert ranking_reward(results, {"a"}, set(), 1.0) > ranking_reward(results, {"a"}, set(), 0.0)


def _rows(dataset: str, gains: list[tuple[float, float]]) -> dict:
    """One saved dataset of the training table: per query, identifier_share and text's lead over the blend."""
    names = [n for n, _ in RouterModel.blank().bins]
    rows = {}
    for i, (ident, lead) in enumerate(gains):
        ndcg = dict.fromkeys(names, 0.5)
        ndcg["text"] = 0.5 + lead
        rows[f"{dataset}-{i}"] = {"features": {**dict.fromkeys(NAMES, 0.0), "identifier_share": ident},
                                  "ndcg": ndcg, "recall": dict.fromkeys(names, 0.0)}
    return {"dataset": dataset, "rows": rows}


def test_switch_cost_keeps_the_blend_unless_another_bin_leads_clearly():
    from edgeindex.evaluation import router_training as train

    # identifier-heavy queries: text leads the blend by 0.3; the rest: text leads by 0.02 (noise-sized)
    data = [_rows("a", [(0.9, 0.3)] * 50 + [(0.0, 0.02)] * 50)]
    names = [n for n, _ in RouterModel.blank().bins]
    free = train.fit(data, switch_cost=0.0, features=NAMES, decision="bin")
    prior = train.fit(data, switch_cost=0.1, features=NAMES, decision="bin")
    small = {**dict.fromkeys(NAMES, 0.0), "identifier_share": 0.0}
    big = {**small, "identifier_share": 0.9}
    assert names[free.decide(small)] == "text"          # without the prior the small lead wins
    assert names[prior.decide(small)] == "hybrid-0.8"   # with it the blend is kept ...
    assert names[prior.decide(big)] == "text"           # ... but a clear lead still switches
    assert prior.meta["switch_cost"] == 0.1


def test_fit_on_a_feature_subset_uses_only_those_features():
    from edgeindex.evaluation import router_training as train

    data = [_rows("a", [(0.9, 0.3)] * 50 + [(0.0, -0.3)] * 50)]
    model = train.fit(data, features=("identifier_share", "length"), decision="bin")
    assert model.features == ["identifier_share", "length"] and model.weights.shape[1] == 3
    names = [n for n, _ in model.bins]
    assert names[model.decide({"identifier_share": 0.9})] == "text"
    assert names[model.decide({"identifier_share": 0.0})] != "text"
    assert RouterModel.from_json(model.to_json()).features == ["identifier_share", "length"]


def _pgvector_binary(values) -> bytes:
    """A vector as pgvector's vector_send writes it: int16 dimension, int16 unused, big-endian float4s."""
    v = np.asarray(values, dtype=np.float32)
    return np.array([len(v), 0], dtype=">i2").tobytes() + v.astype(">f4").tobytes()


def test_language_features_follow_the_languages_the_embedding_model_declares():
    english_only = frozenset({"en"})
    probe = Evidence.from_lexical({}, [0.5, 0.4, 0.3], [0, 0, 0], 40, languages=["de", "de", "en"])
    german = features("wie viele punkte gab die verteidigung der panthers ab?", None, None, probe,
                      languages=english_only)
    assert german["query_language_unknown"] > 0.8
    assert german["scope_language_unknown"] == round(2 / 3, 4)
    english = features("how many points did the defence give up?", None, None,
                       Evidence.from_lexical({}, [0.5], [0], 40, languages=["en"]), languages=english_only)
    assert english["query_language_unknown"] == 0 and english["scope_language_unknown"] == 0
    # a chunk stored without a language was indexed as the default language (English)
    unlabelled = Evidence.from_lexical({}, [0.5], [0], 40, languages=[None])
    assert features("x", None, None, unlabelled, languages=english_only)["scope_language_unknown"] == 0
    # Chinese was in no English-only training set, and is still unknown to the model
    chinese = features("什么是中国最大的城市？", None, None,
                       Evidence.from_lexical({}, [0.5], [0], 40, languages=["zh"]), languages=english_only)
    assert chinese["query_language_unknown"] > 0.8 and chinese["scope_language_unknown"] == 1
    # a multilingual model (declared "*", or nothing declared) knows every language
    for known in (frozenset({"*"}), None):
        anything = features("wie viele punkte gab die verteidigung der panthers ab?", None, None, probe,
                            languages=known)
        assert anything["query_language_unknown"] == 0 and anything["scope_language_unknown"] == 0


def test_probe_cosines_compare_the_query_vector_with_the_best_bm25_chunks():
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    vectors = [_pgvector_binary([1, 0, 0]), _pgvector_binary([0.6, 0.8, 0]), _pgvector_binary([0, 1, 0]),
               _pgvector_binary([1, 0])]  # another dimension: left out
    evidence = Evidence.from_lexical({}, [0.5, 0.4, 0.3], [0, 0, 0], 40, vectors=vectors)
    f = features("q", None, None, evidence, embedding=query)
    assert f["probe_cosine"] == 1.0 and f["probe_spread"] == 1.0
    flat = Evidence.from_lexical({}, [0.5, 0.4], [0, 0], 40,
                                 vectors=[_pgvector_binary([0.6, 0.8, 0]), _pgvector_binary([0.6, 0, 0.8])])
    f = features("q", None, None, flat, embedding=query)
    assert f["probe_cosine"] == 0.6 and f["probe_spread"] == 0
    # no embedding or no probe: nothing measured
    assert features("q", None, None, evidence)["probe_cosine"] == 0
    assert features("q", None, None, Evidence(), embedding=query)["probe_spread"] == 0


def test_unknown_token_share_counts_pieces_the_vocabulary_lacks():
    class Tokens:
        def __init__(self, tokens):
            self.tokens = tokens

    class Tokenizer:
        def encode(self, text, add_special_tokens=False):
            return Tokens(["[UNK]" if not ch.isascii() else ch for ch in text if not ch.isspace()])

    f = features("ab ᱚᱛ", Tokenizer(), None, Evidence())
    assert f["unk_share"] == 0.5
    assert features("ab cd", Tokenizer(), None, Evidence())["unk_share"] == 0


def test_a_bin_fit_on_the_language_features_routes_an_unseen_language_to_the_text_leaning_bin():
    """The language features: trained on one unknown language (German-like rows, where the
    text-leaning blend wins) and English rows (the fixed blend wins), it sends a query in a
    language it never saw (only the language features say so) to the text-leaning bin."""
    from edgeindex.evaluation import router_training as train

    names = [n for n, _ in RouterModel.blank().bins]

    def rows(name, unknown, winner, n=60):
        out = {}
        for i in range(n):
            ndcg = dict.fromkeys(names, 0.5)
            ndcg[winner] = 0.9
            feats = {**dict.fromkeys(NAMES, 0.0), "query_language_unknown": unknown, "scope_language_unknown": unknown,
                     "length": (i % 7) / 7}
            out[f"{name}{i}"] = {"features": feats, "ndcg": ndcg, "recall": dict.fromkeys(names, 0.0)}
        return {"dataset": name, "rows": out}

    model = train.fit([rows("de", 0.95, "hybrid-0.2"), rows("en", 0.0, "hybrid-0.8")], decision="bin", l2=1e-3)
    assert set(model.features) == {"query_language_unknown", "scope_language_unknown"}
    unseen = {**dict.fromkeys(NAMES, 0.0), "query_language_unknown": 0.8, "scope_language_unknown": 1.0,
              "length": 0.9}
    assert names[model.decide(unseen)] == "hybrid-0.2"
    assert names[model.decide(dict.fromkeys(NAMES, 0.0))] == "hybrid-0.8"


def test_bins_option_and_rows_without_a_bin_are_named():
    import pytest
    from edgeindex.errors import ValidationError
    from edgeindex.evaluation import router_training as train
    from edgeindex.routing.cli import _bins

    assert _bins("0, 0.2,0.8,1") == (("text", 0.0), ("hybrid-0.2", 0.2), ("hybrid-0.8", 0.8), ("vector", 1.0))
    for bad in ("0.5", "0,1.5", "a,b"):
        with pytest.raises(ValidationError) as error:
            _bins(bad)
        assert error.value.field == "bins"
    old = {"dataset": "old", "bins": [{"name": n, "alpha": a} for n, a in
                                      (("text", 0), ("hybrid-0.3", 0.3), ("hybrid-0.8", 0.8), ("vector", 1))],
           "rows": {}}
    with pytest.raises(ValidationError, match="no hybrid-0.2"):
        train.fit([old], decision="bin")


def _curve_rows(name, n, feature, peak_of, model=""):
    """Rows whose reward curve over alpha 0, 0.1, ..., 1 peaks at ``peak_of(feature value)``."""
    from edgeindex.routing.model import bin_name

    grid = [i / 10 for i in range(11)]
    rows = {}
    for i in range(n):
        value = i / (n - 1)
        peak = peak_of(value)
        ndcg = {bin_name(a): round(1.0 - abs(a - peak), 4) for a in grid}
        feats = {**dict.fromkeys(NAMES, 0.0), feature: value}
        rows[f"{name}{i}"] = {"features": feats, "ndcg": ndcg, "recall": dict.fromkeys(ndcg, 0.0)}
    return {"dataset": name, "model": model, "bins": [{"name": bin_name(a), "alpha": a} for a in grid], "rows": rows}


def test_continuous_alpha_follows_each_querys_best_blend():
    """Each query's reward peaks at its own alpha (0.1 for an identifier-heavy query, 0.9 for prose,
    in between as the share grows): the fitted alpha tracks the peak, not one blend for all."""
    from edgeindex.evaluation import router_training as train

    data = _curve_rows("ids", 41, "identifier_share", lambda v: 0.9 - 0.8 * v)
    model = train.fit([data], features=("identifier_share",), l2=1e-4, decision="alpha")
    assert model.decision == "alpha"
    ids = {**dict.fromkeys(NAMES, 0.0), "identifier_share": 1.0}
    prose = dict.fromkeys(NAMES, 0.0)
    half = {**prose, "identifier_share": 0.5}
    assert model.alpha(ids) < 0.2 and model.alpha(prose) > 0.8
    assert 0.35 < model.alpha(half) < 0.65
    scored = train.score(model, data)
    assert scored["auto"]["ndcg@10"] > max(scored[n]["ndcg@10"] for n in train.FIXED) + 0.1
    assert scored["regret"] < 0.05 and scored["off_modal"] > 0.5


def test_a_strong_penalty_leaves_the_best_single_blend():
    from edgeindex.evaluation import router_training as train

    data = _curve_rows("flat", 21, "length", lambda v: 0.3 + 0.1 * v)  # every query wants about 0.3-0.4
    model = train.fit([data], features=("length",), l2=100.0, decision="alpha")
    alphas = {round(model.alpha({**dict.fromkeys(NAMES, 0.0), "length": v}), 2) for v in (0.0, 0.5, 1.0)}
    assert len(alphas) == 1 and 0.25 <= alphas.pop() <= 0.45


def test_served_alpha_snaps_to_text_and_vector_near_the_ends():
    from edgeindex.routing.model import served

    assert served(0.03) == ("text", 0.0) and served(0.97) == ("vector", 1.0)
    assert served(0.4321) == ("hybrid-0.43", 0.43)


def test_a_continuous_model_round_trips_through_json():
    from edgeindex.evaluation import router_training as train

    model = train.fit([_curve_rows("ids", 21, "identifier_share", lambda v: 1 - v)],
                      features=("identifier_share",), decision="alpha")
    again = RouterModel.from_json(model.to_json())
    query = {**dict.fromkeys(NAMES, 0.0), "identifier_share": 0.7}
    assert again.decision == "alpha" and again.choose(query) == model.choose(query)


def test_routing_summary_reports_the_mix_the_modal_share_and_the_oracle_regret():
    from edgeindex.evaluation import routing_summary

    served = routing_summary.served({"q1": {"alpha": 0.0}, "q2": {"alpha": 0.81}, "q3": {"alpha": 0.79},
                                     "q4": {"alpha": 1.0}})
    assert served["mix"] == {"text": 1, "hybrid": 2, "vector": 1}
    assert served["alphas"] == {"0": 1, "0.8": 2, "1": 1} and served["off_modal"] == 0.5

    def system(values):
        return {"per_query": {q: {"ndcg": v} for q, v in values.items()}}

    systems = {"edgeindex-text": system({"a": 1.0, "b": 0.0}), "edgeindex-vector": system({"a": 0.0, "b": 0.8}),
               "edgeindex-auto": system({"a": 1.0, "b": 0.4})}
    oracle = routing_summary.oracle(systems)
    assert oracle["oracle"] == 0.9 and oracle["auto"] == 0.7 and oracle["regret"] == round(1 - 0.7 / 0.9, 4)
    assert oracle["best_fixed"] == {"mode": "text", "value": 0.5} and oracle["gain_over_best_fixed"] == 0.2
    assert routing_summary.oracle({"edgeindex-text": systems["edgeindex-text"]}) is None
