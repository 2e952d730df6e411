"""Printed tables, ``results.json`` and PNG charts of an evaluation run.

``results.json`` layout: ``dataset`` (name, path, counts), ``config`` (k, modes,
alpha, fusion, baselines, repeat, ingestion figures, definitions), ``systems``
(per system and mode: ``metrics`` such as ``ndcg@10``, ``latency_ms`` p50/p95/p99/
mean/n, ``documents``, ``queries``, ``params``, what was ``timing``, and
``per_query`` metrics) and ``sweep`` (``param`` and one point per value) or null.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .metrics import METRICS

LABELS = {"recall": "Recall", "mrr": "MRR", "map": "MAP", "ndcg": "NDCG"}


def dataset_title(results: dict) -> str:
    """Dataset name, plus where the judgements came from when they are not the dataset's own."""
    data = results["dataset"]
    qrels = Path(data.get("qrels") or "")
    if not data.get("qrels") or qrels.parent.name == "qrels":
        return data["name"]
    return f"{data['name']} (judgements: {qrels.parent.name}/{qrels.name})"


def system_label(key: str, system: dict) -> str:
    if system["system"] == "edgeindex":
        params = system.get("params") or {}
        detail = ", ".join(f"{k}={v}" for k, v in params.items())
        if system["mode"] == "hybrid" and "alpha" not in params:
            detail = ", ".join(filter(None, ["alpha=default", detail]))
        return f"edgeindex {system['mode']}" + (f" ({detail})" if detail else "")
    model = (system.get("params") or {}).get("model", "")
    return {"chroma": "Chroma (vector, same vectors)", "bm25": "BM25 (bm25s)",
            "model": f"{model} (vector, its own vectors of the chunks)",
            "model+bm25": f"{model} + BM25 (reciprocal rank fusion)"}.get(system["system"], key)


def _fmt_ms(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.1f}"


def format_table(results: dict) -> str:
    k = results["config"]["k"]
    metric_names = [f"{name}@{k}" for name in METRICS]
    header = ["system"] + [f"{LABELS[name]}@{k}" for name in METRICS] + ["p50 ms", "p95 ms", "p99 ms"]
    rows = []
    for key, system in results["systems"].items():
        latency = system["latency_ms"]
        rows.append([system_label(key, system)] + [f"{system['metrics'][m]:.4f}" for m in metric_names]
                    + [_fmt_ms(latency["p50"]), _fmt_ms(latency["p95"]), _fmt_ms(latency["p99"])])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    data = results["dataset"]
    title = (f"{dataset_title(results)}: {data['documents']} documents, {data['judged_queries']} judged queries, k={k}, "
             f"latency over {results['config']['repeat']} pass(es)")
    return "\n".join([title, line(header), line(["-" * w for w in widths]), *map(line, rows)])


def format_server_timings(results: dict) -> str:
    """What the search worker says it spent (``took_ms`` and its parts), per mode: client time minus this
    is HTTP, JSON and waiting for a CPU."""
    lines = []
    for key, system in results["systems"].items():
        parts = system.get("server_latency_ms") or {}
        if parts:
            shown = ", ".join(f"{name} p50 {_fmt_ms(s['p50'])} / p99 {_fmt_ms(s['p99'])}" for name, s in parts.items())
            lines.append(f"  {system_label(key, system)}: {shown}")
    return "search worker's own timings (ms):\n" + "\n".join(lines) if lines else ""


def format_routing(results: dict) -> str:
    """What ``auto`` served (strategy mix, alphas, share off the modal choice) and its regret against
    the per-query oracle over our fixed modes."""
    lines = []
    for key, system in results["systems"].items():
        if served := system.get("routing"):
            alphas = ", ".join(f"{a}: {n}" for a, n in served["alphas"].items())
            lines.append(f"  {system_label(key, system)}: {served['mix']}; alpha {alphas}; "
                         f"{served['off_modal']:.0%} off the modal choice")
    if oracle := results.get("routing"):
        lines.append(f"  per-query oracle over {', '.join(oracle['over'])}: {oracle['metric']} {oracle['oracle']:.4f}; "
                     f"auto {oracle['auto']:.4f} (regret {oracle['regret']:.1%}); best fixed "
                     f"{oracle['best_fixed']['mode']} {oracle['best_fixed']['value']:.4f} "
                     f"(auto {oracle['gain_over_best_fixed']:+.4f})")
    return "routing:\n" + "\n".join(lines) if lines else ""


def unanswered_queries(results: dict) -> list[str]:
    """Judged queries on which no system ranks a single relevant document in its top k.

    A few are normal; many usually mean the judgements do not match the queries
    (wrong ids, shifted rows) rather than that every system failed.
    """
    systems = list(results["systems"].values())
    if not systems:
        return []
    qids = systems[0]["per_query"]
    return [qid for qid in qids if all(s["per_query"][qid]["recall"] == 0 for s in systems)]


