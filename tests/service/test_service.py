from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from judge.config import JudgeConfig
from judge.review.queue import QueueOptions, build_queue, queue_items
from judge.review.reviews import current_reviews, record_review
from judge.service import api as api_module
from judge.service.api import BLIND_ITEM
from judge.service.app import create_app
from judge.service.settings import SettingsError, parse_tokens
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM
from tests.review_helpers import RATIONALE_SENTINEL, known_store

ROOT = Path(__file__).resolve().parents[2]
TOKENS = ("alice-token-1:alice,bob-token-22:bob,carol-token-3:carol:adjudicator,"
          "admin-token-9:ops:admin")
ALICE = {"Authorization": "Bearer alice-token-1"}
BOB = {"Authorization": "Bearer bob-token-22"}
CAROL = {"Authorization": "Bearer carol-token-3"}
ADMIN = {"Authorization": "Bearer admin-token-9"}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    store = known_store(tmp_path)
    build_queue(store, options=QueueOptions(seed=2424, sample_rate=0.3, double_fraction=0.0))
    store.close()
    return tmp_path / "known.db"


def make_client(db: Path, **kwargs: Any) -> TestClient:
    app: FastAPI = create_app(db, tokens=TOKENS, judge_config=JudgeConfig(
        model="fake/judge-model", retries=1), guideline_version="g-web-3", **kwargs)
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture
def client(db: Path, fake_llm: FakeLLM) -> Iterator[TestClient]:
    with make_client(db) as c:
        yield c


def login_csrf(client: TestClient) -> str:
    """The login form's CSRF token (its cookie is now in the client)."""
    form = client.get("/login")
    return re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)  # type: ignore[union-attr]


def login(client: TestClient, token: str = "alice-token-1") -> str:
    """Log in through the form; returns the CSRF token of the review page."""
    response = client.post("/login", data={"token": token, "next": "/review",
                                           "csrf": login_csrf(client)})
    assert response.status_code == 200, response.text
    return re.search(r'name="csrf" value="([^"]+)"', response.text).group(1)  # type: ignore[union-attr]


