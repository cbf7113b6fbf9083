from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.api import judge_file
from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.review.exchange import EXPORT_FIELDS, export_lines, import_labels
from judge.review.exchange import queue_to_csv as to_csv
from judge.review.export import to_jsonl
from judge.review.queue import (
    QueueError,
    QueueOptions,
    build_queue,
    get_queue,
    priority_order,
    queue_items,
    reading_positions,
    sample_size,
)
from judge.review.reviews import ReviewError, current_reviews
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, Reply, choice_reply
from tests.review_helpers import KNOWN, RATIONALE_SENTINEL, known_store

SEED_000 = QueueOptions(sample_rate=0.3, min_sample=20, seed=2424, double_fraction=0.0)


@pytest.fixture
def known(tmp_path: Path) -> Iterator[Store]:
    store = known_store(tmp_path)
    yield store
    store.close()


def passed_subjects(store: Store, queue_id: str) -> set[str]:
    return {i["subject"] for i in queue_items(store, queue_id, stratum="passed")}


def test_queue_holds_every_flagged_item_and_a_weighted_sample_of_passes(known: Store) -> None:
    summary = build_queue(known, options=SEED_000)
    flagged = KNOWN["not_in_source"] + KNOWN["failed_check"]
    assert summary.strata == {
        "flagged": {"stratum_size": flagged, "sample_size": flagged, "weight": 1.0},
        "judge_error": {"stratum_size": 1, "sample_size": 1, "weight": 1.0},
        "refused": {"stratum_size": 1, "sample_size": 1, "weight": 1.0},
        "passed": {"stratum_size": 64, "sample_size": 20, "weight": 3.2},  # seed 000: 20 of 64
    }
    items = queue_items(known, summary.queue_id)
    assert len(items) == summary.items == flagged + 1 + 1 + 20
    assert Counter(i["stratum"] for i in items) == {
        "flagged": flagged, "judge_error": 1, "refused": 1, "passed": 20,
    }
    # every claim the judge or a check flagged is in the queue, with its reasons
    verdicts = list(known.verdict_rows())
    queued = {i["subject"]: i for i in items}
    for row in verdicts:
        if row["review"]:
            assert row["claim_id"] in queued
            assert set(row["review_reasons"]) <= set(queued[row["claim_id"]]["reasons"])
    refused = queued["answer:selfmade"]
    assert refused["kind"] == "answer" and refused["reasons"][0].startswith("refused: ")
    for item in items:
        assert item["weight"] == item["stratum_size"] / item["sample_size"]
        if item["stratum"] == "passed":
            row = next(r for r in verdicts if r["claim_id"] == item["subject"])
            assert row["label"] == "supported" and not row["review"]
            assert all(c["outcome"] != "fail" for c in row["checks"])
            assert item["reasons"] == [] and item["category"] == "sampled_pass"
    # the seed and the design are recorded with the queue
    stored = known.db["queues"].get(summary.queue_id)
    assert stored["seed"] == 2424 and stored["sample_rate"] == 0.3 and stored["min_sample"] == 20
    assert json.loads(stored["strata"])["passed"]["weight"] == 3.2


def test_items_come_in_priority_order_and_the_order_is_configurable(known: Store) -> None:
    items = queue_items(known, build_queue(known, options=SEED_000).queue_id)
    assert [i["position"] for i in items] == list(range(1, len(items) + 1))
    ranks = [priority_order(None).index(i["category"]) for i in items]
    assert ranks == sorted(ranks)
    assert items[0]["category"] == "misattribution" and items[-1]["category"] == "sampled_pass"
    custom = QueueOptions(seed=2424, sample_rate=0.3, priority=priority_order("refused,judge_error"))
    items = queue_items(known, build_queue(known, options=custom).queue_id)
    assert [i["category"] for i in items[:2]] == ["refused", "judge_error"]
    with pytest.raises(QueueError, match="unknown priority category 'contradictd'"):
        priority_order("contradictd")


