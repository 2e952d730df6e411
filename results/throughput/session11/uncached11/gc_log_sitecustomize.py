# gc timing log for the tail lab: only when GC_LOG_DIR is set
import os
import sys
if os.environ.get("GC_LOG_DIR") and "worker" in sys.argv and "search" in sys.argv:
    import gc, json, time
    _f = open(os.path.join(os.environ["GC_LOG_DIR"], f"gc-{os.getpid()}.jsonl"), "a", buffering=1)
    _start = {}
    def _cb(phase, info):
        if phase == "start":
            _start["t"] = time.time()
        else:
            t = _start.get("t")
            if t is not None and (info["generation"] >= 1):
                _f.write(json.dumps({"gen": info["generation"], "start": t, "end": time.time(), "collected": info["collected"]}) + "\n")
    gc.callbacks.append(_cb)
