"""The HTTP API takes back every id it accepts, refuses review bodies with duplicate keys, and
slows down clients that guess tokens."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from judge.service.auth import FailureThrottle, Throttled
from judge.store import Store
from tests.fakes import FakeLLM
from tests.service.test_service import ADMIN, ALICE, make_client

ODD_IDS = ("team/a/b", "a b", "a?b=c&d", "a#frag", "a%2Fb", "ünï/cödé", "a+b", "x.y", "a\\b",
           "..", "a/", "/a")
S1 = {"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."}


def seg(value: str) -> str:
    """An id as one path segment: percent-encoded, dots too (clients drop ``..`` segments)."""
    return quote(value, safe="").replace(".", "%2E")


@pytest.fixture
def client(tmp_path: Path, fake_llm: FakeLLM) -> Iterator[TestClient]:
    Store.open(tmp_path / "j.db").close()
    with make_client(tmp_path / "j.db") as c:
        yield c


@pytest.fixture
def server(client: TestClient) -> Iterator[httpx.Client]:
    """The app behind a real HTTP server (the test client decodes paths twice, so an id
    holding ``%2F`` could not be tested through it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(client.app, host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            yield http
    finally:
        srv.should_exit = True
        thread.join(10)


def test_every_id_the_api_accepts_round_trips_through_every_route(server: httpx.Client) -> None:
    client = server
    for answer_id in ODD_IDS:
        record = {"id": answer_id, "answer": "401 means unauthenticated [S1].", "sources": [S1]}
        judged = client.post("/v1/judge", headers=ADMIN, json=record)
        assert judged.status_code == 200, (answer_id, judged.text)
        assert judged.json()["answer_id"] == answer_id
        back = client.get(f"/v1/answers/{seg(answer_id)}/verdicts", headers=ADMIN)
        assert back.status_code == 200, (answer_id, back.text)
        assert back.json() == judged.json()
    queue = client.post("/v1/queues", headers=ADMIN, json={"all_runs": True, "min_sample": 100})
    assert queue.status_code == 201, queue.text
    queue_id = queue.json()["queue_id"]
    items = client.get(f"/v1/queues/{seg(queue_id)}/items", headers=ALICE).json()
    answers = {i["answer_id"] for i in items["items"]}
    assert answers == set(ODD_IDS)
    for item in items["items"]:
        shown = client.get(f"/v1/items/{seg(item['item_id'])}", headers=ALICE)
        assert shown.status_code == 200 and shown.json()["answer_id"] == item["answer_id"]
    run_id = client.get("/v1/queues", headers=ADMIN).json()[0]["run_ids"][0]
    assert client.get(f"/v1/runs/{seg(run_id)}", headers=ADMIN).status_code == 200
    schema = client.get("/openapi.json").json()
    assert "/v1/answers/{answer_id}/verdicts" in schema["paths"]


def test_review_bodies_with_duplicate_keys_are_refused(client: TestClient) -> None:
    body = '{"claim_id": "c-1", "label": "supported", "label": "contradicted"}'
    response = client.post("/v1/reviews", headers={**ALICE, "content-type": "application/json"},
                           content=body)
    assert response.status_code == 422
    assert "duplicate" in response.json()["detail"] and "label" in response.json()["detail"]
    adjudication = ('{"item_id": "x", "label": "supported", "reason": "a", "reason": "b"}')
    response = client.post("/v1/adjudications", content=adjudication,
                           headers={**ADMIN, "content-type": "application/json"})
    assert response.status_code == 422 and "duplicate" in response.json()["detail"]


def test_wrong_tokens_are_throttled_per_source(client: TestClient) -> None:
    wrong = {"Authorization": "Bearer guess-0000"}
    codes = [client.get("/v1/queues", headers=wrong).status_code for _ in range(12)]
    assert codes[:10] == [401] * 10 and codes[10:] == [429, 429]
    blocked = client.get("/v1/queues", headers={"Authorization": "Bearer other-guess"})
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
    # another client is not slowed down
    other = TestClient(client.app, client=("10.0.0.9", 5000))
    assert other.get("/v1/queues", headers=ALICE).status_code == 200
    # the login form counts the same failures
    page = client.post("/login", data={"token": "guess", "csrf": "x", "next": "/review"})
    assert page.status_code in (403, 429)


def test_a_throttled_source_gets_the_same_answer_whatever_the_token(
    client: TestClient
) -> None:
    """#52: once throttled, a wrong token sharing a real token's first characters, any other
    wrong token and the right token itself get the same status, body and Retry-After (none
    is checked, so none tells anything), on the API and the login form alike."""
    now = [100.0]
    client.app.state.auth.throttle = FailureThrottle(clock=lambda: now[0])
    for n in range(10):
        assert client.get("/v1/queues", headers={"Authorization": f"Bearer g-{n}"}
                          ).status_code == 401
    tokens = ("alic-wrong", "alice-token-1x", "zzzz-wrong", "alice-token-1", "admin-token-9")
    answers = {(r.status_code, r.text, r.headers.get("retry-after"))
               for r in (client.get("/v1/queues", headers={"Authorization": f"Bearer {t}"})
                         for t in tokens)}
    assert len(answers) == 1 and next(iter(answers))[0] == 429, answers
    assert client.get("/login").status_code == 200
    logins = []
    for t in tokens:  # each page sets a fresh form token: the next post sends it back
        csrf = client.cookies.get("judge_login_csrf")
        logins.append(client.post("/login", data={"token": t, "csrf": csrf, "next": "/review"}))
    assert {r.status_code for r in logins} == {429}
    assert len({r.text.split("try again in")[1][:10] for r in logins}) == 1


def test_every_attempt_of_a_throttled_source_is_counted() -> None:
    """The attempts refused while throttled count: a source that keeps trying stays
    throttled after its first failures leave the window (it cannot scan at full speed)."""
    now = [0.0]
    throttle = FailureThrottle(limit=3, window_s=10.0, clock=lambda: now[0])
    for _ in range(3):
        throttle.check("c")
        throttle.failed("c")
    for step in range(1, 40):  # one attempt a second, each refused and counted
        now[0] = float(step)
        with pytest.raises(Throttled):
            throttle.check("c")
    assert throttle.wait("c") == pytest.approx(8.0)  # the last three attempts, 37..39
    now[0] = 49.5  # ten seconds of quiet: the window has passed
    throttle.check("c")


def test_the_throttle_forgets_failures_outside_its_window() -> None:
    now = [0.0]
    throttle = FailureThrottle(limit=3, window_s=10.0, clock=lambda: now[0])
    for _ in range(3):
        assert throttle.wait("c") == 0
        throttle.failed("c")
    assert throttle.wait("c") == pytest.approx(10.0)
    assert throttle.wait("d") == 0
    now[0] = 10.5
    assert throttle.wait("c") == 0


@pytest.mark.parametrize(("body", "reason"), [
    (b'{"id": "a", "answer": "x", "sources": [], "n": 1' + b"0" * 5000 + b"}",
     "integer of more than 4,300 digits"),
    (b'{"id": "a", "answer": "x", "sources": [], "deep": ' + b"[" * 200_000 + b"]" * 200_000
     + b"}", "nests arrays or objects deeper"),
])
def test_a_body_the_parser_cannot_read_is_422_with_the_reason(
    server: httpx.Client, body: bytes, reason: str
) -> None:
    response = server.post("/v1/judge", headers={**ADMIN, "content-type": "application/json"},
                           content=body)
    assert response.status_code == 422, response.text[:500]
    assert reason in response.json()["detail"]


ROLE_ROUTES = (("/v1/judge", "admin"), ("/v1/adjudications", "adjudicator"),
               ("/v1/queues", "admin"), ("/v1/runs", "admin"))
BAD_BODIES = (b"{not json", b'{"unknown": 1}', b'{"a": 1, "a": 2}', b"")


@pytest.mark.parametrize(("path", "role"), ROLE_ROUTES)
def test_a_caller_whose_role_may_not_use_a_route_gets_403_whatever_the_body(
    client: TestClient, path: str, role: str
) -> None:
    """#52: the role is checked before the body is read, so a reviewer learns nothing of the
    body's checks (never 422 first), and without a token the answer stays 401."""
    for body in BAD_BODIES:
        sent = {"content": body, "headers": {"content-type": "application/json"}}
        refused = client.post(path, **{**sent, "headers": {**sent["headers"], **ALICE}})
        assert refused.status_code == 403, (path, body, refused.text)
        assert "needs " + role in refused.json()["detail"]
        assert client.post(path, **sent).status_code == 401
    # the route's own role still gets the body's checks
    checked = client.post(path, content=b'{"unknown": 1}',
                          headers={**ADMIN, "content-type": "application/json"})
    assert checked.status_code in (202, 404, 422), checked.text  # /v1/runs: a job


def test_every_route_that_needs_a_role_says_so_and_refuses_a_reviewer(
    client: TestClient
) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    declared = {(method.upper(), path, op["x-role"]) for path, item in paths.items()
                for method, op in item.items() if isinstance(op, dict) and "x-role" in op}
    assert {(m, p) for m, p, _ in declared} >= {("POST", "/v1/judge"), ("GET", "/v1/gold"),
                                                ("POST", "/v1/adjudications")}
    for method, path, _ in declared:
        concrete = path.replace("{run_id}", "r").replace("{answer_id}", "a").replace(
            "{queue_id}", "latest")
        answer = client.request(method, concrete + "?limit=nope&offset=-1", headers=ALICE)
        assert answer.status_code == 403, (method, path, answer.text)
