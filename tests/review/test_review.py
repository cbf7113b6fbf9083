from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import _register, app
from judge.evaluation.gold import read_gold
from judge.review.gold_export import GoldSummary, gold_lines
from judge.review.queue import QueueOptions, build_queue, get_item, queue_items
from judge.review.reviews import (
    ReviewError,
    adjudicate,
    check_label,
    current_reviews,
    human_annotator,
    record_review,
    review_history,
)
from judge.store import Store
from tests.review_helpers import known_store

EXTERNAL_KEYS = {"id", "dataset", "question", "answer", "sources", "claim", "label", "subtype",
                 "original_label", "annotator"}


@pytest.fixture
def known(tmp_path: Path) -> Iterator[Store]:
    store = known_store(tmp_path)
    yield store
    store.close()


@pytest.fixture
def queue_id(known: Store) -> str:
    # every item needs two independent reviews
    options = QueueOptions(seed=2424, sample_rate=0.3, double_fraction=1.0)
    return build_queue(known, options=options).queue_id


def first_claim(store: Store, queue_id: str) -> dict:
    return next(i for i in queue_items(store, queue_id) if i["kind"] == "claim")


def test_labels_are_validated() -> None:
    assert check_label("supported", "") == ("supported", None)
    assert check_label("not_in_source", "partial_support") == ("not_in_source", "partial_support")
    with pytest.raises(ReviewError, match="subtype is required when the label is contradicted"):
        check_label("contradicted", None)
    with pytest.raises(ReviewError, match="takes no subtype"):
        check_label("supported", "opinion")
    with pytest.raises(ReviewError, match="label 'unsure' is not one of"):
        check_label("unsure", None)
    with pytest.raises(ReviewError, match="subtype 'vibes' is not one of"):
        check_label("not_verifiable", "vibes")


def test_only_people_can_review() -> None:
    assert human_annotator("alice") == "human:alice"
    assert human_annotator("human:alice") == "human:alice"
    for bad in ("model:gpt-4o", "judge:v1", "", "a b", "x" * 65):
        with pytest.raises(ReviewError):
            human_annotator(bad)


def test_a_review_records_provenance_and_revisions_append(known: Store, queue_id: str) -> None:
    item = first_claim(known, queue_id)
    first = record_review(known, item["subject"], "alice", "supported", note="looks fine",
                          guideline_version="g-7", time_spent_ms=4200, queue_id=queue_id,
                          item_id=item["id"])
    assert first["annotator"] == "human:alice" and first["guideline_version"] == "g-7"
    assert first["time_spent_ms"] == 4200 and first["created_at"] and first["revision"] == 1
    second = record_review(known, item["subject"], "alice", "not_in_source",
                           subtype="unsupported_addition", note="missed the date")
    history = review_history(known, item["subject"])
    assert [(r["revision"], r["label"]) for r in history] == [
        (1, "supported"), (2, "not_in_source"),
    ]
    assert second["supersedes"] == first["id"]
    assert history[0]["note"] == "looks fine"  # the original row is untouched
    (current,) = current_reviews(known, [item["subject"]])[item["subject"]]
    assert current["id"] == second["id"]
    with pytest.raises(ReviewError, match="needs the reason"):  # a change without a reason
        record_review(known, item["subject"], "alice", "supported")
    assert len(review_history(known, item["subject"])) == 2
    with pytest.raises(ReviewError, match="no claim 'c-missing'"):
        record_review(known, "c-missing", "alice", "supported")


