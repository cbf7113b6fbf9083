"""The token throttle of the real service (``judge serve`` in a subprocess, over HTTP): it
cannot be dodged by rotating ``X-Forwarded-For``, cannot be turned on another address with
that header, trusts the header only from the proxies the operator lists, and once a source is
throttled answers every token from it alike (the right one too), slowing no other source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from judge.store import Store
from tests.service.test_browser import TOKEN, judge_serve

RIGHT = {"Authorization": f"Bearer {TOKEN}"}


def wrong(n: int, prefix: str = "zz") -> dict[str, str]:
    return {"Authorization": f"Bearer {prefix}-wrong-guess-{n:04d}"}


def client(base: str, local: str = "127.0.0.1") -> httpx.Client:
    """A client whose connections come from ``local`` (127.0.0.2 is another machine here)."""
    return httpx.Client(base_url=base, timeout=30,
                        transport=httpx.HTTPTransport(local_address=local))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    Store.open(tmp_path / "j.db").close()
    return tmp_path / "j.db"


@pytest.fixture
def served(db: Path) -> Iterator[str]:
    with judge_serve(db) as base:
        yield base


def test_rotating_forwarded_headers_do_not_dodge_the_throttle(served: str) -> None:
    with client(served) as http:
        codes = [http.get("/v1/queues", headers={**wrong(n), "X-Forwarded-For": f"10.9.{n}.1"}
                          ).status_code for n in range(30)]
    assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}


def test_a_forwarded_header_cannot_lock_out_another_address(served: str) -> None:
    with client(served) as attacker:
        for n in range(15):  # names 127.0.0.2 as the client it forwards for
            attacker.get("/v1/queues", headers={**wrong(n), "X-Forwarded-For": "127.0.0.2"})
    with client(served, "127.0.0.2") as victim:
        assert victim.get("/v1/queues", headers=wrong(99)).status_code == 401  # not 429
        assert victim.get("/v1/queues", headers=RIGHT).status_code == 200


def test_a_throttled_source_learns_nothing_from_any_token_api_and_login(served: str) -> None:
    near = TOKEN[:4]  # a guesser who knows how the token begins
    with client(served) as shared:
        codes = [shared.get("/v1/queues", headers=wrong(n, near)).status_code
                 for n in range(10)]
        assert codes == [401] * 10
        # throttled: a guess sharing the token's first characters, any other guess and the
        # right token itself get the same answer (no token is checked)
        answers = [shared.get("/v1/queues", headers=h)
                   for h in (wrong(50, near), wrong(51), RIGHT)]
        assert {r.status_code for r in answers} == {429}
        assert len({r.json()["detail"] for r in answers}) == 1
        form = shared.get("/login")
        csrf = shared.cookies.get("judge_login_csrf")
        assert form.status_code == 200 and csrf
        login = shared.post("/login", data={"token": TOKEN, "csrf": csrf, "next": "/review"})
        assert login.status_code == 429, login.text[-500:]
    with client(served, "127.0.0.2") as other:  # another source is not slowed down
        assert other.get("/v1/queues", headers=RIGHT).status_code == 200


def test_forwarded_headers_count_only_from_a_listed_proxy(db: Path) -> None:
    with judge_serve(db, "--trusted-proxy", "127.0.0.1") as base:
        with client(base) as proxy:
            for n in range(12):  # one client behind the proxy guesses
                proxy.get("/v1/queues", headers={**wrong(n), "X-Forwarded-For": "10.0.0.7"})
            limited = proxy.get("/v1/queues",
                                headers={**wrong(40), "X-Forwarded-For": "10.0.0.7"})
            assert limited.status_code == 429
            # another client behind the same proxy is its own source
            assert proxy.get("/v1/queues", headers={**wrong(41), "X-Forwarded-For": "10.0.0.8"}
                             ).status_code == 401
        with client(base, "127.0.0.2") as direct:  # not a listed proxy: its header is ignored
            codes = [direct.get("/v1/queues", headers={**wrong(n), "X-Forwarded-For":
                                                        f"10.1.{n}.1"}).status_code
                     for n in range(11)]
            assert codes[-1] == 429


def test_an_address_that_is_no_proxy_is_a_usage_error(db: Path) -> None:
    import subprocess
    import sys

    from tests.service.test_browser import ROOT
    proc = subprocess.run([sys.executable, "-m", "judge", "serve", "--db", str(db),
                           "--trusted-proxy", "proxy.example"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={"CLAIM_JUDGE_TOKENS": f"{TOKEN}:alice", "PYTHONPATH": str(ROOT),
                               "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert "not an IP address or network" in proc.stdout + proc.stderr
