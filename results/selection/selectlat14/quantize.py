"""A dynamically quantized (int8 weights, activations quantized per call) copy of the fused query encoder.

    .venv/bin/python results/selection/session9/quantize.py OUT.onnx [--ops MatMul,Attention,EmbedLayerNormalization] [--per-channel] [--exclude REGEX]

(session9/quantize.py plus --exclude: nodes whose name matches REGEX stay fp32)
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic

from edgeindex.bindings.ai import local_embedder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--per-channel", action="store_true")
    parser.add_argument("--exclude", default="")
    args = parser.parse_args()
    embedder = local_embedder()
    embedder.prepare_queries()
    src = embedder._queries.path
    print("source", src, embedder._queries.variant)
    excluded = [n.name for n in onnx.load(str(src)).graph.node if args.exclude and re.search(args.exclude, n.name)]
    print("excluded", excluded)
    quantize_dynamic(str(src), str(args.out), weight_type=QuantType.QInt8, per_channel=args.per_channel,
                     op_types_to_quantize=args.ops.split(",") if args.ops else None,
                     nodes_to_exclude=excluded,
                     extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT})
    print("written", args.out, args.out.stat().st_size)


if __name__ == "__main__":
    main()
