"""A review service a team shares: sessions in the store (a restart keeps people logged in),
items given to one reviewer at a time with a lease (two unless the design asks for a double
review), ``[review] reviewers_per_item`` and agreement per label on the dashboard."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.config import JudgeConfig
from judge.config.review import ReviewSettings
from judge.review.assignment import assign_next, take
from judge.review.blind import visible_items
from judge.review.queue import QueueOptions, build_queue, queue_items
from judge.review.reviews import current_reviews, record_review
from judge.service.sessions import Session, StoredSessions, session_key
from judge.service.settings import Identity
from judge.service.stats import dashboard_counts, label_agreement
from judge.store import Store
from judge.store.migrations import MIGRATIONS
from tests.fakes import FakeLLM
from tests.review_helpers import known_store
from tests.service.test_service import ADMIN, TOKENS, login, make_client
from tests.support.old_stores import store_upto


def _field(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]+)"', html)
    assert found, name
    return found.group(1)


def _queue_db(tmp_path: Path, double_fraction: float = 0.0) -> Path:
    store = known_store(tmp_path)
    build_queue(store, options=QueueOptions(seed=7, sample_rate=0.05, min_sample=2,
                                            double_fraction=double_fraction))
    store.close()
    return tmp_path / "known.db"


def _given(client: TestClient) -> tuple[str, str, str]:
    """Open /review (the next item for me): the item id, its position for me, the form's
    queue; ("", "", "") when nothing is given."""
    page = client.get("/review")
    if 'name="item_id"' not in page.text:
        return "", "", ""
    return _field(page.text, "item_id"), _field(page.text, "pos"), _field(page.text, "queue")


def test_two_reviewers_at_once_never_get_the_same_single_review_item(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    db = _queue_db(tmp_path)
    with make_client(db) as alice, make_client(db) as bob:
        csrf = {"alice": login(alice), "bob": login(bob, "bob-token-22")}
        clients = {"alice": alice, "bob": bob}
        seen: list[tuple[str, str]] = []
        while True:
            held = {name: _given(c) for name, c in clients.items()}
            ids = [h[0] for h in held.values() if h[0]]
            if not ids:
                break
            assert len(ids) == len(set(ids)), held  # never the same item at once
            for name, (item, pos, queue) in held.items():
                if not item:
                    continue
                saved = clients[name].post("/review", data={
                    "csrf": csrf[name], "queue": queue, "pos": pos, "item_id": item,
                    "label": "supported"}, follow_redirects=False)
                assert saved.status_code == 303, saved.text
                seen.append((name, item))
    store = Store.open(db)
    try:
        items = queue_items(store, store.queue_row()["id"])  # type: ignore[index]
        assert all(i["state"] == "done" and len(i["reviewers"]) == 1 for i in items)
        assert {who for who, _ in seen} == {"alice", "bob"}  # both worked
        assert len(seen) == len(items) and len({i for _, i in seen}) == len(items)
        assert store.count("select count(*) from item_leases") == 0  # released on saving
    finally:
        store.close()


def test_an_item_someone_else_is_reviewing_is_not_saved_twice(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    db = _queue_db(tmp_path)
    with make_client(db) as alice, make_client(db) as bob:
        login(alice)
        bob_csrf = login(bob, "bob-token-22")
        item, _, queue = _given(alice)
        store = Store.open(db)
        try:
            shown = visible_items(store, queue, queue_items(store, queue), reveal=False,
                                  viewer="human:bob")
        finally:
            store.close()
        bob_pos = next(i["number"] for i in shown if i["id"] == item)
        page = bob.get("/review", params={"queue": queue, "pos": bob_pos})
        assert 'id="taken"' in page.text
        refused = bob.post("/review", data={"csrf": bob_csrf, "queue": queue,
                                            "pos": str(bob_pos), "item_id": item,
                                            "label": "supported"})
        assert refused.status_code == 409 and "someone else is reviewing" in refused.text
        assert bob.get("/review").text.count(item) == 0  # bob is given another item
        # nor through the API while alice holds it
        api = bob.post("/v1/reviews", headers={"Authorization": "Bearer bob-token-22"},
                       json={"item_id": item, "label": "supported"})
        assert api.status_code == 409 and "someone else is reviewing" in api.json()["detail"]
    store = Store.open(db)
    try:
        assert current_reviews(store) == {}
    finally:
        store.close()


def test_a_double_review_item_goes_to_two_people_at_once_and_no_third(tmp_path: Path) -> None:
    db = _queue_db(tmp_path, double_fraction=1.0)
    store = Store.open(db)
    try:
        queue = store.queue_row()["id"]  # type: ignore[index]
        item = queue_items(store, queue)[0]
        assert item["reviews_required"] == 2
        assert take(store, queue, item, "human:alice") and take(store, queue, item, "human:bob")
        assert not take(store, queue, item, "human:carol")
        assert take(store, queue, item, "human:alice")  # renewing one's own lease
        record_review(store, item["subject"], "human:alice", "supported")
        store.release_item_lease(item["id"], "human:alice")
        again = queue_items(store, queue)[0]
        assert not take(store, queue, again, "human:carol")  # one review left, bob has it
        store.release_item_lease(item["id"], "human:bob")
        assert take(store, queue, again, "human:carol")
    finally:
        store.close()


def test_a_lease_left_alone_expires_and_the_item_goes_to_someone_else(tmp_path: Path) -> None:
    db = _queue_db(tmp_path)
    store = Store.open(db)
    try:
        queue = store.queue_row()["id"]  # type: ignore[index]
        items = visible_items(store, queue, queue_items(store, queue), reveal=True)
        first = assign_next(store, queue, items, "human:alice")
        assert first is not None
        assert assign_next(store, queue, items[:1], "human:bob") is None  # alice holds it
        store.db.execute("update item_leases set expires_at = ?", [time.time() - 1])
        assert assign_next(store, queue, items[:1], "human:bob") == first
    finally:
        store.close()


def test_a_restart_keeps_reviewers_logged_in_and_the_store_holds_no_cookie(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    db = _queue_db(tmp_path)
    with make_client(db) as before:
        csrf = login(before)
        cookie = before.cookies.get("judge_session")
    assert cookie
    with make_client(db) as after:  # a new process on the same store
        after.cookies.set("judge_session", cookie)
        page = after.get("/review")
        assert page.status_code == 200 and "/login" not in str(page.url)
        item, pos, queue = _field(page.text, "item_id"), _field(page.text, "pos"), \
            _field(page.text, "queue")
        saved = after.post("/review", data={"csrf": csrf, "queue": queue, "pos": pos,
                                            "item_id": item, "label": "supported"},
                           follow_redirects=False)
        assert saved.status_code == 303  # the form token outlives the restart too
        after.post("/logout", data={"csrf": csrf})
    with make_client(db) as later:
        later.cookies.set("judge_session", cookie)
        assert "/login" in str(later.get("/review").url)  # logged out stays logged out
    raw = sqlite3.connect(db).execute("select * from web_sessions").fetchall()
    assert not any(cookie in str(row) for row in raw)


def test_a_session_ends_when_it_expires_or_its_token_goes(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store.open(db).close()
    alice = Identity("alice")
    book = StoredSessions(db, [alice])
    book.put("sid-live", Session(alice, "c1", time.time() + 60))
    book.put("sid-old", Session(alice, "c2", time.time() - 1))
    live = book.get("sid-live")
    assert live is not None and live.identity == alice and live.csrf == "c1"
    assert book.get("sid-old") is None
    assert StoredSessions(db, [Identity("alice", "admin")]).get("sid-live") is None  # role
    assert book.get("sid-live") is None  # and the row is gone
    store = Store.open(db)
    try:
        assert store.web_session(session_key("sid-old")) is None
    finally:
        store.close()


def test_reviewers_per_item_two_asks_a_second_review_of_every_item(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    assert ReviewSettings(reviewers_per_item=2).double_fraction(0.1) == 1.0
    assert ReviewSettings().double_fraction(0.1) == 0.1
    with pytest.raises(ValueError):
        ReviewSettings(reviewers_per_item=3)
    known_store(tmp_path).close()
    config = JudgeConfig(model="fake/judge-model", retries=1,
                         review=ReviewSettings(reviewers_per_item=2))
    from judge.service.app import create_app

    app = create_app(tmp_path / "known.db", tokens=TOKENS, judge_config=config)
    with TestClient(app) as client:
        built = client.post("/v1/queues", headers=ADMIN, json={"double_fraction": 0.1})
        assert built.status_code == 201, built.text
        assert built.json()["double_review"] == built.json()["items"] > 0


def test_the_dashboard_shows_agreement_per_label(tmp_path: Path, fake_llm: FakeLLM) -> None:
    db = _queue_db(tmp_path, double_fraction=1.0)
    store = Store.open(db)
    try:
        queue = store.queue_row()["id"]  # type: ignore[index]
        items = [i for i in queue_items(store, queue) if i["kind"] == "claim"][:3]
        texts = store.queue_item_texts(queue)
        said = [("supported", "supported"), ("supported", "not_in_source"),
                ("not_in_source", "not_in_source")]
        for item, (a, b) in zip(items, said, strict=True):
            record_review(store, item["subject"], "human:alice", a, subtype=None if a ==
                          "supported" else "unsupported_addition")
            record_review(store, item["subject"], "human:bob", b, subtype=None if b ==
                          "supported" else "unsupported_addition")
        counts = dashboard_counts(store, queue)
        judge_pairs = [(a, texts[i["id"]]["label"]) for i, (a, _) in zip(items, said,
                                                                           strict=True)]
    finally:
        store.close()
    people = {row["label"]: row for row in counts["human_agreement"]}
    assert (people["supported"]["both"], people["supported"]["either"]) == (1, 2)
    assert (people["not_in_source"]["both"], people["not_in_source"]["either"]) == (1, 2)
    assert people["contradicted"]["agreement"] is None
    low, high = people["supported"]["low"], people["supported"]["high"]
    assert 0 < low < 0.5 < high < 1
    assert counts["judge_agreement"] == label_agreement(judge_pairs)
    with make_client(db) as blind:
        login(blind)
        page = blind.get("/dashboard").text
        assert 'id="agreement-by-label"' in page and "1/2" in page
        assert "hidden in blind mode" in page
    with make_client(db, reveal_judge=True) as revealed:
        login(revealed)
        assert "hidden in blind mode (it would tell what the judge made of an item just " \
            "reviewed); see <code>judge calibrate</code>.</p>\n</section>" not in \
            revealed.get("/dashboard").text.split('id="agreement"')[1]


def test_a_store_from_before_sessions_upgrades_in_order(tmp_path: Path) -> None:
    """A store whose last migration is m013 opens with the sessions and item leases tables
    added, recorded after every earlier migration, and its queue still reads."""
    path = tmp_path / "m013.db"
    with store_upto(path, "m013_operating_point_score") as db:
        db["queues"].insert({"id": "q-old", "created_at": "2026-11-01T00:00:00",
                             "run_ids": "[]", "judge_versions": "[]", "seed": 0,
                             "strata": "{}", "items": 0, "priority": "[]"})
    names = [n for n, _ in MIGRATIONS]
    upto = names.index("m013_operating_point_score")
    store = Store.open(path)
    try:
        applied = [r["name"] for r in store.db.query(
            "select name from _migrations order by applied_at, rowid")]
        assert applied[:upto + 1] == names[:upto + 1]
        assert "m015_web_sessions_and_item_leases" in applied[upto + 1:]
        assert store.db["web_sessions"].exists() and store.db["item_leases"].exists()
        assert queue_items(store, "q-old") == []
        assert store.item_lease_holders("q-old") == {}
    finally:
        store.close()