def test_same_seed_same_sample_different_seed_different_sample(known: Store) -> None:
    a = build_queue(known, options=QueueOptions(seed=7, sample_rate=0.3)).queue_id
    b = build_queue(known, options=QueueOptions(seed=7, sample_rate=0.3)).queue_id
    c = build_queue(known, options=QueueOptions(seed=8, sample_rate=0.3)).queue_id
    assert a != b
    assert passed_subjects(known, a) == passed_subjects(known, b)
    assert passed_subjects(known, a) != passed_subjects(known, c)
    assert len(passed_subjects(known, c)) == 20


def test_sample_size_rules_and_an_unsampled_stratum_is_still_reported(known: Store) -> None:
    assert sample_size(64, 0.1, 20) == 20
    assert sample_size(64, 0.5, 20) == 32
    assert sample_size(10, 0.1, 20) == 10
    assert sample_size(0, 0.5, 20) == 0
    summary = build_queue(known, options=QueueOptions(sample_rate=0.0, min_sample=0))
    assert summary.strata["passed"] == {"stratum_size": 64, "sample_size": 0, "weight": None}
    assert not passed_subjects(known, summary.queue_id)
    with pytest.raises(QueueError, match="sample rate 1.5"):
        QueueOptions(sample_rate=1.5)


def test_a_fraction_of_items_is_marked_for_double_review(known: Store) -> None:
    options = QueueOptions(seed=3, sample_rate=0.3, double_fraction=0.5)
    first = queue_items(known, build_queue(known, options=options).queue_id)
    second = queue_items(known, build_queue(known, options=options).queue_id)
    doubled = {i["subject"] for i in first if i["reviews_required"] == 2}
    assert len(doubled) == round(0.5 * len(first))
    assert doubled == {i["subject"] for i in second if i["reviews_required"] == 2}


def test_blind_export_has_the_fields_and_no_judge_label(known: Store) -> None:
    summary = build_queue(known, options=SEED_000)
    blind = "".join(to_jsonl(export_lines(known, summary.queue_id)))
    lines = [json.loads(x) for x in blind.splitlines()]
    assert len(lines) == summary.items
    for line in lines:  # nothing of the judge: no label, reason, stratum, weight or rank
        assert set(line) == set(EXPORT_FIELDS)
    assert RATIONALE_SENTINEL not in blind and "label:not_in_source" not in blind
    assert lines[0]["sources"][0]["id"] == "S1"
    reading = [i["id"] for i in queue_items(known, summary.queue_id)]
    assert [x["item_id"] for x in lines] != reading  # shuffled, not the risk order
    again = [json.loads(x)["item_id"] for x in to_jsonl(export_lines(known, summary.queue_id))]
    assert again == [x["item_id"] for x in lines]  # with the seed recorded in the store
    assert known.queue_row(summary.queue_id)["blind_seed"] is not None

    revealed = [json.loads(x) for x in to_jsonl(export_lines(known, summary.queue_id, True))]
    assert [x["item_id"] for x in revealed] == reading and revealed[0]["priority"] == 1
    assert revealed[0]["reasons"][:2] == ["label:not_in_source", "check:citation_exists"]
    passed = [x for x in revealed if x["stratum"] == "passed"]
    assert {(x["stratum_size"], x["sample_size"], x["weight"]) for x in passed} == {(64, 20, 3.2)}
    assert revealed[0]["judge_label"] == "not_in_source"
    assert revealed[0]["judge_subtype"] == "misattribution"
    assert RATIONALE_SENTINEL in revealed[0]["judge_rationale"]
    assert "label:not_in_source" in revealed[0]["reasons"]


