"""The list of a queue's items (filters, search, grouped by answer; blind unless revealed),
the "saved" notice, the guideline beside the form, and JSON-path highlighting."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.service.views import json_path_span, json_spans
from tests.fakes import FakeLLM
from tests.review_helpers import RATIONALE_SENTINEL
from tests.service.test_service import db, login, make_client  # noqa: F401  (fixture)


@pytest.fixture
def client(db: Path, fake_llm: FakeLLM) -> Iterator[TestClient]:  # noqa: F811
    with make_client(db) as c:
        yield c


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="item [^"]*">(.*?)</tr>', html, re.S)


def test_list_filters_search_and_groups_blind(client: TestClient) -> None:
    login(client)
    page = client.get("/review/list")
    assert page.status_code == 200
    html = page.text
    total = len(_rows(html))
    assert total > 20 and 0 < html.count('class="answer-group"') < total  # grouped
    assert html.count("<table") == 1  # one aligned table, not one per answer
    assert "why it is queued" not in html  # blind
    # blind: no label, no reason (a reason beside some items tells which ones the judge
    # passed), and no filter on either
    assert "judge_flagged" not in html and "label:" not in html
    assert RATIONALE_SENTINEL not in html and 'name="label"' not in html
    assert 'name="reason"' not in html and "not_in_source" not in html
    ignored = client.get("/review/list", params={"reason": "judge_flagged"}).text
    assert len(_rows(ignored)) == total
    found = client.get("/review/list", params={"q": "nis-3"}).text
    assert len(_rows(found)) == 1 and 'data-answer="nis-3"' in found
    assert len(_rows(client.get("/review/list", params={"reviewed": "yes"}).text)) == 0
    assert len(_rows(client.get("/review/list", params={"reviewed": "no"}).text)) == total
    dataset = client.get("/review/list", params={"dataset": "known.jsonl"}).text
    assert len(_rows(dataset)) == total


def test_list_reveals_labels_only_when_the_service_does(db: Path, fake_llm: FakeLLM) -> None:  # noqa: F811
    with make_client(db, reveal_judge=True) as c:
        login(c)
        html = c.get("/review/list", params={"label": "not_in_source"}).text
        assert 'name="label"' in html and len(_rows(html)) >= 6
        assert "label:not_in_source" in html
        every = len(_rows(c.get("/review/list").text))
        flagged = c.get("/review/list", params={"reason": "label:not_in_source"}).text
        assert 'name="reason"' in flagged and 0 < len(_rows(flagged)) < every


def test_saved_notice_and_guideline_beside_the_form(client: TestClient) -> None:
    csrf = login(client)
    first = client.get("/review", params={"pos": 1})
    assert 'id="guideline"' in first.text and 'id="shortcuts"' in first.text
    item = re.search(r'name="item_id" value="([^"]+)"', first.text).group(1)  # type: ignore[union-attr]
    queue = re.search(r'name="queue" value="([^"]+)"', first.text).group(1)  # type: ignore[union-attr]
    saved = client.post("/review", data={"csrf": csrf, "queue": queue, "pos": "1",
                                         "item_id": item, "label": "supported"})
    assert saved.status_code == 200 and "Saved item 1." in saved.text


def test_json_path_spans_match_the_printed_source() -> None:
    doc = {"metrics": [{"name": "延遲", "value": 120}, {"name": "region", "value": "eu"}],
           "empty": {}, "list": []}
    text, spans = json_spans(doc)
    assert text == json.dumps(doc, ensure_ascii=False, indent=1)
    a, b = json_path_span(doc, text, "$.metrics[0].value")  # type: ignore[misc]
    assert text[a:b] == "120"
    a, b = json_path_span(doc, text, "$.metrics[-1].name")  # type: ignore[misc]
    assert text[a:b] == '"region"'
    assert json_path_span(doc, text, "$.nope") is None


def test_list_search_matches_claim_text_and_whole_ids_only(
    client: TestClient, db: Path,  # noqa: F811
) -> None:
    from judge.review.queue import get_queue, queue_items
    from judge.store import Store

    store = Store.open(db)
    try:
        item = next(i for i in queue_items(store, get_queue(store, None)["id"])
                    if i["claim_id"])
    finally:
        store.close()
    login(client)
    # a piece of a hash id matches no id: only claims whose text holds it (none here)
    piece = item["claim_id"][-6:-2]
    assert _rows(client.get("/review/list", params={"q": piece}).text) == []
    assert len(_rows(client.get("/review/list", params={"q": item["claim_id"]}).text)) == 1
    assert len(_rows(client.get("/review/list", params={"q": item["id"]}).text)) == 1
    words = _rows(client.get("/review/list", params={"q": "listed in the REGISTER"}).text)
    assert len(words) >= 20
