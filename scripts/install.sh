#!/usr/bin/env bash
# Create .venv and install edgeindex with everything the stack and the tests need.
# Idempotent: a second run only checks what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# torch first and pinned: this machine keeps a CPU build of 2.13.0 on disk, and an
# unpinned torch would pull several GB of CUDA packages instead.
.venv/bin/pip install --quiet --disable-pip-version-check "torch==2.13.0"
# The Python SDK is its own distribution (no torch, no server code); the evaluation, the CLI's client
# commands and the tests use it, so it goes in first and satisfies the [eval] extra's requirement.
.venv/bin/pip install --quiet --disable-pip-version-check -e clients/python
.venv/bin/pip install --quiet --disable-pip-version-check -e ".[test,eval,docs]"
# The admin page's browser tests drive Debian's chromium through its chromium-driver (selenium); both
# come from the system's packages, never downloaded by a test. Skipped when already there.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "install.sh: chromium and chromium-driver are missing; the admin page's browser tests need them" \
             "(as root: apt-get install chromium chromium-driver)" >&2
    fi
fi
# redis-server: the shared KV engine ([services.kv] backend = "redis"); its contract tests run it.
if ! command -v redis-server >/dev/null 2>&1 && ! command -v valkey-server >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq redis-server >/dev/null
    else
        echo "install.sh: redis-server is missing; the KV contract tests need it (as root: apt-get install redis-server)" >&2
    fi
fi
# wrk, a C HTTP load generator: scripts/load_search.py measures exact-cache hits with it (a Python
# client on the same cores would be the bottleneck). Optional: nothing else needs it.
if ! command -v wrk >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq wrk >/dev/null 2>&1 || echo "install.sh: wrk not installed (apt-get failed); load_search.py skips its wrk phase"
fi
