"""``judge serve`` binds its port itself: a port in use is a usage error (exit 64) said in one
line with the fix, before "serving on"; a free port serves (the real CLI in a subprocess)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from judge.store import Store
from tests.service.test_browser import judge_serve

ROOT = Path(__file__).resolve().parents[2]
CODE = "import sys; from judge.cli import main; sys.argv = ['judge', *sys.argv[1:]]; main()"


def test_a_port_in_use_is_a_usage_error_with_the_fix(tmp_path: Path) -> None:
    db = tmp_path / "judge.db"
    Store.open(db).close()
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        env = {**os.environ, "CLAIM_JUDGE_TOKENS": "t0ken-abcdefgh:alice",
               "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
        done = subprocess.run([sys.executable, "-c", CODE, "serve", "--db", str(db), "--port",
                               str(port)], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        holder.close()
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 64, out
    assert f"port {port} on 127.0.0.1 is in use" in out and "--port" in out
    assert "serving" not in out and "Traceback" not in out and "Errno" not in out


def test_a_free_port_serves(tmp_path: Path) -> None:
    db = tmp_path / "judge.db"
    Store.open(db).close()
    with judge_serve(db) as base:
        assert httpx.get(f"{base}/v1/health", timeout=5).status_code == 200