def format_sweep(results: dict) -> str:
    sweep = results.get("sweep")
    if not sweep:
        return ""
    k = results["config"]["k"]
    metric_names = [f"{name}@{k}" for name in METRICS]
    header = [sweep["param"]] + [f"{LABELS[n]}@{k}" for n in METRICS] + ["p50 ms", "p99 ms"]
    rows = [[str(p["value"])] + [f"{p['metrics'][m]:.4f}" for m in metric_names]
            + [_fmt_ms(p["latency_ms"]["p50"]), _fmt_ms(p["latency_ms"]["p99"])] for p in sweep["points"]]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [header, ["-" * w for w in widths], *rows])


def write(results: dict, out: Path) -> list[Path]:
    """results.json plus charts; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    path.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    written = [path, plot_metrics(results, out / "metrics.png"), plot_latency_cdf(results, out / "latency_cdf.png")]
    if results.get("sweep"):
        written.append(plot_sweep(results, out / f"sweep_{results['sweep']['param']}.png"))
    return written


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never a display
    import matplotlib.pyplot as plt

    return plt


def plot_metrics(results: dict, path: Path) -> Path:
    """Grouped bars: one group per metric, one bar per system, value printed on each bar."""
    plt = _pyplot()
    k = results["config"]["k"]
    systems = list(results["systems"].items())
    fig, ax = plt.subplots(figsize=(11, 5.5), dpi=110)
    width = 0.8 / max(len(systems), 1)
    for index, (key, system) in enumerate(systems):
        values = [system["metrics"][f"{name}@{k}"] for name in METRICS]
        xs = [m + (index - (len(systems) - 1) / 2) * width for m in range(len(METRICS))]
        bars = ax.bar(xs, values, width * 0.95, label=system_label(key, system))
        ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7, padding=2)
    ax.set_xticks(range(len(METRICS)), [f"{LABELS[n]}@{k}" for n in METRICS])
    ax.set_ylim(0, min(1.05, max([s["metrics"][f"{n}@{k}"] for _, s in systems for n in METRICS] + [0.1]) * 1.2))
    ax.set_ylabel("score (mean over judged queries)")
    data = results["dataset"]
    ax.set_title(f"{dataset_title(results)}: {data['documents']} documents, {data['judged_queries']} judged queries")
    # below the axes, so no bar hides behind it
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=min(len(systems), 3), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_latency_cdf(results: dict, path: Path) -> Path:
    """Empirical CDF of per-query latency per system, with p50/p99 in the legend."""
    import numpy as np

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    for key, system in results["systems"].items():
        samples = np.sort(np.asarray(system.get("latency_samples_ms") or [], dtype=float))
        if samples.size == 0:
            continue
        fraction = np.arange(1, samples.size + 1) / samples.size
        latency = system["latency_ms"]
        ax.step(samples, fraction, where="post",
                label=f"{system_label(key, system)}  p50 {latency['p50']:.1f} / p99 {latency['p99']:.1f} ms")
    ax.set_xscale("log")
    from matplotlib.ticker import ScalarFormatter

    ax.xaxis.set_major_formatter(ScalarFormatter())  # 1, 10, 100 rather than 10^0, 10^1, 10^2
    ax.set_xlabel("search latency per query, ms (log scale)")
    ax.set_ylabel("fraction of queries")
    ax.set_ylim(0, 1.01)
    ax.set_title(f"{dataset_title(results)}: latency CDF ({results['config']['repeat']} pass(es) per query)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_sweep(results: dict, path: Path) -> Path:
    """The hybrid route against the swept parameter: one panel per metric pair (own y range, so small
    differences show), the baselines as horizontal lines, and a latency panel."""
    plt = _pyplot()
    sweep = results["sweep"]
    k = results["config"]["k"]
    points = sweep["points"]
    values = [p["value"] for p in points]
    numeric = all(isinstance(v, int | float) for v in values)
    xs = values if numeric else list(range(len(values)))
    baselines = [(key, s) for key, s in results["systems"].items() if s["system"] != "edgeindex"]
    styles = {"chroma": "--", "bm25": ":"}
    fig, axes = plt.subplots(1, 3, figsize=(15, 5), dpi=110)
    for ax, pair in zip(axes, (("ndcg", "mrr"), ("recall", "map"))):
        for name in pair:
            line, = ax.plot(xs, [p["metrics"][f"{name}@{k}"] for p in points], marker="o",
                            label=f"hybrid {LABELS[name]}@{k}")
            for key, system in baselines:
                ax.axhline(system["metrics"][f"{name}@{k}"], color=line.get_color(), alpha=0.6, linewidth=1.2,
                           linestyle=styles.get(system["system"], "-."),
                           label=f"{system_label(key, system)} {LABELS[name]}@{k}")
        ax.set_title(" and ".join(f"{LABELS[n]}@{k}" for n in pair))
        ax.set_ylabel("score")
    latency_ax = axes[2]
    for stat in ("p50", "p99"):
        latency_ax.plot(xs, [p["latency_ms"][stat] for p in points], marker="o", label=f"hybrid {stat}")
    latency_ax.set_title("search latency, ms (one pass)")
    latency_ax.set_ylabel("ms")
    for ax in axes:
        ax.set_xlabel(sweep["param"])
        if not numeric:
            ax.set_xticks(xs, [str(v) for v in values])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{dataset_title(results)}: hybrid search vs {sweep['param']} "
                 f"({results['dataset']['judged_queries']} judged queries)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