def test_csv_export_escapes_formulas_and_round_trips_labels(known: Store, tmp_path: Path) -> None:
    summary = build_queue(known, options=SEED_000)
    text = "".join(to_csv(export_lines(known, summary.queue_id)))
    assert text.startswith("\ufeffitem_id,")  # UTF-8 with a BOM: spreadsheets read Chinese
    rows = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    assert len(rows) == summary.items and "judge_label" not in rows[0]
    # blind tasks come in a shuffled order (a seed drawn per queue): the claims' rows first,
    # ahead of the answer-level ones (a self-graded answer has no claim_id)
    rows.sort(key=lambda r: not r["claim_id"])
    # flat cells: reasons joined with "; ", sources as "[S1] title: text", never JSON
    assert rows[0]["label"] == "" and "reasons" not in rows[0] and "stratum" not in rows[0]
    assert rows[0]["sources"].startswith("[S1] Register: ")
    assert not any(v.startswith(("[{", "{", '["')) for r in rows for v in r.values() if v)
    assert all(not r["claim"].startswith(("=", "+", "@")) for r in rows)
    rows[0]["label"], rows[0]["subtype"] = "not_in_source", "unsupported_addition"
    rows[1]["label"] = "supported"
    path = tmp_path / "labelled.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = import_labels(known, path, "dana", summary.queue_id)
    assert (result.imported, result.blank, result.errors) == (2, summary.items - 2, [])
    reviews = current_reviews(known)
    assert reviews[rows[0]["claim_id"]][0]["annotator"] == "human:dana"
    assert reviews[rows[0]["claim_id"]][0]["subtype"] == "unsupported_addition"
    assert reviews[rows[0]["claim_id"]][0]["origin"] == "import"
    again = import_labels(known, path, "dana", summary.queue_id)
    assert (again.imported, again.unchanged) == (0, 2)
    bad = tmp_path / "bad.csv"
    bad.write_text(f'claim_id,claim,label\n{rows[2]["claim_id"]},"two\nlines",supported\n'
                   f'{rows[3]["claim_id"]},x,maybe\n', encoding="utf-8")
    errors = import_labels(known, bad, "dana", summary.queue_id).errors
    assert errors == ["line 4: label 'maybe' is not one of: supported, contradicted, "
                      "not_in_source, not_verifiable"]


def test_import_reports_every_bad_line_and_stores_nothing(known: Store, tmp_path: Path) -> None:
    summary = build_queue(known, options=SEED_000)
    items = queue_items(known, summary.queue_id)
    path = write_jsonl(tmp_path / "labels.jsonl", [
        {"claim_id": items[0]["claim_id"], "label": "supported"},
        {"claim_id": items[1]["claim_id"], "label": "supportd"},
        {"claim_id": items[2]["claim_id"], "label": "contradicted"},
        {"claim_id": "c-nope", "label": "supported"},
        "{not json",
        {"item_id": items[3]["id"], "label": "supported", "annotator": "model:gpt-4o"},
        {"claim_id": items[0]["claim_id"], "label": "not_in_source", "subtype": "opinion"},
    ])
    result = import_labels(known, path, "erin", summary.queue_id)
    assert [e.split(":")[0] for e in result.errors] == [
        "line 2", "line 3", "line 4", "line 5", "line 6", "line 7",
    ]
    assert "label 'supportd' is not one of" in result.errors[0]
    assert "subtype is required" in result.errors[1]
    assert "not in this queue" in result.errors[2]
    assert "invalid JSON" in result.errors[3]
    assert "not a person" in result.errors[4]
    assert "already labelled on line 1" in result.errors[5]
    assert result.imported == 0 and not current_reviews(known)


def test_model_annotators_are_refused(known: Store, tmp_path: Path) -> None:
    summary = build_queue(known, options=SEED_000)
    first = queue_items(known, summary.queue_id)[0]["id"]
    path = write_jsonl(tmp_path / "l.jsonl", [{"item_id": first,
                                               "label": "supported"}])
    with pytest.raises(ReviewError, match="not a person"):
        import_labels(known, path, "model:gpt-4o", summary.queue_id)
    with pytest.raises(ReviewError, match="names a model seen in this store"):
        import_labels(known, path, "judge-model", summary.queue_id)  # the judge's own name


def test_a_queue_can_span_runs(known: Store, tmp_path: Path, fake_llm: FakeLLM) -> None:
    first = known.latest_run_id()
    path = write_jsonl(tmp_path / "more.jsonl", [
        {"id": "more-1", "answer": "Gates open at dawn [G].",
         "sources": [{"id": "G", "text": "Gates open at noon."}]},
    ])
    judge_file(path, config=JudgeConfig(model="fake/judge-model", retries=1), db=known)
    second = known.latest_run_id()
    assert second != first
    only_second = build_queue(known, [second], SEED_000)
    assert only_second.items == 1 and only_second.strata == {
        "flagged": {"stratum_size": 1, "sample_size": 1, "weight": 1.0}}
    both = build_queue(known, [first, second], SEED_000)
    assert both.strata["flagged"]["stratum_size"] == KNOWN["not_in_source"] + KNOWN[
        "failed_check"] + 1
    assert both.run_ids == [first, second]
    items = {i["answer_id"] for i in queue_items(known, both.queue_id)}
    assert "more-1" in items and "nis-0" in items


