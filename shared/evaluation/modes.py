"""Evaluation modes and sweeps as the command line names them: parsed without importing the runner."""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError

MODES = ("hybrid", "vector", "text", "auto")
BASELINES = ("chroma", "bm25", "model:NAME")
# `model:NAME`: NAME's vectors of the same chunks (backfilled beside the serving ones), dense and fused
# with BM25 by reciprocal rank
MODEL_BASELINE = "model:"


def valid_baseline(name: str) -> bool:
    return name in BASELINES[:2] or (name.startswith(MODEL_BASELINE) and len(name) > len(MODEL_BASELINE))
# the strategy each mode names (shared/routing/): hybrid is the fixed blend (the worker's alpha or
# --alpha), auto the router's per-query choice; "default" names none, so it gets whatever the
# deployment serves a request that names no strategy (ROUTER_DEFAULT), and always runs
MODE_STRATEGY: dict[str, str | None] = {"hybrid": "hybrid", "vector": "vector", "text": "text", "auto": "auto",
                                        "default": None}


# A mode may name query enhancements after its base mode: "text+prf", "hybrid+synonyms+hyde",
# "hybrid+none" (no enhancement, whatever "auto" does on this deployment); see shared/search/enhance/.
ENHANCEMENTS = ("prf", "synonyms", "hyde", "none", "auto")
SWEEPABLE = {"alpha": float, "vector_threshold": float, "text_threshold": float, "fusion": str}


def parse_sweep(spec: str) -> tuple[str, list[Any]]:
    """``alpha=0,0.1,...,1`` (``...`` continues the first step up to the last value) or ``fusion=linear,rrf``."""
    name, sep, values = spec.partition("=")
    name = name.strip()
    if not sep or name not in SWEEPABLE:
        raise ValidationError(f"--sweep: expected NAME=V1,V2,... with NAME one of {sorted(SWEEPABLE)}", field="sweep")
    parts = [p.strip() for p in values.split(",") if p.strip()]
    kind = SWEEPABLE[name]
    if kind is str:
        if not parts:
            raise ValidationError("--sweep: no values", field="sweep")
        return name, parts
    if "..." in parts:
        at = parts.index("...")
        if at < 2 or at != len(parts) - 2:
            raise ValidationError("--sweep: write 'a,b,...,z': two values, '...', then the last", field="sweep")
        first, second, last = float(parts[0]), float(parts[1]), float(parts[-1])
        step = second - first
        if step <= 0 or last < second:
            raise ValidationError("--sweep: the values must increase", field="sweep")
        count = int(round((last - first) / step))
        decimals = max(_decimals(parts[0]), _decimals(parts[1]), _decimals(parts[-1]))
        return name, [round(first + i * step, decimals) for i in range(count + 1)]
    try:
        return name, [float(p) for p in parts]
    except ValueError:
        raise ValidationError(f"--sweep: {name} takes numbers", field="sweep") from None


def _decimals(text: str) -> int:
    return len(text.partition(".")[2])


def split_mode(mode: str) -> tuple[str, str | list[str] | None]:
    """``text+prf`` -> ("text", ["prf"]); ``hybrid+none`` -> ("hybrid", "none"); ``hybrid`` -> ("hybrid", None)."""
    base, *names = mode.split("+")
    if not names:
        return base, None
    if names in (["none"], ["auto"]):
        return base, names[0]
    return base, names


def valid_mode(mode: str) -> bool:
    base, *names = mode.split("+")
    return (base in MODE_STRATEGY and all(n in ENHANCEMENTS for n in names)
            and (len(names) <= 1 or not {"none", "auto"} & set(names)))
