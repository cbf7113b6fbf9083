"""Blind is blind on the review pages: the order, the numbering and the dashboard carry nothing
of the judge (each reviewer reads the queue in their own shuffled order), and reviewing an
item and reading the pages again tells nothing of its stratum."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.review.queue import queue_items
from judge.store import Store
from tests.fakes import FakeLLM
from tests.service.test_service import db, login, make_client  # noqa: F401  (fixture)

STRATA_WORDS = ("judge_error", "passed", "flagged", "refused", "stratum", "Strata")


@pytest.fixture
def client(db: Path, fake_llm: FakeLLM) -> Iterator[TestClient]:  # noqa: F811
    with make_client(db) as c:
        yield c


def _field(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]+)"', html)
    assert found, name
    return found.group(1)


def _reading_order(client: TestClient, total: int) -> list[str]:
    order = []
    for pos in range(1, total + 1):
        page = client.get("/review", params={"pos": pos})
        assert page.status_code == 200
        assert f'Item <strong id="position">{pos}</strong> of <strong>{total}</strong>' in page.text
        order.append(_field(page.text, "item_id"))
    return order


def _risk(db: Path) -> tuple[list[str], dict[str, str]]:  # noqa: F811
    store = Store.open(db)
    try:
        items = queue_items(store, store.queue_row()["id"])
    finally:
        store.close()
    return [i["id"] for i in items], {i["id"]: i["stratum"] for i in items}


def test_each_reviewer_reads_in_an_order_that_carries_nothing_of_the_judge(
    client: TestClient, db: Path  # noqa: F811
) -> None:
    risk, strata = _risk(db)
    total = len(risk)
    login(client)
    alice = _reading_order(client, total)
    assert sorted(alice) == sorted(risk) and alice != risk
    assert _reading_order(client, total) == alice  # stable across reloads
    # judge-passed items are not the last ones: "the last items" are not the supported ones
    passed = [n for n, item in enumerate(alice) if strata[item] == "passed"]
    assert passed != list(range(total - len(passed), total))
    # the list numbers the items the same way: #N opens the N-th item of this order
    listing = client.get("/review/list").text
    links = re.findall(r'pos=(\d+)">#(\d+)</a>', listing)
    assert links and all(a == b for a, b in links)
    assert sorted(int(n) for n, _ in links) == list(range(1, total + 1))
    client.post("/logout", data={"csrf": _field(client.get("/review?pos=1").text, "csrf")})
    login(client, "bob-token-22")
    bob = _reading_order(client, total)
    assert bob != alice and sorted(bob) == sorted(alice)  # a shuffle per reviewer


def test_a_review_and_a_reload_tell_nothing_of_the_stratum(client: TestClient) -> None:
    csrf = login(client)
    dashboard = client.get("/dashboard").text
    assert not any(word in dashboard for word in STRATA_WORDS)
    first = client.get("/review", params={"pos": 1}).text
    item, queue = _field(first, "item_id"), _field(first, "queue")
    saved = client.post("/review", data={"csrf": csrf, "queue": queue, "pos": "1",
                                         "item_id": item, "label": "supported"})
    assert saved.status_code == 200 and "Saved item 1." in saved.text
    # (a refused answer is reviewed as a whole and its page says why: that is what the item
    # is, shown as its kind in every view, not the judge's opinion of a claim)
    assert not any(word in saved.text for word in STRATA_WORDS if word != "refused")
    for page in (client.get("/dashboard").text, client.get("/review/list").text):
        assert not any(word in page for word in STRATA_WORDS), page[:200]


def test_revealed_pages_keep_the_reading_order_and_the_strata(db: Path,  # noqa: F811
                                                             fake_llm: FakeLLM) -> None:
    risk, _ = _risk(db)
    with make_client(db, reveal_judge=True) as c:
        login(c)
        assert _reading_order(c, len(risk)) == risk
        assert "Strata" in c.get("/dashboard").text
