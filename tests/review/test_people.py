"""Gold is exactly what people submitted: reviews survive a retry of the verdicts they were
given on, only submitted annotations of other tools become reviews, and one person under several
reviewer ids counts once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.api import judge_file
from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.review.annotation_tools import (
    ARGILLA_STATUS_HELP,
    argilla_records,
    import_annotations,
    label_studio_tasks,
)
from judge.review.exchange import export_lines
from judge.review.gold_export import gold_lines
from judge.review.queue import QueueOptions, build_queue, get_item, queue_items
from judge.review.reviews import (
    ReviewError,
    adjudicate,
    current_reviews,
    record_review,
    review_history,
)
from judge.service.views import item_view
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, install, rule_responder
from tests.review_helpers import known_store

SOURCE = {"id": "S1", "text": "Renewals close in spring. Fees are waived for students."}
RECORDS = [
    {"id": "split-fails", "sources": [SOURCE],
     "answer": "SPLITFAIL Renewals close in spring [S1]. Fees are waived for students [S1]."},
    {"id": "verify-fails", "sources": [SOURCE], "answer": "BROKEN renewals close in spring [S1]."},
]


def failing(schema: str, messages: list[dict[str, Any]]) -> str:
    text = messages[-1]["content"]
    if "Split" in schema and "SPLITFAIL" in text:
        return "not json"
    if "Split" not in schema and "BROKEN" in text.split("Claim 1", 1)[-1]:
        return "not json"
    return rule_responder(schema, messages)


@pytest.fixture
def known(tmp_path: Path) -> Iterator[Store]:
    store = known_store(tmp_path)
    yield store
    store.close()


# -- 2. a retry keeps the reviews ------------------------------------------------------------------


def test_reviews_of_a_judge_error_stay_attached_and_readable_after_a_retry(tmp_path: Path
                                                                          ) -> None:
    config = JudgeConfig(model="fake/judge-model", retries=1)
    path = write_jsonl(tmp_path / "in.jsonl", RECORDS)
    store = Store.open(tmp_path / "j.db")
    fake = install(FakeLLM(responder=failing))
    assert judge_file(path, config=config, db=store).summary.judge_errors == 2
    queue_id = build_queue(store, options=QueueOptions(double_fraction=0.0)).queue_id
    items = {i["answer_id"]: i for i in queue_items(store, queue_id)}
    assert {i["stratum"] for i in items.values()} == {"judge_error"}
    texts = {}
    for answer_id, item in items.items():
        texts[answer_id] = item_view(store, item)["claim"]["text"]
        record_review(store, item["subject"], "alice", "supported", queue_id=queue_id,
                      item_id=item["id"])

    fake.responder = rule_responder  # the provider works again
    summary = judge_file(path, config=config, db=store, retry_errors=True).summary
    assert summary.retried_answers == 2 and summary.judge_errors == 0

    for answer_id, item in items.items():
        item = get_item(store, item["id"])
        assert item["state"] == "done" and item["reviewers"] == ["human:alice"]
        assert [r["label"] for r in review_history(store, item["subject"])] == ["supported"]
        view = item_view(store, item, reveal=True)
        assert view["claim"]["text"] == texts[answer_id] != ""  # never an empty claim
        line = next(x for x in export_lines(store, queue_id) if x["item_id"] == item["id"])
        assert line["claim"] == texts[answer_id]
        gold = next(g for g in gold_lines(store, queue_id) if g["id"] == item["subject"])
        assert gold["claim"] == texts[answer_id] and gold["label"] == "supported"
    # the claim the retry kept shows its new verdict; the one it split anew shows the
    # judge_error the retry superseded, marked so
    kept = item_view(store, get_item(store, items["verify-fails"]["id"]), reveal=True)
    assert kept["judge"]["label"] == "not_in_source" and kept["judge"]["superseded"] is None
    assert store.queue_item_texts(queue_id)[items["verify-fails"]["id"]]["label"] == \
        "not_in_source"
    split = item_view(store, get_item(store, items["split-fails"]["id"]), reveal=True)
    assert split["judge"]["label"] == "judge_error" and split["judge"]["superseded"]
    store.close()


# -- 4. only submitted annotations become reviews -----------------------------------------------


def _first_items(store: Store) -> tuple[str, list[dict[str, Any]]]:
    queue_id = build_queue(store, options=QueueOptions(double_fraction=0.0)).queue_id
    return queue_id, list(export_lines(store, queue_id))[:4]


def test_argilla_responses_count_only_when_submitted(known: Store, tmp_path: Path) -> None:
    queue_id, _ = _first_items(known)
    # blind records come shuffled (a seed drawn per queue); the answer-level ones have no claim
    records = [r for r in argilla_records(known, queue_id) if r["metadata"]["claim_id"]][:4]
    user = "5a1c2e3f-0000-4000-8000-00000000abcd"

    def response(value: str, status: str | None) -> dict[str, Any]:
        return {"value": value, "user_id": user, **({"status": status} if status else {})}

    # what records.to_json() writes: no status at all
    records[0]["responses"] = {"label": [response("supported", None)]}
    records[1]["responses"] = {"label": [response("supported", "draft")]}
    records[2]["responses"] = {"label": [response("supported", "discarded")]}
    records[3]["responses"] = {"label": [response("contradicted", "submitted")],
                               "subtype": [response("misattribution", "submitted")]}
    path = tmp_path / "argilla.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    result = import_annotations(known, path, "argilla", queue_id)
    assert (result.imported, result.errors, result.missing_status) == (1, [], 1)
    assert result.not_submitted == {"discarded": 1, "draft": 1}
    assert any("records.to_json" in w and "status" in w for w in result.warnings)
    reviews = current_reviews(known)
    assert list(reviews) == [records[3]["metadata"]["claim_id"]]
    # the CLI says so too
    _register()
    records[3]["responses"] = {}
    path.write_text(json.dumps(records), encoding="utf-8")
    shown = CliRunner().invoke(app, ["import", str(path), "--format", "argilla",
                                     "--db", str(known.path), "--queue", queue_id])
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert "1 refused without a status" in flat and "2 not submitted" in flat
    assert " ".join(ARGILLA_STATUS_HELP.split()[:6]) in flat


def test_label_studio_cancelled_skipped_and_drafts_are_counted_never_imported(
    known: Store, tmp_path: Path
) -> None:
    queue_id, _ = _first_items(known)
    tasks = [t for t in label_studio_tasks(known, queue_id) if t["data"]["claim_id"]][:3]

    def annotation(label: str, **flags: Any) -> dict[str, Any]:
        return {"id": 1, "completed_by": {"id": 3, "email": "alice@example.org"},
                "result": [{"from_name": "label", "to_name": "claim", "type": "choices",
                            "value": {"choices": [label]}}], **flags}

    tasks[0]["annotations"] = [annotation("supported", was_cancelled=True)]
    tasks[1]["annotations"] = [annotation("supported")]
    tasks[1]["drafts"] = [{"id": 9, "result": []}]
    tasks[2]["annotations"] = [annotation("supported", was_cancelled=False)]
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    result = import_annotations(known, path, "label-studio", queue_id)
    assert (result.imported, result.errors) == (2, [])
    assert result.not_submitted == {"cancelled or skipped": 1, "draft": 1}
    assert tasks[0]["data"]["claim_id"] not in current_reviews(known)


# -- 5. one person, one reviewer ----------------------------------------------------------------


def test_one_person_under_several_ids_counts_once(known: Store) -> None:
    queue_id = build_queue(known, options=QueueOptions(seed=3, double_fraction=1.0)).queue_id
    item = next(i for i in queue_items(known, queue_id) if i["kind"] == "claim")
    subject = item["subject"]
    record_review(known, subject, "alice", "supported", item_id=item["id"])
    record_review(known, subject, "alice@example.org", "not_in_source",
                  subtype="unsupported_addition", item_id=item["id"])
    # two ids of one person look like a disagreement between two people
    assert get_item(known, item["id"])["state"] == "needs_adjudication"

    _register()
    runner = CliRunner()
    db = str(known.path)
    done = runner.invoke(app, ["reviewers", "alias", "alice@example.org", "alice", "--db", db])
    assert done.exit_code == 0, done.output
    listed = json.loads(runner.invoke(app, ["reviewers", "list", "--db", db, "--json"]).stdout)
    assert [(r["annotator"], r["person"]) for r in listed] == [
        ("human:alice@example.org", "human:alice")]

    now = get_item(known, item["id"])  # one person: her latest label, a second review needed
    assert now["state"] == "needs_second_review" and now["reviewers"] == ["human:alice"]
    assert current_reviews(known)[subject][0]["label"] == "not_in_source"
    waiting = queue_items(known, queue_id, needs_review_by="human:alice@example.org")
    assert item["id"] not in {i["id"] for i in waiting}  # "reviewed by you", any of her ids
    record_review(known, subject, "bob", "supported", item_id=item["id"])
    assert get_item(known, item["id"])["state"] == "needs_adjudication"
    with pytest.raises(ReviewError, match="reviewed"):
        adjudicate(known, subject, "alice", "supported", None, "she reviewed it already")
    adjudicate(known, subject, "carol", "supported", None, "the source says so")
    gold = next(g for g in gold_lines(known, queue_id) if g["id"] == subject)
    assert sorted(r["annotator"] for r in gold["adjudication"]["original_labels"]) == [
        "human:alice", "human:bob"]
    # aliases stay flat: aliasing the person follows through
    runner.invoke(app, ["reviewers", "alias", "alice", "alice.smith", "--db", db])
    listed = json.loads(runner.invoke(app, ["reviewers", "list", "--db", db, "--json"]).stdout)
    assert {r["person"] for r in listed} == {"human:alice.smith"}
    undone = runner.invoke(app, ["reviewers", "unalias", "alice@example.org", "--db", db])
    assert undone.exit_code == 0
    assert runner.invoke(app, ["reviewers", "alias", "bob", "bob", "--db", db]).exit_code == 1
