"""Weight-only 8-bit MatMulNBits copy of the packed query graph (a lead, not kept).

  .venv/bin/python results/throughput/session20/nbits/nbits.py BITS BLOCK ACCURACY_LEVEL

Reads the packed graph from the default cache folder (its name holds this machine's export key) and writes
/tmp/s20/packed_{BITS}b{BLOCK}a{ACCURACY_LEVEL}.onnx."""
import json, sys, time, resource, random
from pathlib import Path
import numpy as np, onnx
ROOT = Path("/work/main"); sys.path.insert(0, str(ROOT))
from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
packed_path = "/root/.cache/edgeindex/onnx/all-MiniLM-L6-v2-6e45c473aa28d5f9-packed-block-diagonal-ort1.32.0/model.onnx"
bits = int(sys.argv[1]); block = int(sys.argv[2]); acc = int(sys.argv[3])
m = onnx.load(packed_path)
qz = MatMulNBitsQuantizer(m, bits=bits, block_size=block, is_symmetric=True, accuracy_level=acc)
qz.process()
out = f"/tmp/s20/packed_{bits}b{block}a{acc}.onnx"
qz.model.save_model_to_file(out, use_external_data_format=False)
import os; print(out, os.path.getsize(out) >> 20, "MiB", [n.op_type for n in onnx.load(out).graph.node][:12])