def test_double_review_and_adjudication_keep_both_originals(known: Store, queue_id: str) -> None:
    item = first_claim(known, queue_id)
    subject = item["subject"]
    a = record_review(known, subject, "alice", "supported", queue_id=queue_id)
    assert get_item(known, item["id"])["state"] == "needs_second_review"
    b = record_review(known, subject, "bob", "not_in_source", subtype="misattribution",
                      note="S9 does not exist", queue_id=queue_id)
    assert get_item(known, item["id"])["state"] == "needs_adjudication"
    with pytest.raises(ReviewError, match="must come from someone else"):
        adjudicate(known, subject, "alice", "supported", None, "I was right")
    with pytest.raises(ReviewError, match="needs a reason"):
        adjudicate(known, subject, "carol", "supported", None, "  ")
    decision = adjudicate(known, subject, "carol", "not_in_source", "misattribution",
                          "the cited source does not exist; the text is in S1",
                          guideline_version="g-2")
    assert get_item(known, item["id"])["state"] == "adjudicated"
    assert decision["review_ids"] == [a["id"], b["id"]]
    rows = {r["id"]: r for r in review_history(known, subject)}
    assert rows[a["id"]]["label"] == "supported" and rows[b["id"]]["label"] == "not_in_source"

    summary = GoldSummary()
    (gold,) = [g for g in gold_lines(known, queue_id, summary=summary) if g["id"] == subject]
    assert (gold["label"], gold["subtype"]) == ("not_in_source", "misattribution")
    assert gold["annotator"] == "human:carol" and gold["guideline_version"] == "g-2"
    adj = gold["adjudication"]
    assert adj["reason"].startswith("the cited source does not exist")
    assert [(o["annotator"], o["label"]) for o in adj["original_labels"]] == [
        ("human:alice", "supported"), ("human:bob", "not_in_source"),
    ]
    assert [r["annotator"] for r in gold["reviews"]] == ["human:alice", "human:bob"]
    assert summary.exported == 1


def test_agreeing_reviewers_need_no_adjudication(known: Store, queue_id: str) -> None:
    item = first_claim(known, queue_id)
    record_review(known, item["subject"], "alice", "contradicted", subtype="misattribution")
    record_review(known, item["subject"], "bob", "contradicted", subtype="misattribution")
    assert get_item(known, item["id"])["state"] == "done"
    with pytest.raises(ReviewError, match="agree"):
        adjudicate(known, item["subject"], "carol", "supported", None, "no")
    # a subtype disagreement is a disagreement too
    other = queue_items(known, queue_id)[1]
    record_review(known, other["subject"], "alice", "contradicted", subtype="misattribution")
    record_review(known, other["subject"], "bob", "contradicted", subtype="overgeneralization")
    assert get_item(known, other["id"])["state"] == "needs_adjudication"


def test_gold_export_format_and_what_is_held_back(known: Store, queue_id: str) -> None:
    items = queue_items(known, queue_id)
    claim, refused = items[0], next(i for i in items if i["kind"] == "answer")
    passed = next(i for i in items if i["stratum"] == "passed")
    for item in (claim, refused, passed):
        record_review(known, item["subject"], "alice", "supported", guideline_version="g-1")
    record_review(known, claim["subject"], "bob", "supported", guideline_version="g-1")
    summary = GoldSummary()
    gold = list(gold_lines(known, queue_id, summary=summary))
    assert [g["id"] for g in gold] == [claim["subject"]]  # the others await a second review
    assert summary.awaiting_second_review == 2
    line = gold[0]
    assert set(line) >= EXTERNAL_KEYS
    assert line["claim"] and line["sources"][0] == {
        "id": "S1", "title": "Register", "text": line["sources"][0]["text"],
    }
    assert line["annotator"] == "human:alice" and line["adjudication"] is None
    assert line["guideline_version"] == "g-1" and line["stratum"] == "flagged"
    assert line["weight"] == 1.0 and line["review_status"] == "done"
    assert json.loads(json.dumps(line, ensure_ascii=False)) == line

    everything = {g["id"]: g for g in gold_lines(known, queue_id, include_single_pending=True)}
    assert set(everything) == {claim["subject"], refused["subject"], passed["subject"]}
    assert everything[passed["subject"]]["weight"] == 3.2
    assert everything[passed["subject"]]["stratum"] == "passed"
    whole = everything[refused["subject"]]
    assert whole["claim"] == whole["answer"] and whole["stratum"] == "refused"


