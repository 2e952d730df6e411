"""An int8 copy of a model's fused export for passages: what ingestion and backfills embed with.

A model marked ``int8_passages`` (multilingual-e5-small: twelve layers, twice MiniLM's depth) runs its
passages on ONNX Runtime's dynamic quantization of every attention and dense MatMul (int8 weights per
output channel, activations quantized per call), on this machine's VNNI cores 1.6-1.9x the passages/s of
the fp32 graph. Its vectors sit within cosine 0.995 of fp32's (median 0.997) on MS MARCO, German and
Chinese passages, and dense retrieval with them scores what fp32's does (docs/benchmarks.md).

Queries stay on the fp32 graph under the same model id: the search worker's query batcher pads
concurrent queries into one call, which a dynamically quantized graph cannot do (its activations are
scaled over the whole batch, so a batch-mate would move a text's vector). For the same reason this
encoder runs every passage in a call of its own (``solo``): a chunk's vector never depends on what it
was ingested with.

The graph is made from the fused export once per machine, atomically, beside it (onnx_query.derived_graph);
every load checks its probe vectors against the fp32 graph's, and a graph that drifted is refused
(passages then stay on fp32).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..errors import BindingError
from .onnx_query import OnnxQueryEncoder, derived_graph, export_variant
from .quantized_query import probe_cosines, quantize_int8

log = logging.getLogger(__name__)

VARIANT = "int8-per-channel-all"
MIN_COSINE = 0.99        # per probe passage, between this graph's pooled vector and the fp32 graph's
# passages in the scripts a multilingual model is chosen for
PROBES = ("As a general guideline, the average requirement of protein for women ages 19 to 70 is 46 grams per day.",
          "Der Eiffelturm ist ein 330 Meter hoher Eisenfachwerkturm in Paris, errichtet für die Weltausstellung 1889.",
          "长城是中国古代的军事防御工程，总长度超过两万公里。",
          "تقع مدينة القاهرة على ضفاف نهر النيل، وهي أكبر مدن العالم العربي من حيث عدد السكان.",
          "Москва — столица России и крупнейший по численности населения город страны.")


def load(model: Any, reference: OnnxQueryEncoder, as_passages: Callable[[list[str]], list[str]]
         ) -> OnnxQueryEncoder:
    """The int8 passage encoder for the fused export ``reference`` runs (quantized first if needed), solo;
    ``as_passages`` prepares texts as the model expects passages (its prefix and normalization).

    Raises BindingError when it cannot be made or when its vectors drifted from ``reference``'s beyond
    MIN_COSINE; the caller keeps fp32 then."""
    target = derived_graph(reference, VARIANT, "int8 passages", quantize_int8)
    encoder = OnnxQueryEncoder(model, target / "model.onnx", solo=True)
    encoder.variant = export_variant(target)
    cosines = probe_cosines(reference, encoder, as_passages(list(PROBES)))
    if float(cosines.min()) < MIN_COSINE:
        raise BindingError(f"the int8 passage encoder at {target} drifted from fp32 (probe cosine "
                           f"{float(cosines.min()):.4f} < {MIN_COSINE}); delete the folder to make it again")
    log.info("passages: %s at %s (probe cosine to fp32 >= %.4f)", encoder.variant, target, float(cosines.min()))
    return encoder
