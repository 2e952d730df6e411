"""Diagnosis only (hits12): in the search worker, record GC collections and loop callbacks longer
than a threshold (wall and the thread's own CPU), and per second the main thread's schedstat (time
on a core, time waiting for one) and callback counts, into $HITS12_DIAG_DIR/diag-<pid>.jsonl."""
import os, sys
_dir = os.environ.get("HITS12_DIAG_DIR")
if _dir and "worker" in sys.argv and "search" in sys.argv:
    import gc, json, threading, time
    _events = []
    _start = {}
    _tt = time.thread_time
    def _gc_cb(phase, info, _pc=time.perf_counter):
        if phase == "start":
            _start["t"] = _pc(); _start["c"] = _tt()
        else:
            _events.append(("gc", time.time(), info["generation"], round((_pc() - _start["t"]) * 1e6),
                            round((_tt() - _start["c"]) * 1e6), info["collected"]))
    gc.callbacks.append(_gc_cb)
    import asyncio.events as _ev
    _orig_run = _ev.Handle._run
    _thr = float(os.environ.get("HITS12_SLOW_US", "500")) / 1e6
    _count = [0]
    def _run(self, _pc=time.perf_counter, _orig=_orig_run):
        t0 = _pc(); c0 = _tt()
        _orig(self)
        d = _pc() - t0
        _count[0] += 1
        if d > _thr:
            cb = self._callback
            name = getattr(cb, "__qualname__", None) or repr(cb)
            try:
                task = getattr(cb, "__self__", None)
                if task is not None and hasattr(task, "get_coro"):
                    name = task.get_coro().__qualname__
            except Exception:
                pass
            _events.append(("slow", time.time(), name, round(d * 1e6), round((_tt() - c0) * 1e6)))
    _ev.Handle._run = _run
    _main_tid = threading.get_native_id()
    def _dump():
        path = os.path.join(_dir, f"diag-{os.getpid()}.jsonl")
        last = None
        while True:
            time.sleep(0.5)
            try:
                with open(f"/proc/self/task/{_main_tid}/schedstat") as f:
                    run_ns, wait_ns, _ = map(int, f.read().split())
            except Exception:
                run_ns = wait_ns = 0
            n = _count[0]
            if last is not None:
                _events.append(("sched", time.time(), (run_ns - last[0]) // 1000, (wait_ns - last[1]) // 1000, n - last[2]))
            last = (run_ns, wait_ns, n)
            batch = _events[:]
            del _events[:len(batch)]
            if batch:
                with open(path, "a") as f:
                    for e in batch:
                        f.write(json.dumps(e) + "\n")
    threading.Thread(target=_dump, daemon=True).start()