def walk(obj: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k, v
            yield from walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk(v)


# -- auth -------------------------------------------------------------------------------------


def test_nothing_without_a_token_and_roles_are_enforced(client: TestClient) -> None:
    item = "irrelevant"
    for method, url in (("get", "/v1/queue"), ("get", f"/v1/queue/items/{item}"),
                        ("post", "/v1/reviews"), ("post", "/v1/judge"), ("post", "/v1/runs"),
                        ("get", "/v1/gold"), ("post", "/v1/queues"), ("get", "/v1/stats")):
        response = getattr(client, method)(url)
        assert response.status_code == 401, (method, url)
        assert response.headers["www-authenticate"] == "Bearer"
    assert client.get("/v1/queue", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/v1/queue", headers={"Authorization": "Basic abc"}).status_code == 401
    assert client.get("/v1/queue", headers=ALICE).status_code == 200
    forbidden = client.get("/v1/answers/nis-0/verdicts", headers=ALICE)
    assert forbidden.status_code == 403 and "admin" in forbidden.json()["detail"]
    assert client.get("/v1/gold", headers=BOB).status_code == 403
    assert client.get("/v1/gold", headers=CAROL).status_code == 200
    assert client.post("/v1/runs", headers=CAROL, content=b"{}").status_code == 403
    page = client.get("/review", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login?next=%2Freview"
    assert client.get("/v1/health").json() == {"status": "ok"}
    schema = client.get("/openapi.json").json()
    assert {"/v1/judge", "/v1/runs", "/v1/runs/{run_id}", "/v1/answers/{answer_id}/verdicts",
            "/v1/queue", "/v1/reviews", "/v1/gold"} <= set(schema["paths"])


def test_the_login_form_needs_its_csrf_token(client: TestClient) -> None:
    # a login posted from another site (login CSRF) has no token, or not the one of its cookie
    form = {"token": "alice-token-1", "next": "/review"}
    for extra in ({}, {"csrf": "forged-forged"}):
        refused = client.post("/login", data={**form, **extra}, follow_redirects=False)
        assert refused.status_code == 403 and "stale" in refused.text
        assert "judge_session" not in refused.headers.get("set-cookie", "")
    token = login_csrf(client)
    client.cookies.delete("judge_login_csrf")  # the right value without its cookie: refused
    assert client.post("/login", data={**form, "csrf": token}).status_code == 403
    token = login_csrf(client)
    done = client.post("/login", data={**form, "csrf": token}, follow_redirects=False)
    assert done.status_code == 303 and "judge_session=" in done.headers["set-cookie"]
    assert 'name="csrf"' in client.get("/login").text


def test_token_configuration_is_validated() -> None:
    tokens = parse_tokens("abcdefgh1:alice, abcdefgh2:bob:admin  # ops\n")
    assert tokens["abcdefgh1"].annotator == "human:alice" and tokens["abcdefgh2"].role == "admin"
    for bad, message in (("short:alice", "at least"), ("abcdefgh1:al ice", "identity"),
                         ("abcdefgh1:alice:boss", "role 'boss'"), ("abcdefgh1", "token:name")):
        with pytest.raises(SettingsError, match=message):
            parse_tokens(bad)


def test_login_sets_an_httponly_cookie_and_forms_need_csrf(client: TestClient, db: Path) -> None:
    wrong = client.post("/login", data={"token": "nope-nope-nope", "next": "/review",
                                        "csrf": login_csrf(client)})
    assert wrong.status_code == 401 and "not valid" in wrong.text
    response = client.post("/login", data={"token": "alice-token-1", "next": "//evil.example",
                                           "csrf": login_csrf(client)},
                           follow_redirects=False)
    assert response.headers["location"] == "/review"  # no open redirect
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    page = client.get("/review")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    item_id = re.search(r'name="item_id" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    pos = re.search(r'name="pos" value="(\d+)"', page.text).group(1)  # type: ignore[union-attr]
    form = {"item_id": item_id, "pos": pos, "label": "supported", "time_spent_ms": "2500"}
    assert client.post("/review", data=form).status_code == 403  # no CSRF token
    assert client.post("/review", data={**form, "csrf": "forged"}).status_code == 403
    saved = client.post("/review", data={**form, "csrf": csrf}, follow_redirects=False)
    assert saved.status_code == 303 and "pos=" in saved.headers["location"]
    store = Store.open(db)
    (row,) = [r for rows in current_reviews(store).values() for r in rows]
    assert (row["annotator"], row["label"], row["origin"]) == ("human:alice", "supported", "web")
    assert row["guideline_version"] == "g-web-3" and row["time_spent_ms"] == 2500
    store.close()
    invalid = client.post("/review", data={**form, "csrf": csrf, "label": "contradicted"})
    assert invalid.status_code == 422 and "subtype is required" in invalid.text


# -- validation, limits, errors ---------------------------------------------------------------


def test_validation_errors_are_422_with_a_clear_message(client: TestClient) -> None:
    item = client.get("/v1/queue", headers=ALICE).json()["items"][0]["item_id"]
    cases = [
        ({"item_id": item, "label": "bogus"}, "body.label: Input should be"),
        ({"item_id": item, "label": "contradicted"}, "subtype is required"),
        ({"item_id": item, "label": "supported", "subtype": "opinion"}, "takes no subtype"),
        ({"item_id": item, "claim_id": "c", "label": "supported"}, "exactly one of item_id"),
        ({"item_id": item, "label": "supported", "time_spent_ms": -5}, "body.time_spent_ms"),
        ({"item_id": item, "label": "supported", "surprise": 1}, "body.surprise"),
    ]
    for body, message in cases:
        response = client.post("/v1/reviews", headers=ALICE, json=body)
        assert response.status_code == 422, body
        assert message in response.json()["detail"], response.json()
    broken = client.post("/v1/reviews", headers={**ALICE, "content-type": "application/json"},
                         content=b"{not json")
    assert broken.status_code == 422 and "JSON" in broken.json()["detail"]
    missing = client.post("/v1/reviews", headers=ALICE, json={"item_id": "q-x", "label": "supported"})
    assert missing.status_code == 404 and "no queue item" in missing.json()["detail"]
    bad_filter = client.get("/v1/queue?status=finished", headers=ALICE)
    assert bad_filter.status_code == 422 and "query.status" in bad_filter.json()["detail"]
    record = client.post("/v1/judge", headers=ADMIN, json={"answer": "x", "sources": []})
    assert record.status_code == 422 and "body.sources" in record.json()["detail"]


def test_request_size_limit(db: Path, fake_llm: FakeLLM) -> None:
    with make_client(db, max_body_bytes=2000, max_batch_bytes=5000) as client:
        big = {"item_id": "x", "label": "supported", "note": "n" * 3000}
        response = client.post("/v1/reviews", headers=ALICE, json=big)
        assert response.status_code == 413 and "exceeds 2000 bytes" in response.json()["detail"]
        batch = client.post("/v1/runs", headers=ADMIN, content=b"x" * 6000)
        assert batch.status_code == 413

        def chunks() -> Iterator[bytes]:  # no content-length: counted while streaming
            for _ in range(10):
                yield b"y" * 500

        streamed = client.post("/v1/reviews", headers={**ALICE, "content-type":
                                                       "application/json"}, content=chunks())
        assert streamed.status_code == 413


def test_errors_never_show_stack_traces(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(api_module, "dashboard_counts", explode)
    response = client.get("/v1/stats", headers=ALICE)
    assert response.status_code == 500
    body = response.text
    assert "secret internals" not in body and "Traceback" not in body and "File " not in body
    assert response.json()["error_id"]


def test_security_headers_on_pages_and_api(client: TestClient) -> None:
    login(client)
    for response in (client.get("/review"), client.get("/v1/queue", headers=ALICE),
                     client.get("/static/review.js")):
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "default-src 'none'" in csp and response.headers["x-content-type-options"] == "nosniff"
    page = client.get("/review").text
    assert "<script src=\"/static/review.js\"></script>" in page
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)  # no inline script
    assert " style=" not in page and "onclick" not in page


# -- blindness --------------------------------------------------------------------------------


def test_reviewer_views_are_blind_unless_revealed(db: Path, fake_llm: FakeLLM) -> None:
    with make_client(db) as client:
        listing = client.get("/v1/queue", headers=ALICE).json()
        item = listing["items"][0]["item_id"]
        detail = client.get(f"/v1/queue/items/{item}", headers=ALICE)
        for payload in (listing, detail.json()):
            keys = {k for k, _ in walk(payload)}
            assert not keys & {"judge", "label", "subtype", "rationale", "category",
                               "judge_label", "evidence", "stratum", "reasons", "priority",
                               "position", "weight", "stratum_size", "sample_size", "risk"}
            text = json.dumps(payload)
            assert RATIONALE_SENTINEL not in text and "label:" not in text
            assert "judge_flagged" not in text and "passed" not in text
        assert set(listing["items"][0]) == set(BLIND_ITEM)
        ids = [i["item_id"] for i in listing["items"]]
        store = Store.open(db)
        reading = [i["id"] for i in queue_items(store, store.queue_row()["id"])]
        store.close()
        assert ids != reading  # the caller's own shuffle, not the judge's risk order
        assert [i["number"] for i in listing["items"]] == list(range(1, len(ids) + 1))
        refused = client.get("/v1/queue?stratum=flagged", headers=ALICE)
        assert refused.status_code == 403 and "blind" in refused.json()["detail"]
        for who in (ALICE, CAROL):  # blind whatever the role, unless the server reveals
            assert "strata" not in client.get("/v1/stats", headers=who).json()
            assert all("strata" not in q for q in client.get("/v1/queues", headers=who).json())
        login(client)
        html = client.get("/review?pos=1").text
        assert "Item aax is listed" in html  # the item is really on the page
        assert RATIONALE_SENTINEL not in html and 'id="judge-opinion"' not in html
        assert "label:not_in_source" not in html and "misattribution</strong>" not in html
    with make_client(db, reveal_judge=True) as client:
        listing = client.get("/v1/queue", headers=ALICE).json()
        item = listing["items"][0]["item_id"]
        assert listing["items"][0]["priority"] == 1 and listing["items"][0]["stratum"]
        assert client.get("/v1/queue?stratum=flagged", headers=ALICE).status_code == 200
        assert "strata" in client.get("/v1/stats", headers=ALICE).json()
        revealed = client.get(f"/v1/queue/items/{item}", headers=ALICE).json()
        assert revealed["judge"]["label"] == "not_in_source"
        assert revealed["judge"]["subtype"] == "misattribution"
        assert RATIONALE_SENTINEL in revealed["judge"]["rationale"]
        assert listing["items"][0]["category"] == "misattribution"
        login(client)
        html = client.get("/review?pos=1").text
        assert 'id="judge-opinion"' in html and RATIONALE_SENTINEL in html


def test_second_reviewer_does_not_see_the_first_review(client: TestClient, db: Path) -> None:
    # a claim's item (the blind order is shuffled, and some items are whole answers)
    first = next(i for i in client.get("/v1/queue", headers=ALICE).json()["items"]
                 if i["claim_id"])
    item, subject = first["item_id"], first["claim_id"]
    note = "ALICE-PRIVATE-NOTE"
    client.post("/v1/reviews", headers=ALICE, json={"item_id": item, "label": "not_in_source",
                                                    "subtype": "misattribution", "note": note})
    mine = client.get(f"/v1/queue/items/{item}", headers=ALICE).json()
    assert mine["my_review"]["label"] == "not_in_source"
    theirs = client.get(f"/v1/queue/items/{item}", headers=BOB)
    assert theirs.json()["my_review"] is None and note not in theirs.text
    assert client.get(f"/v1/reviews?subject={subject}", headers=BOB).json() == []
    assert len(client.get(f"/v1/reviews?subject={subject}", headers=CAROL).json()) == 1
    login(client, "bob-token-22")
    assert note not in client.get("/review?pos=1").text


def test_html_escapes_answers_and_sources(db: Path, fake_llm: FakeLLM) -> None:
    with make_client(db) as client:
        record = {
            "id": "xss", "answer": "<img src=x onerror=alert(1)> 名單已更新 [S1]。",
            "sources": [{"id": "S1", "title": "<b>bold</b>",
                         "text": "<script>document.title='pwned'</script> 名單已更新。"}],
        }
        assert client.post("/v1/judge", headers=ADMIN, json=record).status_code == 200
        store = Store.open(db)
        run = store.latest_run_id()
        queue = build_queue(store, [run], QueueOptions(sample_rate=1.0, min_sample=1)).queue_id
        store.close()
        login(client)
        html = client.get(f"/review?queue={queue}&pos=1").text
        assert "<script>document.title" not in html and "<img src=x" not in html
        assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;b&gt;bold&lt;/b&gt;" in html


# -- the judge over HTTP ----------------------------------------------------------------------


def test_judge_one_answer_synchronously(client: TestClient) -> None:
    record = {"id": "api-1", "answer": "Renewals close in spring [S1]. Fees double [S1].",
              "sources": [{"id": "S1", "text": "Renewals close in spring."}]}
    response = client.post("/v1/judge", headers=ADMIN, json=record)
    assert response.status_code == 200, response.text
    verdicts = response.json()["verdicts"]
    assert [v["label"] for v in verdicts] == ["supported", "not_in_source"]
    again = client.get("/v1/answers/api-1/verdicts", headers=ADMIN).json()
    assert [v["claim_id"] for v in again["verdicts"]] == [v["claim_id"] for v in verdicts]
    changed = client.post("/v1/judge", headers=ADMIN, json={**record, "answer": "Other [S1]."})
    assert changed.status_code == 409 and "different content" in changed.json()["detail"]
    assert client.get("/v1/answers/nope/verdicts", headers=ADMIN).status_code == 404


def test_batch_submit_and_poll(client: TestClient) -> None:
    lines = [json.dumps({"id": f"b{i}", "answer": "Renewals close in spring [S1].",
                         "sources": [{"id": "S1", "text": "Renewals close in spring."}]})
             for i in range(3)]
    body = "\n".join([lines[0], "{broken", *lines[1:]]).encode()
    assert client.post("/v1/runs", headers=ADMIN, content=b"  \n").status_code == 422
    response = client.post(
        "/v1/runs", headers={**ADMIN, "content-type": "application/x-ndjson"}, content=body)
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    client.app.state.jobs.wait(run_id, timeout=60)  # type: ignore[attr-defined]
    status = client.get(f"/v1/runs/{run_id}", headers=ADMIN).json()
    assert status["status"] == "finished" and status["answers_done"] == 3
    assert status["summary"]["rejected_lines"][0]["line"] == 2
    assert status["summary"]["labels"] == {"supported": 3}
    assert client.get("/v1/runs/run-nope", headers=ADMIN).status_code == 404


def test_review_adjudication_and_gold_over_http(client: TestClient) -> None:
    item = client.get("/v1/queue", headers=ALICE).json()["items"][0]["item_id"]
    a = client.post("/v1/reviews", headers=ALICE, json={"item_id": item, "label": "supported",
                                                        "time_spent_ms": 900})
    assert a.status_code == 201 and a.json()["review"]["annotator"] == "human:alice"
    assert a.json()["review"]["guideline_version"] == "g-web-3"
    b = client.post("/v1/reviews", headers=BOB, json={"item_id": item, "label": "not_in_source",
                                                      "subtype": "misattribution"})
    assert b.json()["state"] == "needs_adjudication"
    assert client.post("/v1/adjudications", headers=ALICE, json={
        "item_id": item, "label": "supported", "reason": "mine"}).status_code == 403
    decided = client.post("/v1/adjudications", headers=CAROL, json={
        "item_id": item, "label": "not_in_source", "subtype": "misattribution",
        "reason": "S9 does not exist"})
    assert decided.status_code == 201 and decided.json()["state"] == "adjudicated"
    gold = client.get("/v1/gold", headers=CAROL)
    assert gold.headers["content-type"].startswith("application/x-ndjson")
    (line,) = [json.loads(x) for x in gold.text.splitlines()]
    assert line["annotator"] == "human:carol" and line["adjudication"]["reason"] == "S9 does not exist"
    stats = client.get("/v1/stats", headers=ALICE).json()
    assert stats["labels"]["supported"] == 1 and stats["labels"]["not_in_source"] == 1
    assert {r["annotator"] for r in stats["reviewers"]} == {"human:alice", "human:bob"}


def test_adjudication_page_shows_both_reviews_and_records_the_decision(
    client: TestClient, db: Path
) -> None:
    item = client.get("/v1/queue", headers=ALICE).json()["items"][0]
    client.post("/v1/reviews", headers=ALICE, json={"item_id": item["item_id"],
                                                    "label": "supported", "note": "NOTE-A"})
    client.post("/v1/reviews", headers=BOB, json={"item_id": item["item_id"],
                                                  "label": "not_verifiable", "subtype": "opinion"})
    login(client)  # alice is a reviewer: no adjudication for her
    assert client.get("/adjudicate").status_code == 403
    csrf = login(client, "carol-token-3")
    page = client.get("/adjudicate")
    assert page.status_code == 200 and "NOTE-A" in page.text
    assert "human:alice" in page.text and "human:bob" in page.text
    form = {"csrf": csrf, "queue": item["queue_id"], "item_id": item["item_id"],
            "label": "not_in_source", "subtype": "misattribution", "reason": "S9 is missing"}
    assert client.post("/adjudicate", data={**form, "reason": ""}).status_code == 422
    done = client.post("/adjudicate", data=form, follow_redirects=False)
    assert done.status_code == 303
    store = Store.open(db)
    (row,) = store.db["adjudications"].rows
    assert (row["adjudicator"], row["label"], row["reason"]) == (
        "human:carol", "not_in_source", "S9 is missing")
    assert len(json.loads(row["review_ids"])) == 2
    assert store.db.execute("select count(*) from reviews").fetchone()[0] == 2
    store.close()


def test_queue_building_and_filtering_over_http(client: TestClient, db: Path) -> None:
    built = client.post("/v1/queues", headers=ADMIN, json={"seed": 5, "sample_rate": 0.5,
                                                           "min_sample": 0})
    assert built.status_code == 201, built.text
    queue_id = built.json()["queue_id"]
    assert built.json()["strata"]["passed"] == {"stratum_size": 64, "sample_size": 32,
                                                "weight": 2.0}
    assert client.post("/v1/queues", headers=ALICE, json={}).status_code == 403
    bad = client.post("/v1/queues", headers=ADMIN, json={"priority": ["urgent"]})
    assert bad.status_code == 422 and "unknown priority" in bad.json()["detail"]
    assert built.json()["order"] == "risk"
    by_category = client.post("/v1/queues", headers=ADMIN, json={"order": "priority"})
    assert by_category.status_code == 201 and by_category.json()["order"] == "priority"
    assert client.post("/v1/queues", headers=ADMIN, json={"order": "fifo"}).status_code == 422
    url = f"/v1/queue?queue_id={queue_id}&stratum=passed&limit=5"
    assert client.get(url, headers=ALICE).status_code == 403  # blind: the stratum is the label
    with make_client(db, reveal_judge=True) as revealed:
        body = revealed.get(url, headers=ALICE).json()
    assert body["total"] == 32 and len(body["items"]) == 5
    assert {i["weight"] for i in body["items"]} == {2.0}
    first = body["items"][0]["item_id"]
    mine = client.get(f"/v1/queue?queue_id={queue_id}&mine=true", headers=ALICE).json()["total"]
    client.post("/v1/reviews", headers=ALICE, json={"item_id": first, "label": "supported"})
    after = client.get(f"/v1/queue?queue_id={queue_id}&mine=true", headers=ALICE).json()
    assert after["total"] == mine - 1 and after["states"]["done"] == 1
    assert client.get("/v1/queue?queue_id=q-nope", headers=ALICE).status_code == 404


# -- concurrency --------------------------------------------------------------------------------


def test_cli_batch_and_web_reviews_write_at_the_same_time(
    client: TestClient, db: Path, tmp_path: Path
) -> None:
    records = [{"id": f"conc-{i}", "sources": [{"id": "S1", "text": f"Gate {i} opens early."}],
                "answer": f"Gate {i} opens early [S1]. Gate {i} closes late [S1]."}
               for i in range(40)]
    path = write_jsonl(tmp_path / "batch.jsonl", records)
    env = {**os.environ, "FAKE_LATENCY": "0.01", "PYTHONPATH": str(ROOT)}
    batch = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_cli", "run", str(path), "--db", str(db),
         "--model", "fake/judge-model", "--concurrency", "4", "--json"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    store = Store.open(db)
    items = queue_items(store, store.db.execute("select id from queues").fetchone()[0])
    store.close()
    statuses: list[int] = []
    direct_errors: list[BaseException] = []

    def direct_writer() -> None:  # a second writer in this process, its own connection
        own = Store.open(db)
        try:
            for item in items:
                record_review(own, item["subject"], "dave", "supported")
        except BaseException as exc:  # noqa: BLE001 - reported below
            direct_errors.append(exc)
        finally:
            own.close()

    thread = threading.Thread(target=direct_writer)
    thread.start()
    deadline = time.time() + 120
    rounds = 0
    while (batch.poll() is None or rounds == 0) and time.time() < deadline:
        for n, item in enumerate(items):
            token = ALICE if (n + rounds) % 2 else BOB
            response = client.post("/v1/reviews", headers=token, json={
                "item_id": item["id"], "label": "not_in_source", "subtype": "partial_support",
                "note": f"round {rounds}"})
            statuses.append(response.status_code)
        rounds += 1
    out, err = batch.communicate(timeout=120)
    thread.join(60)
    assert batch.returncode == 0, err
    assert "database is locked" not in err and not direct_errors
    assert set(statuses) == {201} and rounds >= 1
    assert json.loads(out)["answers"] == 40
    store = Store.open(db)
    assert store.db.execute("select count(*) from reviews").fetchone()[0] == len(statuses) + len(items)
    assert store.db.execute(
        "select count(*) from verdicts where answer_id like 'conc-%'").fetchone()[0] == 80
    store.close()


def test_queue_items_have_their_own_path_and_the_old_ones_still_answer(
    client: TestClient
) -> None:
    """``/v1/queues`` lists queues; a queue's items are ``/v1/queues/{id}/items`` and one item
    ``/v1/items/{id}``. The older ``/v1/queue`` paths answer the same, marked deprecated."""
    old = client.get("/v1/queue", headers=ALICE).json()
    latest = client.get("/v1/queues/latest/items", headers=ALICE).json()
    by_id = client.get(f"/v1/queues/{old['queue_id']}/items", headers=ALICE).json()
    assert latest == old == by_id and old["items"]
    assert client.get("/v1/queues/no-such-queue/items", headers=ALICE).status_code == 404
    # the same filters and page on both paths
    for query in ("limit=1", "offset=1&limit=2", "mine=true", "status=pending"):
        page = client.get(f"/v1/queues/latest/items?{query}", headers=ALICE)
        assert page.status_code == 200, (query, page.text)
        assert page.json() == client.get(f"/v1/queue?{query}", headers=ALICE).json()
    assert len(client.get("/v1/queues/latest/items?limit=1", headers=ALICE).json()["items"]) == 1
    for query in ("stratum=flagged", "limit=0", "offset=-1", "status=nope"):
        assert client.get(f"/v1/queues/latest/items?{query}", headers=ALICE).status_code \
            == client.get(f"/v1/queue?{query}", headers=ALICE).status_code != 200, query
    item = old["items"][0]["item_id"]
    assert client.get(f"/v1/items/{item}", headers=ALICE).json() == \
        client.get(f"/v1/queue/items/{item}", headers=ALICE).json()
    assert client.get("/v1/queues/latest/items").status_code == 401
    paths = client.get("/openapi.json").json()["paths"]
    assert paths["/v1/queue"]["get"]["deprecated"] is True
    assert not paths["/v1/queues/{queue_id}/items"]["get"].get("deprecated")


def test_the_api_reference_page_works_offline(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "/v1/queues/{queue_id}/items" in html and "/v1/reviews" in html
    assert "(deprecated)" in html and "Submit a review" in html
    assert "cdn" not in html.lower() and "http://" not in html and "https://" not in html
    assert "<script" not in html.replace('<script src="/static/review.js">', "")
