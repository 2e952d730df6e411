"""scripts/tune_select.py (the in-process selection harness) with every vector, catalogue and query, from
the dynamically quantized graph (quantize.py), one text per call (dynamic quantization scales activations
per call, so batch-mates would move a text's vector).

    .venv/bin/python results/selection/session9/tune_int8.py INT8.onnx|fp32 --tools ../shared/data/tools-bfcl
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import tune_select  # noqa: E402

which = sys.argv.pop(1)
tune_select.CACHE = Path(f"/tmp/selectp9/tune-{Path(which).stem}.pkl")
Memo = tune_select.MemoEmbedder


class Int8Memo(Memo):
    def __init__(self) -> None:
        super().__init__()
        if which == "fp32":
            return
        import onnxruntime

        from edgeindex.bindings import onnx_query

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(which, options, providers=["CPUExecutionProvider"])
        tok, inner = self.inner._model.tokenizer, self.inner

        def one(text: str) -> np.ndarray:
            batch = tok([text], return_tensors="np", truncation=True, max_length=inner.max_tokens)
            return session.run([onnx_query.OUTPUT], {n: batch[n].astype(np.int64) for n in onnx_query.INPUTS})[0][0]

        inner.encode_sync = lambda texts: np.vstack([one(t) for t in texts])
        inner.encode_query_sync = one


tune_select.MemoEmbedder = Int8Memo
sys.exit(tune_select.main())
