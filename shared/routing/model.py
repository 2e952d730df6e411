"""The router's model: a softmax over strategy bins, linear in the features.

Small and inspectable on purpose: one row of weights per bin (``text`` is alpha 0, ``vector``
alpha 1, ``hybrid-0.2`` a blend), one column per feature plus a bias. It decides in one of two
ways (``decision``):

- ``"alpha"``: a continuous alpha per query, the softmax's mean of the bins' alphas (with the two
  bins text and vector: a logistic function of the features); near 0 or 1 it serves plain text or
  vector. Fitted to maximise the reward at that alpha, read off each training query's reward
  curve (measured at alphas 0, 0.1, ..., 1; linear between).
- ``"bin"``: the row with the highest score. Fitted to maximise the expected reward of the
  choice, sum over queries of ``softmax(W x)[b] * reward[b]``.

Either fit weighs each dataset equally, with L2 on the standardized weights (the bias is free,
so a strong penalty leaves the best single blend of the training data): a few hundred queries
and a dozen features fit in well under a second. ``edgeindex router show`` prints the table.

Online updates (feedback) are bounded: a learning-rate cap on every step, a trust region
around the trained version the updates started from, and a floor that keeps the fixed
blend's bin reachable (on the typical query of the training data it never falls more than
``floor_margin`` further behind the best bin than it was in the trained version).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .features import NAMES

# The bins a model chooses among: text, a text-leaning blend (what a query in a language the
# embedding model does not know wants), the fixed blend, vector. Chosen by leave-one-dataset-out
# among seven alphas (scripts/select_router_settings.py).
DEFAULT_BINS = (("text", 0.0), ("hybrid-0.2", 0.2), ("hybrid-0.8", 0.8), ("vector", 1.0))
BUILTIN_PATH = Path(__file__).with_name("default_model.json")
DEFAULT_ALPHA = 0.8  # the fixed blend (search/defaults.py ALPHA)
SNAP = 0.05          # a continuous alpha this close to 0 or 1 serves plain text or vector


@dataclass(frozen=True)
class Bounds:
    """How far feedback may move a model (deployment settings, see wrangler.toml ROUTER_*)."""

    learning_rate: float = 0.05     # step size of one update
    max_step: float = 0.05          # cap on any weight's change in one update
    max_drift: float = 0.5          # cap on any weight's distance from the trained version
    min_evidence: int = 20          # feedback events before any move
    floor_margin: float = 0.5       # the fixed blend falls at most this much further behind the best bin
                                    # (typical query) than in the trained version


def strategy_of(alpha: float) -> str:
    return "text" if alpha <= 0 else "vector" if alpha >= 1 else "hybrid"


def bin_name(alpha: float) -> str:
    return strategy_of(alpha) if alpha <= 0 or alpha >= 1 else f"hybrid-{alpha:g}"


@dataclass
class RouterModel:
    bins: list[tuple[str, float]]
    features: list[str]
    weights: np.ndarray                 # (bins, 1 + features): bias first
    center: np.ndarray                  # mean feature vector of the training queries (the floor's reference)
    default_bin: int
    meta: dict[str, Any] = field(default_factory=dict)
    decision: str = "bin"               # "bin": the best row's alpha; "alpha": the softmax's mean alpha

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def blank(cls, bins=DEFAULT_BINS, features=NAMES) -> RouterModel:
        """Chooses the fixed blend for every query until trained."""
        bins = [(name, float(alpha)) for name, alpha in bins]
        default = min(range(len(bins)), key=lambda i: abs(bins[i][1] - DEFAULT_ALPHA))
        weights = np.zeros((len(bins), 1 + len(features)))
        weights[default, 0] = 1.0
        return cls(bins, list(features), weights, np.zeros(len(features)), default, {"source": "blank"})

    @classmethod
    def from_json(cls, data: dict) -> RouterModel:
        features = list(data["features"])
        return cls([(b["name"], float(b["alpha"])) for b in data["bins"]], features,
                   np.array(data["weights"], dtype=float),
                   np.array(data.get("center") or [0.0] * len(features), dtype=float),
                   int(data["default_bin"]), dict(data.get("meta") or {}), str(data.get("decision") or "bin"))

    @classmethod
    def builtin(cls) -> RouterModel:
        if BUILTIN_PATH.exists():
            return cls.from_json(json.loads(BUILTIN_PATH.read_text()))
        return cls.blank()

    def to_json(self) -> dict:
        return {"bins": [{"name": n, "alpha": a} for n, a in self.bins], "features": self.features,
                "weights": [[round(float(v), 6) for v in row] for row in self.weights],
                "center": [round(float(v), 6) for v in self.center], "default_bin": self.default_bin,
                "decision": self.decision, "meta": self.meta}

    def copy(self) -> RouterModel:
        return RouterModel.from_json(json.loads(json.dumps(self.to_json())))

    # --- deciding -----------------------------------------------------------------------------

    def vector(self, values: dict[str, float]) -> np.ndarray:
        return np.array([1.0, *(float(values.get(name, 0.0)) for name in self.features)])

    def scores(self, values: dict[str, float]) -> np.ndarray:
        return self.weights @ self.vector(values)

    def decide(self, values: dict[str, float]) -> int:
        # a tie goes to the fixed blend, then to the lower index
        s = self.scores(values)
        best = float(s.max())
        return self.default_bin if s[self.default_bin] >= best else int(np.argmax(s))

    def alpha(self, values: dict[str, float]) -> float:
        """The continuous alpha: the bins' alphas weighed by the softmax of their scores."""
        return float(_softmax(self.scores(values)) @ self.alphas())

    def alphas(self) -> np.ndarray:
        return np.array([a for _, a in self.bins])

    def choose(self, values: dict[str, float]) -> tuple[str, float]:
        """What to serve: (bin name, alpha). A continuous alpha is rounded to 0.01 (the cache key and
        the telemetry see a few hundred values, not a float's noise)."""
        if self.decision == "alpha":
            return served(self.alpha(values))
        return self.bins[self.decide(values)]

    def table(self) -> str:
        """The weights as a table: one row per feature, one column per bin."""
        names = [n for n, _ in self.bins]
        width = max(len(n) for n in ["bias", *self.features])
        lines = [" " * width + "".join(f"{n:>12}" for n in names)]
        for j, feature in enumerate(["bias", *self.features]):
            lines.append(f"{feature:<{width}}" + "".join(f"{self.weights[i, j]:>12.3f}" for i in range(len(names))))
        return "\n".join(lines)

    # --- learning -----------------------------------------------------------------------------

    def fit(self, x: np.ndarray, ndcg: np.ndarray, sample_weight: np.ndarray | None = None, *,
            l2: float = 1e-3) -> RouterModel:
        """Weights that maximise the expected reward (NDCG) of the choice. ``x`` (queries, features),
        ``ndcg`` (queries, bins). L-BFGS on standardized features (so the penalty treats every
        feature alike), folded back into weights over the raw features."""
        f = x.shape[1]
        bins = ndcg.shape[1]
        z, w, mean, std = _standardized(x, sample_weight)
        # a gain relative to the query's mean leaves the optimum alone and steadies the steps
        gain = ndcg - ndcg.mean(axis=1, keepdims=True)

        def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
            weights = flat.reshape(bins, f + 1)
            p = _softmax(z @ weights.T)
            expected = (p * gain).sum(axis=1)
            penalty = l2 * float((weights[:, 1:] ** 2).sum())
            value = -float(w @ expected) + penalty
            grad = -((p * (gain - expected[:, None])) * w[:, None]).T @ z
            grad[:, 1:] += 2 * l2 * weights[:, 1:]
            return value, grad.ravel()

        return self._solve(objective, np.zeros((bins, f + 1)), mean, std)

    def fit_alpha(self, x: np.ndarray, grid: np.ndarray, reward: np.ndarray,
                  sample_weight: np.ndarray | None = None, *, l2: float = 1e-2) -> RouterModel:
        """Weights whose continuous alpha maximises each query's reward. ``reward`` (queries, grid)
        holds each query's reward measured at the alphas ``grid`` (increasing, 0 to 1); between two
        of them it is read linearly. Starts from the best single alpha of the data (the biases
        alone), so the features move a query's alpha only where that pays on the training data."""
        f = x.shape[1]
        bins = len(self.bins)
        alphas = self.alphas()
        z, w, mean, std = _standardized(x, sample_weight)
        slopes = np.diff(reward, axis=1) / np.diff(grid)[None, :]

        def curve(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # the reward at each query's alpha and its slope there
            seg = np.clip(np.searchsorted(grid, a, side="right") - 1, 0, len(grid) - 2)
            rows = np.arange(len(a))
            return reward[rows, seg] + slopes[rows, seg] * (a - grid[seg]), slopes[rows, seg]

        def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
            weights = flat.reshape(bins, f + 1)
            p = _softmax(z @ weights.T)
            a = p @ alphas
            value, slope = curve(a)
            # d alpha / d score_b = p_b (alpha_b - alpha)
            da = p * (alphas[None, :] - a[:, None])
            grad = -((da * (w * slope)[:, None]).T @ z)
            grad[:, 1:] += 2 * l2 * weights[:, 1:]
            return -float(w @ value) + l2 * float((weights[:, 1:] ** 2).sum()), grad.ravel()

        start = np.zeros((bins, f + 1))
        start[:, 0] = _biases_for(alphas, float(grid[int(np.argmax(w @ reward))]))
        self.decision = "alpha"
        return self._solve(objective, start, mean, std)

    def _solve(self, objective, start: np.ndarray, mean: np.ndarray, std: np.ndarray) -> RouterModel:
        """L-BFGS from ``start`` over standardized weights, folded back into weights over the raw
        features; the training queries' mean becomes the floor's reference."""
        from scipy.optimize import minimize

        result = minimize(objective, start.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": 500})
        standardized = result.x.reshape(start.shape)
        self.weights = np.zeros_like(standardized)
        self.weights[:, 1:] = standardized[:, 1:] / std
        self.weights[:, 0] = standardized[:, 0] - (standardized[:, 1:] * (mean / std)).sum(axis=1)
        self.center = mean
        return self

    def expected_gradient(self, values: dict[str, float], reward: np.ndarray) -> np.ndarray:
        """d E[reward] / d weights at one query (the direction feedback moves in)."""
        xb = self.vector(values)
        p = _softmax(self.weights @ xb)
        return np.outer(p * (reward - float(p @ reward)), xb)

    def bounded_step(self, gradient: np.ndarray, base: RouterModel, bounds: Bounds) -> RouterModel:
        """One feedback update: capped step, trust region around ``base``, the fixed blend's floor."""
        step = np.clip(bounds.learning_rate * gradient, -bounds.max_step, bounds.max_step)
        weights = np.clip(self.weights + step, base.weights - bounds.max_drift, base.weights + bounds.max_drift)
        moved = self.copy()
        moved.weights = weights
        shortfall = moved.blend_gap() - (max(base.blend_gap(), 0.0) + bounds.floor_margin)
        if shortfall > 0:
            moved.weights[moved.default_bin, 0] += shortfall
        return moved

    def blend_gap(self) -> float:
        """How far the fixed blend's bin is behind the best bin on the typical training query."""
        scores = self.weights @ self.vector(dict(zip(self.features, self.center, strict=True)))
        return float(scores.max() - scores[self.default_bin])


def served(alpha: float) -> tuple[str, float]:
    """The bin name and alpha a continuous alpha is served as."""
    alpha = 0.0 if alpha <= SNAP else 1.0 if alpha >= 1 - SNAP else round(alpha, 2)
    return bin_name(alpha), alpha


def _standardized(x: np.ndarray, sample_weight: np.ndarray | None):
    """The features standardized with a bias column first (so the penalty treats every feature
    alike), the sample weights summing to 1, and the mean and spread to fold the weights back."""
    n = x.shape[0]
    w = np.full(n, 1.0 / n) if sample_weight is None else sample_weight / sample_weight.sum()
    mean, std = x.mean(axis=0), x.std(axis=0)
    std = np.where(std > 1e-9, std, 1.0)
    return np.hstack([np.ones((n, 1)), (x - mean) / std]), w, mean, std


def _biases_for(alphas: np.ndarray, target: float) -> np.ndarray:
    """Biases whose softmax has mean alpha ``target``: its mass on the two bins around it."""
    target = min(max(target, 0.02), 0.98)
    p = np.full(len(alphas), 1e-4)
    order = np.argsort(alphas)
    above = next((i for i in order if alphas[i] >= target), order[-1])
    below = next((i for i in order[::-1] if alphas[i] <= target), order[0])
    if above == below:
        p[above] = 1.0
    else:
        share = (target - alphas[below]) / (alphas[above] - alphas[below])
        p[above], p[below] = max(share, 1e-4), max(1 - share, 1e-4)
    return np.log(p)


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def ranking_reward(results: list[dict], useful: set[str], not_useful: set[str], alpha: float) -> float:
    """How well the blend ``alpha`` would have ordered the returned results for this feedback:
    the reciprocal rank of useful chunks minus that of not-useful ones, over the component
    scores each result carries (vector min-max, lexical over its max, as the fusion does)."""
    if not results:
        return 0.0
    vectors = [float(r["scores"].get("vector", 0.0)) for r in results]
    lexical = [float(r["scores"].get("text", 0.0)) + float(r["scores"].get("trigram", 0.0)) for r in results]
    lo, hi = min(vectors), max(vectors)
    top = max(lexical) or 1.0
    fused = [alpha * ((v - lo) / (hi - lo) if hi > lo else 1.0) + (1 - alpha) * (l / top)
             for v, l in zip(vectors, lexical, strict=True)]
    order = sorted(range(len(results)), key=lambda i: -fused[i])
    reward = 0.0
    for rank, i in enumerate(order, start=1):
        chunk = results[i]["chunk_id"]
        if chunk in useful:
            reward += 1.0 / math.log2(rank + 1)
        elif chunk in not_useful:
            reward -= 1.0 / math.log2(rank + 1)
    return reward / max(len(useful) + len(not_useful), 1)
