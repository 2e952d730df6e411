"""An int8 copy of the fused query encoder for tool selection's request texts.

Tool selection embeds a whole agent request (often 20-60 words), its sentences and its clauses on every
call, and that model time is nearly all of a select's latency. ONNX Runtime's dynamic quantization (int8 weights per output channel, activations quantized per
call) of layers 1-4 of the six, with the first and the last layer kept in fp32 (``mid4``), costs ~0.62x the
CPU per text of the fp32 graph, with a pooled vector within cosine ~0.997 of it (0.993 at worst on
tools-bfcl's requests). Quantizing every layer costs 0.56x but lost requests on the tuning half of
tools-bfcl; ``mid4`` loses none on either half.

Only the query side is quantized: catalogue vectors stay fp32, under the same model id (a query vector
within cosine 0.99 of the fp32 one ranks against them as the fp32 one does, which the gate measured).
Search and index selection keep the fp32 graph: index selection on Spider lost 5 of 555 first choices
with ``mid4``, so it does not take this path.

Dynamic quantization scales a call's activations over the whole input tensor, padding rows included: a
text's vector would depend on what it was batched with. So the encoder made here runs every text in a call
of its own (``OnnxQueryEncoder(solo=True)``): a request always gets the same vectors.

The graph is made from the fused export once per machine (~2 s of CPU), atomically, into the same cache
folder as the export, keyed by the export and ONNX Runtime's version; every load checks its probe vectors
against the fp32 graph's, and a graph that drifted is refused (selection then stays on fp32).
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BindingError
from .onnx_query import PROBES, OnnxQueryEncoder, derived_graph, export_variant

log = logging.getLogger(__name__)

VARIANT = "int8-per-channel-mid4"
# the first and the last transformer layer stay fp32 (their attention and their three dense MatMuls):
# quantizing them moved the vectors most (selectlat14's sweep); node names as the fused export writes them
KEEP_FP32 = re.compile(r"^Attention_(0|5)$|/layer\.(0|5)/")
KEPT_NODES = 8           # what KEEP_FP32 must find in the fused export: 2 attentions + 2 x 3 MatMuls
MIN_COSINE = 0.99        # per probe text, between this graph's pooled vector and the fp32 graph's


def quantize_int8(source: Path, scratch: Path, *, keep_fp32: Sequence[str] = ()) -> None:
    """Write ``scratch/model.onnx``: ``source`` with every Attention and MatMul but ``keep_fp32``'s nodes
    dynamically quantized (int8 weights per output channel)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic writes its shape-inferred copy beside its input: from a copy in this process's own scratch
    # folder, so workers starting together on a fresh machine (search, mcp) never read each other's half-written one
    own = scratch / "source.onnx"
    shutil.copyfile(source, own)
    quantize_dynamic(str(own), str(scratch / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul", "Attention"], nodes_to_exclude=list(keep_fp32),
                     extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT})
    for leftover in scratch.iterdir():
        if leftover.name != "model.onnx":
            leftover.unlink()


def _quantize(source: Path, scratch: Path) -> None:
    import onnx

    kept = [node.name for node in onnx.load(str(source), load_external_data=False).graph.node
            if KEEP_FP32.search(node.name)]
    if len(kept) != KEPT_NODES:  # another exporter's names: the layers to keep cannot be told apart
        raise BindingError(f"expected {KEPT_NODES} nodes of layers 0 and 5 in {source}, found {len(kept)}")
    quantize_int8(source, scratch, keep_fp32=kept)


def probe_cosines(reference: OnnxQueryEncoder, candidate: OnnxQueryEncoder,
                  texts: Sequence[str] = PROBES) -> np.ndarray:
    """Each probe text's cosine between the two encoders' pooled vectors, each text in a call of its own."""
    return np.array([float(reference.encode([text])[0] @ candidate.encode([text])[0]) for text in texts])


def load(model: Any, reference: OnnxQueryEncoder) -> OnnxQueryEncoder:
    """The int8 ``mid4`` encoder for the fused export ``reference`` runs (quantized first if needed), solo.

    Raises BindingError when it cannot be made (a plain, unfused export; quantization failing) or when its
    vectors drifted from ``reference``'s beyond MIN_COSINE; the caller keeps fp32 then."""
    target = derived_graph(reference, VARIANT, "int8", _quantize)
    encoder = OnnxQueryEncoder(model, target / "model.onnx", solo=True)
    encoder.variant = export_variant(target)
    cosines = probe_cosines(reference, encoder)
    if float(cosines.min()) < MIN_COSINE:
        raise BindingError(f"the int8 query encoder at {target} drifted from fp32 (probe cosine "
                           f"{float(cosines.min()):.4f} < {MIN_COSINE}); delete the folder to make it again")
    log.info("tool selection's query encoder: %s at %s (probe cosine to fp32 >= %.4f)", encoder.variant,
             target, float(cosines.min()))
    return encoder