def test_queue_cli_build_list_export_import(known: Store, tmp_path: Path) -> None:
    _register()
    runner = CliRunner()
    db = str(known.path)
    result = runner.invoke(app, ["queue", "build", "--db", db, "--seed", "2424",
                                 "--sample-rate", "0.3", "--json"])
    assert result.exit_code == 0, result.output
    built = json.loads(result.stdout)
    assert built["strata"]["passed"] == {"stratum_size": 64, "sample_size": 20, "weight": 3.2}
    listed = runner.invoke(app, ["queue", "list", "--db", db, "--json", "--limit", "0"])
    assert listed.exit_code == 0
    payload = json.loads(listed.stdout)
    assert payload["total"] == built["items"]
    assert "category" not in payload["items"][0] and "label:" not in listed.stdout
    exported = runner.invoke(app, ["queue", "export", "--db", db, "--format", "csv"])
    assert exported.exit_code == 0 and exported.stdout.startswith("\ufeffitem_id,queue_id,claim_id")
    # a bad --format is a usage error (64), as documented
    assert runner.invoke(app, ["queue", "export", "--db", db, "--format", "xml"]).exit_code == 64
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"claim_id": "c-nope", "label": "supported"}])
    imported = runner.invoke(app, ["queue", "import", str(bad), "--db", db, "-a", "fay"])
    assert imported.exit_code == 2 and "line 1" in imported.output
    assert "1 error(s); nothing was imported" in imported.output
    blank = tmp_path / "blank.csv"  # the export as is: no label filled in yet
    blank.write_text(exported.stdout, encoding="utf-8")
    dry = runner.invoke(app, ["queue", "import", str(blank), "--db", db, "-a", "fay", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert (f"would import 0 label(s); 0 unchanged, {built['items']} line(s) without a label"
            in dry.stdout)
    assert runner.invoke(app, ["queue", "build", "--db", db, "--run", "run-nope"]).exit_code == 1
    for command in (["queue", "--help"], ["queue", "build", "--help"], ["queue", "import", "--help"]):
        assert runner.invoke(app, command).exit_code == 0


def test_risk_order_reads_the_least_likely_supported_first(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    """A confident not_in_source (P(supported) 0.01) is read before a hesitant contradicted
    (0.17) in the default risk order, after it in the priority order; passes come last and
    a judge error (no probability) first. The contradicted claim's year is not in its
    cited source (check numbers_match fails), which is no proof of a defect (sources write
    numbers in many ways), so it keeps its probability."""
    src = {"id": "s", "text": "The bridge opened in 1932. It is 503 metres long."}
    claims = {"The bridge is red.": choice_reply("C", 0.97),
              "The bridge opened in 1931.": choice_reply("B", 0.5),
              "The bridge opened in 1932.": choice_reply("A", 0.95),
              "The bridge has four towers.": Reply("C")}  # no log-probabilities: judge_error

    def respond(schema: str, messages: list[dict]) -> Reply:  # type: ignore[type-arg]
        return next(r for c, r in claims.items() if c in messages[-1]["content"].split(
            "Claim")[-1])

    fake_llm.responder = respond
    path = write_jsonl(tmp_path / "b.jsonl", [{
        "id": "a", "sources": [src], "answer": " ".join(claims),
        "claims": [{"text": c, "citations": ["s"]} for c in claims]}])
    config = JudgeConfig(model="fake/judge-model", strategy="scores", signals=False,
                         prompts={"split_claims": "v1", "choose_label": "v1"})
    judge_file(path, config=config, db=store)
    rows = {r["claim_id"]: r["claim"] for r in store.verdict_rows()}
    options = {"sample_rate": 1.0, "min_sample": 0, "double_fraction": 0.0}
    risk = build_queue(store, options=QueueOptions(**options))
    assert risk.order == "risk"
    read = [rows[i["claim_id"]] for i in queue_items(store, risk.queue_id)]
    assert read == ["The bridge has four towers.", "The bridge is red.",
                    "The bridge opened in 1931.", "The bridge opened in 1932."]
    year = next(r for r in store.verdict_rows() if r["claim"] == "The bridge opened in 1931.")
    assert {c["name"]: c["outcome"] for c in year["checks"]}["numbers_match"] == "fail"
    prio = build_queue(store, options=QueueOptions(order="priority", **options))
    read = [rows[i["claim_id"]] for i in queue_items(store, prio.queue_id)]
    assert read[:2] == ["The bridge opened in 1931.", "The bridge is red."]
    assert get_queue(store, prio.queue_id)["ordering"] == "priority"
    with pytest.raises(QueueError, match="unknown queue order 'fifo'"):
        QueueOptions(order="fifo")


def test_reading_positions_follow_the_queue_and_leave_passes_out() -> None:
    def row(cid: str, label: str, support: float | None, reasons: list[str]) -> dict:  # type: ignore[type-arg]
        return {"claim_id": cid, "answer_id": "a", "idx": int(cid[1:]), "label": label,
                "subtype": None, "review_reasons": reasons, "review": bool(reasons),
                "support": support}

    rows = [row("c0", "contradicted", 0.30, ["label:contradicted"]),
            row("c1", "not_in_source", 0.05, ["label:not_in_source"]),
            row("c2", "supported", 0.90, []),
            row("c3", "supported", 0.40, ["doubtful_support"]),
            row("c4", "judge_error", None, ["judge_error"])]
    assert reading_positions(rows) == {"c4": 1, "c1": 2, "c0": 3, "c3": 4}
    assert reading_positions(rows, "priority") == {"c0": 1, "c1": 2, "c4": 3, "c3": 4}
    # a defect the program verified outranks any probability the model gives
    rows.append(row("c5", "supported", 0.95, ["check:quote_found"]))
    rows.append(row("c6", "supported", 0.94, ["check:numbers_match"]))
    assert reading_positions(rows) == {"c5": 1, "c4": 2, "c1": 3, "c0": 4, "c3": 5, "c6": 6}


def test_a_claim_whose_check_fails_is_read_first_whatever_its_support(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    """The model is sure both claims are supported, but one quotes its source with words the
    source does not contain: the failed check puts it at the top of the risk order, not
    behind the claim the model merely doubts."""
    src = {"id": "s", "text": "The bridge opened in 1932. It is 503 metres long."}
    invented = {"source": "s", "quote": "the bridge opened to traffic in 1932"}
    claims = {"The bridge opened in 1932.": ("A", 0.97, [invented]),
              "The bridge is 503 metres long.": ("A", 0.97, ["s"]),
              "The bridge is red.": ("C", 0.6, ["s"])}

    def respond(schema: str, messages: list[dict]) -> Reply:  # type: ignore[type-arg]
        claim = next(c for c in claims if c in messages[-1]["content"].split("Claim")[-1])
        return choice_reply(*claims[claim][:2])

    fake_llm.responder = respond
    path = write_jsonl(tmp_path / "b.jsonl", [{
        "id": "a", "sources": [src], "answer": " ".join(claims),
        "claims": [{"text": c, "citations": cites} for c, (_, _, cites) in claims.items()]}])
    config = JudgeConfig(model="fake/judge-model", strategy="scores", signals=False,
                         prompts={"split_claims": "v1", "choose_label": "v1"})
    judge_file(path, config=config, db=store)
    rows = {r["claim_id"]: r for r in store.verdict_rows()}
    quoted = next(r for r in rows.values() if r["claim"] == "The bridge opened in 1932.")
    assert quoted["label"] == "supported" and quoted["support"] > 0.9
    assert "check:quote_found" in quoted["review_reasons"]
    queue = build_queue(store, options=QueueOptions(
        sample_rate=0.0, min_sample=0, informative_share=0.0, double_fraction=0.0))


    read = [rows[i["claim_id"]]["claim"] for i in queue_items(store, queue.queue_id)]
    assert read == ["The bridge opened in 1932.", "The bridge is red."]
