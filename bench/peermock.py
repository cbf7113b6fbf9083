"""Start and drive the peer mock endpoint (a subprocess on 127.0.0.1) from the benchmark."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def tiktoken_cache() -> str | None:
    """tiktoken cannot download cl100k_base offline; litellm ships the same file."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    return str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Mock:
    """``with Mock(peers_dir) as mock``: ``mock.base_url`` is the ``api_base``;
    ``mock.label(name, latency_ms)`` tags the calls that follow, ``mock.stats(name)`` reads
    their counters (calls, cl100k prompt / completion tokens, busy time)."""

    def __init__(self, peers: Path, log: Path) -> None:
        self.port = free_port()
        #: every request whole, one JSON line each (read by bench/cache_share.py)
        self.log = log
        env = dict(os.environ)
        cache = tiktoken_cache()
        if cache and "TIKTOKEN_CACHE_DIR" not in env:
            env["TIKTOKEN_CACHE_DIR"] = cache
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "mock_cj.py"), "--peers", str(peers),
             "--port", str(self.port), "--log", str(log)],
            cwd=str(peers), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                self._get("/_health")
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    raise RuntimeError(f"mock did not start: {err[-2000:]}") from None
                time.sleep(0.2)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as r:
            return json.loads(r.read())

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def label(self, name: str, latency_ms: float = 0.0) -> None:
        self._post("/_control", {"label": name, "latency_ms": latency_ms})

    def stats(self, name: str) -> dict[str, float]:
        return dict(self._get("/_stats?" + urllib.parse.urlencode({"label": name})))

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def __enter__(self) -> Mock:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
