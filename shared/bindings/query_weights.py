"""Search queries on 8-bit weights: the packed query graph with its MatMuls' weights in 8 bits.

A single short query is not compute-bound on this model: its MatMuls stream ~42 MB of fp32 weights,
more than a 2-core VM's L3 holds, on every run. ONNX Runtime's weight-only quantizer
(``MatMulNBitsQuantizer``: 8 bits, blocks of 32 along the input dimension, symmetric) stores them in a
quarter of that, and at accuracy level 4 the MatMuls run in int8 arithmetic with each row's activations
quantized per block of 32: ~0.72x the CPU of the fp32 packed graph for one query, query vectors within cosine ~0.9995 of fp32, nDCG@10 and
recall@10 of exact vector search unchanged on four datasets in three languages.

A query's vector must not depend on what it is batched with. These MatMuls compute a row with
arithmetic that depends on its index modulo 4 (a row at index 5 gets a vector ~1e-3 away from the same
row at index 4; the same at 8): so every query in a packed run starts at a multiple of ALIGN
(``packed_query.starts``; gap rows between queries attend to themselves only and are never pooled), and
a query batched with anything gets the vector it gets alone.

The graph is made from the packed graph once per machine (~2 s), beside it, keyed like it. Every load
checks both properties on the probe texts: each probe packed among the others, at every offset, against
its own run (BATCH_DIFFERENCE), and against the fp32 graph (MIN_COSINE). A graph that fails either is
refused, logged, and search queries stay on fp32.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BindingError
from . import packed_query
from .onnx_query import PROBES, derived_graph

log = logging.getLogger(__name__)

BITS, BLOCK, ACCURACY_LEVEL = 8, 32, 4
VARIANT = f"{packed_query.VARIANT}-{BITS}bit-b{BLOCK}-acc{ACCURACY_LEVEL}"
ALIGN = 4                 # rows: a query's rows start at a multiple of it (see the module docstring)
BATCH_DIFFERENCE = 1e-6   # per component: a probe alone against the same probe packed with others
MIN_COSINE = 0.999        # a probe's vector against the fp32 graph's (measured: ~0.9995 at worst)


def _make(source: Path, scratch: Path) -> None:
    """The packed graph of the fused export ``source``, its MatMuls' weights then quantized in place."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    # the quantizer logs every node at INFO through a handler of its own
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    packed_query._pack_graph(source, scratch)
    quantizer = MatMulNBitsQuantizer(onnx.load(str(scratch / "model.onnx")), bits=BITS, block_size=BLOCK,
                                     is_symmetric=True, accuracy_level=ACCURACY_LEVEL)
    quantizer.process()
    quantizer.model.save_model_to_file(str(scratch / "model.onnx"), use_external_data_format=False)


def batch_difference(queries: packed_query.PackedQueries, texts: list[str]) -> float:
    """The largest difference between a text's vector alone and in packed runs with the others: each
    text once first, once after each other text (offsets that are not multiples of 4 unless aligned)."""
    alone = np.concatenate([queries.encode([text]) for text in texts])
    worst = 0.0
    for shift in range(len(texts)):
        order = texts[shift:] + texts[:shift]
        together = queries.encode(order)
        index = [(i + shift) % len(texts) for i in range(len(texts))]
        worst = max(worst, float(np.abs(together - alone[index]).max()))
    return worst


def load(reference: Any) -> packed_query.PackedQueries:
    """The 8-bit packed graph for the fused export ``reference`` (an OnnxQueryEncoder whose ``packed``
    fp32 graph is loaded), made first if needed.

    Raises BindingError when it cannot be made, when a probe's vector moves with its batch-mates by more
    than BATCH_DIFFERENCE, or when it is further than MIN_COSINE from the fp32 graph's."""
    if reference.packed is None:
        raise BindingError("8-bit query weights need the packed query graph, which did not load")
    target = derived_graph(reference, VARIANT, "8-bit query weights", _make)
    queries = packed_query.PackedQueries(target / "model.onnx", reference._tokenize, align=ALIGN)
    texts = list(PROBES)
    moved = batch_difference(queries, texts)
    if not moved <= BATCH_DIFFERENCE:
        raise BindingError(f"a query's vector on the 8-bit graph at {target} moves by {moved:.1e} with its "
                           f"batch-mates (allowed {BATCH_DIFFERENCE:.0e})")
    cosine = float(np.min(np.sum(queries.encode(texts) * reference.packed.encode(texts), axis=1)))
    if not cosine >= MIN_COSINE:
        raise BindingError(f"the 8-bit query graph at {target} is at cosine {cosine:.5f} of fp32 (at least "
                           f"{MIN_COSINE} needed); delete the folder to make it again")
    log.info("search queries on 8-bit weights (%s; cosine to fp32 >= %.5f, batch-mates move a vector by "
             "%.1e)", target, cosine, moved)
    return queries
