"""``edgeindex --help`` reads as help for users and imports nothing heavy to print it."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "onnxruntime", "psycopg", "numpy", "pydantic", "httpx", "aiohttp", "boto3", "rich")


def test_help_reads_as_help_for_users(capsys):
    from edgeindex.cli import build_parser

    text = build_parser().format_help()
    assert "``" not in text and ".py" not in text
    assert "multi-tenant hybrid search for AI agents" in text
    assert "edgeindex dev" in text
    for command in ("dev", "upload", "search", "status", "eval"):
        assert command in text


def test_eval_help_has_no_docstring_markup():
    from edgeindex.cli import build_parser

    parser = build_parser()
    eval_parser = parser._subparsers._group_actions[0].choices["eval"]  # type: ignore[union-attr]
    text = eval_parser.format_help()
    assert "``" not in text and "BEIR" in text


def test_help_imports_no_heavy_module():
    probe = ("import contextlib, io, json, sys\n"
             "from edgeindex.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
             "    main(['--help'])\n"
             f"print(json.dumps({{'help': out.getvalue(), 'loaded': [m for m in {HEAVY!r} if m in sys.modules]}}))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    answer = json.loads(done.stdout)
    assert "usage: edgeindex" in answer["help"]
    assert answer["loaded"] == []
