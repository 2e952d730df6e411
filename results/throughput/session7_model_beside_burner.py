"""Model CPU per text on CPU 1 with CPU 0 idle / busy with Python / busy with memory traffic."""
import json, os, sys, time, subprocess, multiprocessing as mp
sys.path.insert(0, "/work/wt-ingest/scripts")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import numpy as np

def burner(kind, stop):
    os.sched_setaffinity(0, {0})
    if kind == "python":
        x = 0
        while not stop.is_set():
            for i in range(100000): x += i
    elif kind == "memory":
        a = np.ones(64 * 1024 * 1024 // 8); b = np.empty_like(a)
        while not stop.is_set():
            np.copyto(b, a)
    elif kind == "cache":
        a = np.ones(1024 * 1024 // 8); b = np.empty_like(a)  # 1 MiB, fits L2
        while not stop.is_set():
            for _ in range(100): np.copyto(b, a)

def main():
    from bench_ingest import load_corpus, CORPUS
    from edgeindex.bindings.ai import local_embedder
    docs = load_corpus(CORPUS, 400)
    texts = [t for _, t in docs]
    m = local_embedder(8); m.set_threads(1)
    os.sched_setaffinity(0, {1})
    m.encode_sync(texts[:64])
    for rnd in range(1):
        for kind in ["idle", "python", "memory", "cache"]:
            stop = mp.Event(); p = None
            if kind != "idle":
                p = mp.Process(target=burner, args=(kind, stop)); p.start(); time.sleep(0.5)
            from edgeindex.bindings.ai import _runqueue_wait
            st0 = [int(x) for x in open("/proc/stat").readline().split()[1:]]
            c, w, q = time.thread_time(), time.perf_counter(), _runqueue_wait()
            for s in range(0, len(texts), 256):
                m.encode_sync(texts[s:s+256])
            c, w, q = time.thread_time() - c, time.perf_counter() - w, _runqueue_wait() - q
            st1 = [int(x) for x in open("/proc/stat").readline().split()[1:]]
            d = [b - a for a, b in zip(st0, st1)]; tot = sum(d[:8])
            if p: stop.set(); p.join()
            print(f"{kind:7s} cpu {1000*c/len(texts):.1f} ms/text wall {1000*w/len(texts):.1f} runq {1000*q/len(texts):.1f} steal {100*d[7]/tot:.0f}% idle {100*d[3]/tot:.0f}% load {os.getloadavg()[0]:.1f}", flush=True)
main()