def test_exported_gold_passes_the_gold_file_validator(
    known: Store, queue_id: str, tmp_path: Path
) -> None:
    items = queue_items(known, queue_id)
    adjudicated, revised, agreed = items[0], items[1], items[2]
    record_review(known, adjudicated["subject"], "alice", "supported")
    record_review(known, adjudicated["subject"], "bob", "contradicted", subtype="misattribution")
    adjudicate(known, adjudicated["subject"], "carol", "not_in_source", "misattribution", "S9")
    record_review(known, revised["subject"], "alice", "supported")
    record_review(known, revised["subject"], "alice", "not_in_source",
                  subtype="unsupported_addition", note="the winter removal is not in S1")
    record_review(known, revised["subject"], "bob", "not_in_source",
                  subtype="unsupported_addition")
    for who in ("alice", "bob"):
        record_review(known, agreed["subject"], who, "not_in_source", subtype="partial_support")
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(g, ensure_ascii=False) + "\n"
                            for g in gold_lines(known, queue_id)), encoding="utf-8")
    gold = read_gold(path)
    assert gold.ok and not gold.warnings, [str(p) for p in gold.problems]
    by_id = {i.id: i for i in gold.items}
    assert set(by_id) == {adjudicated["subject"], revised["subject"], agreed["subject"]}
    assert by_id[adjudicated["subject"]].citations == []  # it cited only the missing S9
    assert [c.source for c in by_id[agreed["subject"]].citations or []] == ["S1"]
    revision = by_id[revised["subject"]].revision
    assert revision is not None and revision.original_label == "supported"
    assert revision.reason == "the winter removal is not in S1"
    assert by_id[adjudicated["subject"]].adjudication.reason == "S9"  # type: ignore[union-attr]


def test_labels_written_by_a_model_never_become_gold(known: Store, queue_id: str) -> None:
    item = queue_items(known, queue_id)[0]
    with known.db.conn:  # bypass validation, as a careless script might
        known.db["reviews"].insert({
            "id": "r-model", "subject": item["subject"], "claim_id": item["claim_id"],
            "answer_id": item["answer_id"], "annotator": "model:gpt-4o", "label": "supported",
            "guideline_version": "g", "created_at": "2024-01-01T00:00:00", "revision": 1,
        })
    summary = GoldSummary()
    assert list(gold_lines(known, queue_id, include_single_pending=True, summary=summary)) == []
    assert summary.not_human == 1
    record_review(known, item["subject"], "alice", "supported")
    lines = list(gold_lines(known, queue_id, include_single_pending=True))
    assert [g["annotator"] for g in lines] == ["human:alice"]
    assert [r["annotator"] for r in lines[0]["reviews"]] == ["human:alice"]


def test_review_and_gold_cli(known: Store, queue_id: str, tmp_path: Path) -> None:
    _register()
    runner = CliRunner()
    db = str(known.path)
    item = first_claim(known, queue_id)
    ok = runner.invoke(app, ["review", "add", item["id"], "--db", db, "-a", "alice",
                             "-l", "supported"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["review", "add", item["id"], "--db", db, "-a", "bob",
                              "-l", "contradicted"])
    assert bad.exit_code == 1 and "subtype is required" in bad.output
    runner.invoke(app, ["review", "add", item["id"], "--db", db, "-a", "bob",
                        "-l", "contradicted", "-s", "overgeneralization"])
    status = runner.invoke(app, ["review", "status", "--db", db, "--json"])
    assert json.loads(status.stdout)[0]["item_id"] == item["id"]
    decided = runner.invoke(app, ["review", "adjudicate", item["id"], "--db", db, "-a", "carol",
                                  "-l", "contradicted", "-s", "overgeneralization",
                                  "-r", "the source says usually"])
    assert decided.exit_code == 0, decided.output
    out = tmp_path / "gold.jsonl"
    exported = runner.invoke(app, ["gold", "export", "--db", db, "-o", str(out)])
    assert exported.exit_code == 0 and "1 gold item(s)" in exported.output
    (line,) = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert line["label"] == "contradicted" and line["annotator"] == "human:carol"
    assert line["adjudication"]["reason"] == "the source says usually"
    history = runner.invoke(app, ["review", "history", item["id"], "--db", db, "--json"])
    assert [r["annotator"] for r in json.loads(history.stdout)["reviews"]] == [
        "human:alice", "human:bob",
    ]
    for command in (["review", "--help"], ["gold", "export", "--help"]):
        assert runner.invoke(app, command).exit_code == 0
