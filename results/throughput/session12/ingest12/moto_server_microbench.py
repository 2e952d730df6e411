"""CPU per S3 request of the embedded moto, werkzeug's server (moto's ThreadedMotoServer) against cheroot's with
keep-alive (runtime/moto_server.py). One process per variant: the server and a boto3 client in it, as in the
bench process (moto + client). Per request: a PUT of a 400-byte object with its bucket notification to SQS off,
then a GET of it (the ingest worker's read). Prints process CPU ms per request pair and wall.

    python moto_server_microbench.py werkzeug|cheroot [--pairs 400]

The cheroot variant needs runtime/moto_server.py, which is in commit 9acd1d6 (reverted on the branch: not measured
under the lock, and not kept).
"""
import argparse
import logging
import resource
import time

import boto3
from botocore.config import Config

from edgeindex.runtime import moto_speedups
from edgeindex.runtime.dev import free_port

parser = argparse.ArgumentParser()
parser.add_argument("variant", choices=["werkzeug", "cheroot"])
parser.add_argument("--pairs", type=int, default=400)
args = parser.parse_args()

moto_speedups.apply()
logging.getLogger("werkzeug").setLevel(logging.ERROR)
port = free_port()
if args.variant == "werkzeug":
    from moto.server import ThreadedMotoServer
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
else:
    from edgeindex.runtime.moto_server import KeepAliveMotoServer
    server = KeepAliveMotoServer("127.0.0.1", port)
server.start()
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1", aws_access_key_id="x",
                  aws_secret_access_key="x", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
s3.create_bucket(Bucket="bench-bucket")
body = b"passage " * 50


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


for i in range(50):  # warm-up
    s3.put_object(Bucket="bench-bucket", Key=f"w{i}", Body=body)
    s3.get_object(Bucket="bench-bucket", Key=f"w{i}")["Body"].read()
c0, t0 = cpu(), time.perf_counter()
for i in range(args.pairs):
    s3.put_object(Bucket="bench-bucket", Key=f"k{i}", Body=body)
    s3.get_object(Bucket="bench-bucket", Key=f"k{i}")["Body"].read()
c1, t1 = cpu(), time.perf_counter()
print(f"{args.variant}: {1000 * (c1 - c0) / args.pairs:.2f} ms CPU and {1000 * (t1 - t0) / args.pairs:.2f} ms wall "
      f"per PUT + GET ({args.pairs} pairs)")
server.stop()
