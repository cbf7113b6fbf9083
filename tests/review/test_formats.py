"""Formats in and out, each round-tripped on files written in the peers' documented schemas:
RAGAS and DeepEval datasets, Label Studio and Argilla tasks and annotations, CSV for
spreadsheets and typed Parquet."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import judge
from judge.config import JudgeConfig
from judge.review.annotation_tools import (
    LABEL_STUDIO_CONFIG,
    argilla_records,
    import_annotations,
    label_studio_tasks,
)
from judge.review.blind import visible_items
from judge.review.export import export_rows, to_csv
from judge.review.gold_export import gold_lines
from judge.review.queue import QueueOptions, build_queue, queue_items
from judge.review.reviews import current_reviews
from judge.store import Store
from tests.fakes import FakeLLM
from tests.review_helpers import RATIONALE_SENTINEL, known_store

CONTEXTS = ["HTTP 401 means the request is unauthenticated.",
            "HTTP 403 means authenticated but not allowed; retrying does not help."]
RAGAS_ROWS = [
    {"user_input": "What does 401 mean?", "retrieved_contexts": CONTEXTS,
     "response": "401 means the request is unauthenticated.", "reference": "Unauthenticated."},
    {"user_input": "403 和 401 的差別？", "retrieved_contexts": ["403 表示權限不足，重試無效。"],
     "response": "403 表示伺服器故障，重試即可。"},
]


def _judge(records: list[dict], tmp_path: Path, config: JudgeConfig) -> Store:
    store = Store.open(tmp_path / "j.db")
    judge.judge_answers(records, config=config, db=store)
    return store


def test_ragas_jsonl_and_csv_round_trip(tmp_path: Path, fake_llm: FakeLLM,
                                       config: JudgeConfig) -> None:
    src = tmp_path / "ragas.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in RAGAS_ROWS),
                   encoding="utf-8")
    records = judge.read_dataset(src, "ragas")
    assert [s["id"] for s in records[0]["sources"]] == ["C1", "C2"]
    assert records[0]["question"] == "What does 401 mean?"
    assert records[0]["reference"] == "Unauthenticated." and "reference" not in records[1]
    # EvaluationDataset.to_csv writes list columns as Python lists
    as_csv = tmp_path / "ragas.csv"
    with open(as_csv, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, ["user_input", "retrieved_contexts", "response", "reference"])
        writer.writeheader()
        for row in RAGAS_ROWS:
            writer.writerow({**row, "retrieved_contexts": repr(row["retrieved_contexts"])})
    assert judge.read_dataset(as_csv, "ragas") == records

    store = _judge(records, tmp_path, config)
    out = tmp_path / "back.jsonl"
    judge.export(out, "ragas", db=store)
    back = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for original, row in zip(RAGAS_ROWS, back, strict=True):
        assert {k: row.get(k) for k in original} == original
    store.close()


def test_peer_rows_cite_all_their_contexts_so_supported_claims_need_no_review(
    tmp_path: Path, fake_llm: FakeLLM, config: JudgeConfig,
) -> None:
    rows = [{"user_input": "What do 401 and 403 mean?", "retrieved_contexts": CONTEXTS,
             "response": "HTTP 401 means the request is unauthenticated. "
                         "HTTP 403 means the server is on fire."}]
    src = tmp_path / "ragas.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    records = judge.read_dataset(src, "ragas")
    assert records[0]["uncited"] == "all_sources"
    result = judge.judge_answers(records, config=config, db=tmp_path / "j.db")
    verdicts = result[0].verdicts
    assert [v.label for v in verdicts] == ["supported", "not_in_source"]
    supported, unsupported = verdicts
    # the supported claim cites every context, its quote is found: nothing to review
    assert supported.evidence and not supported.review, supported.review_reasons
    assert unsupported.review and "missing_citation" not in unsupported.review_reasons
    # the same answer as a plain JSONL record, read as citing nothing (uncited =
    # "missing_citation"), still asks for citations
    plain = {k: v for k, v in records[0].items() if k != "uncited"}
    again = judge.judge_answers([plain], config=config.model_copy(
        update={"uncited": "missing_citation"}), db=tmp_path / "k.db")
    assert all("missing_citation" in v.review_reasons for v in again[0].verdicts)


def test_deepeval_json_round_trip_and_bad_rows_named(tmp_path: Path, fake_llm: FakeLLM,
                                                     config: JudgeConfig) -> None:
    # the form EvaluationDataset.save_as(file_type="json") writes
    cases = [{"input": "What does 401 mean?", "actual_output": "401 means unauthenticated.",
              "expected_output": None, "retrieval_context": CONTEXTS, "context": None,
              "name": "case-1", "comments": None, "source_file": None, "tools_called": None,
              "expected_tools": None, "additional_metadata": None}]
    src = tmp_path / "deepeval.json"
    src.write_text(json.dumps(cases), encoding="utf-8")
    records = judge.read_dataset(src, "deepeval")
    assert records[0]["id"] == "case-1" and len(records[0]["sources"]) == 2
    store = _judge(records, tmp_path, config)
    out = tmp_path / "back.json"
    judge.export(out, "deepeval", db=store)
    back = json.loads(out.read_text(encoding="utf-8"))
    assert [{k: r[k] for k in ("name", "input", "actual_output", "retrieval_context")}
            for r in back] == [{k: c[k] for k in ("name", "input", "actual_output",
                                                  "retrieval_context")} for c in cases]
    store.close()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"input": "q", "actual_output": "a"}, {"input": "q"}]))
    with pytest.raises(ValueError, match=r"row 1: no retrieved contexts[\s\S]*row 2: no answer"):
        judge.read_dataset(bad, "deepeval")


DEEPEVAL_FILES = Path(__file__).resolve().parents[1] / "data" / "deepeval"


@pytest.mark.parametrize("kind", ["goldens", "test_cases"])
def test_deepeval_files_written_by_deepeval_read_alike_in_json_jsonl_and_csv(kind: str) -> None:
    # written by DeepEval's own EvaluationDataset.save_as (tests/data/deepeval/make_fixtures.py;
    # the version in VERSION): JSONL and CSV join retrieval_context with "|"
    assert (DEEPEVAL_FILES / "VERSION").read_text().startswith("deepeval ")
    assert "|" in (DEEPEVAL_FILES / f"{kind}.jsonl").read_text(encoding="utf-8")
    read = {ext: judge.read_dataset(DEEPEVAL_FILES / f"{kind}.{ext}", "deepeval")
            for ext in ("json", "jsonl", "csv")}
    assert read["json"] == read["jsonl"] == read["csv"]
    first = read["json"][0]
    assert first["id"] == "golden-401" and first["reference"] == "Unauthenticated."
    assert [s["text"] for s in first["sources"]] == CONTEXTS
    if kind == "goldens":
        assert [s["text"] for s in read["json"][1]["sources"]] == [
            "403 表示權限不足，重試無效。", "401 表示未認證。"]
    else:  # a RetrievedContextData: its text, titled with its source
        case = read["json"][1]
        assert "id" not in case and case["question"] == "Should I retry a 403?"
        assert case["sources"] == [
            {"id": "C1", "text": CONTEXTS[1], "title": "rfc9110.txt"},
            {"id": "C2", "text": CONTEXTS[0]}]


def test_a_record_without_reference_keeps_its_content_hash() -> None:
    record = judge.AnswerRecord.model_validate({"answer": "x", "sources": [{"id": "S", "text": "y"}]})
    assert "reference" not in record.model_dump(mode="json", by_alias=True)
    # the id (a hash of the record) is the one records had before the field existed
    assert record.answer_id == "a-" + judge.hashing.content_hash(  # type: ignore[attr-defined]
        {"id": None, "question": None, "answer": "x",
         "sources": [{"id": "S", "title": None, "text": "y", "json": None, "version": None,
                      "effective_date": None}],
         "claims": None, "generator": None, "expected_status": None})[:16]


def _queue(tmp_path: Path) -> tuple[Store, str, list[dict]]:
    """A queue and its items in the order of its blind exports."""
    store = known_store(tmp_path)
    summary = build_queue(store, options=QueueOptions(sample_rate=0.1, double_fraction=0.0))
    full = {i["id"]: i for i in queue_items(store, summary.queue_id)}
    order = visible_items(store, summary.queue_id, full.values(), reveal=False)
    return store, summary.queue_id, [full[i["id"]] for i in order]


def _blind(text: str) -> None:
    assert RATIONALE_SENTINEL not in text and "label:" not in text
    assert "not_in_source" not in text.replace("<Choice value=\"not_in_source\"/>", "")
    for judged in ("stratum", "weight", "priority", "reasons", "judge_flagged", "passed",
                   "flagged", "check:", "category", "sample_size", "judge_version"):
        assert judged not in text, judged


def test_label_studio_tasks_out_blind_annotations_back_as_reviews_then_gold(
    tmp_path: Path,
) -> None:
    store, queue_id, items = _queue(tmp_path)
    tasks = list(label_studio_tasks(store, queue_id))
    assert len(tasks) == len(items) and all("predictions" not in t for t in tasks)
    _blind(json.dumps(tasks, ensure_ascii=False))
    assert '<Choices name="label" toName="claim"' in LABEL_STUDIO_CONFIG
    revealed = list(label_studio_tasks(store, queue_id, reveal=True))
    assert any(t["predictions"][0]["result"][0]["value"]["choices"] == ["not_in_source"]
               for t in revealed if "predictions" in t)

    def annotation(user: object, label: str, subtype: str | None = None,
                   origin: str = "manual") -> dict:
        result = [{"from_name": "label", "to_name": "claim", "type": "choices",
                   "origin": origin, "value": {"choices": [label]}}]
        if subtype:
            result.append({"from_name": "subtype", "to_name": "claim", "type": "choices",
                           "origin": origin, "value": {"choices": [subtype]}})
        return {"id": 1, "result": result, "was_cancelled": False, "lead_time": 12.5,
                "completed_by": user}

    # Label Studio's JSON export: the tasks as given, with annotations added
    done = [dict(t, id=i, annotations=[]) for i, t in enumerate(tasks, start=1)]
    done[0]["annotations"] = [annotation({"id": 3, "email": "alice@example.org"},
                                         "not_in_source", "unsupported_addition"),
                              annotation(7, "not_in_source", "unsupported_addition")]
    done[1]["annotations"] = [annotation({"id": 3, "email": "alice@example.org"}, "supported")]
    done[2]["annotations"] = [annotation(7, "supported", origin="prediction")]
    path = tmp_path / "ls-export.json"
    path.write_text(json.dumps(done), encoding="utf-8")
    refused = import_annotations(store, path, "label-studio", queue_id)
    assert refused.imported == 0 and len(refused.errors) == 1
    assert "model's prediction accepted unchanged" in refused.errors[0]
    assert current_reviews(store) == {}  # all or nothing

    done[2]["annotations"] = []
    path.write_text(json.dumps(done), encoding="utf-8")
    result = judge.import_reviews(path, "label-studio", db=store, queue=queue_id)
    assert (result.imported, result.errors) == (3, [])
    reviews = current_reviews(store)
    first = reviews[items[0]["subject"]]
    assert [r["annotator"] for r in first] == ["human:alice@example.org", "human:ls-7"]
    assert first[0]["origin"] == "label-studio" and first[0]["time_spent_ms"] == 12500
    again = import_annotations(store, path, "label-studio", queue_id)
    assert (again.imported, again.unchanged) == (0, 3)
    gold = {g["id"]: g for g in gold_lines(store, queue_id)}
    assert gold[items[0]["subject"]]["label"] == "not_in_source"
    assert gold[items[1]["subject"]]["annotator"] == "human:alice@example.org"
    store.close()


def test_argilla_records_out_responses_back_suggestions_never_read(tmp_path: Path) -> None:
    store, queue_id, items = _queue(tmp_path)
    records = list(argilla_records(store, queue_id))
    assert records[0]["fields"]["claim"] and records[0]["suggestions"] == {}
    _blind(json.dumps(records, ensure_ascii=False))
    # dataset.records.to_json(): responses by user id; a model's suggestion beside them
    user = "5a1c2e3f-0000-4000-8000-00000000abcd"
    records[0]["responses"] = {
        "label": [{"value": "contradicted", "user_id": user, "status": "submitted"}],
        "subtype": [{"value": "misattribution", "user_id": user, "status": "submitted"}]}
    records[0]["suggestions"] = {"label": {"value": "supported", "score": 0.9,
                                           "agent": "gpt-4o"}}
    records[1]["responses"] = {"label": [{"value": "supported", "user_id": user,
                                          "status": "draft"}]}
    path = tmp_path / "argilla.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    result = judge.import_reviews(path, "argilla", db=store, queue=queue_id)
    assert (result.imported, result.errors) == (1, [])
    reviews = current_reviews(store)
    assert list(reviews) == [items[0]["subject"]]
    assert reviews[items[0]["subject"]][0]["annotator"] == f"human:{user}"
    assert reviews[items[0]["subject"]][0]["label"] == "contradicted"
    # an annotator id naming a model seen in the store is refused
    records[1]["responses"] = {"label": [{"value": "supported", "user_id": "judge-model",
                                          "status": "submitted"}]}
    path.write_text(json.dumps(records), encoding="utf-8")
    refused = judge.import_reviews(path, "argilla", db=store, queue=queue_id)
    assert refused.imported == 0 and "names a model" in refused.errors[0]
    store.close()


def test_csv_is_flat_with_bom_and_parquet_typed(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    store = known_store(tmp_path)
    rows = list(export_rows(store))
    text = "".join(to_csv(rows))
    assert text.startswith("\ufeffanswer_id,claim_id,claim,label,subtype,support")
    back = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    assert [(r["claim_id"], r["label"]) for r in back] == \
        [(r["claim_id"], r["label"]) for r in rows]
    assert not any(v.startswith(("[", "{")) for r in back for v in r.values() if v)
    bad = next(r for r in back if r["failed_checks"])
    assert bad["failed_checks"].startswith("citation_exists")

    path = tmp_path / "verdicts.parquet"
    judge.export(path, "parquet", db=store)
    table = pq.read_table(path)
    schema = table.schema
    assert str(schema.field("support").type) == "double"
    assert str(schema.field("review").type) == "bool"
    detail = schema.field("checks").type.value_type.field("detail").type
    assert str(detail.field("value").type) == "string"
    got = table.to_pylist()
    assert [(r["claim_id"], r["label"], r["strength"], r["review_reasons"]) for r in got] == \
        [(r["claim_id"], r["label"], r["strength"], r["review_reasons"]) for r in rows]
    store.close()


def test_json_path_values_are_text_in_checks_and_exports(tmp_path: Path, fake_llm: FakeLLM,
                                                         config: JudgeConfig) -> None:
    """checks[].detail.value never mixes numbers and strings (Parquet needs one type)."""
    records = [{"id": "j", "answer": "Latency is 120 ms. Region is eu.",
                "sources": [{"id": "m", "json": {"p50": 120, "region": "eu"}}],
                "claims": [{"text": "Latency is 120 ms.",
                            "citations": [{"source": "m", "path": "$.p50"}]},
                           {"text": "Region is eu.",
                            "citations": [{"source": "m", "path": "$.region"}]}]}]
    store = _judge(records, tmp_path, config)
    values = [c["detail"]["value"] for r in export_rows(store) for c in r["checks"]
              if c["name"] == "json_path_resolves"]
    assert values and all(isinstance(v, str) for v in values) and "120" in values
    store.close()


def test_argilla_reveal_suggests_label_and_subtype_and_empty_questions_are_left_out(
    tmp_path: Path,
) -> None:
    from judge.review.annotation_tools import argilla_settings

    store, queue_id, _ = _queue(tmp_path)
    settings = argilla_settings()
    assert {"question", "citations"} <= set(settings["optional_fields"])
    blind = list(argilla_records(store, queue_id))
    revealed = list(argilla_records(store, queue_id, reveal=True))
    # the known store's answers have no question: Argilla would refuse "" for a required field
    assert all("question" not in r["fields"] for r in blind + revealed)
    assert all(set(settings["fields"]) - set(settings["optional_fields"]) <= set(r["fields"])
               for r in revealed)
    with_subtype = [r for r in revealed if "subtype" in r["suggestions"]]
    assert with_subtype, "the known store has misattributed claims"
    for r in with_subtype:
        assert r["suggestions"]["label"]["value"] != "supported"
        assert r["suggestions"]["subtype"]["agent"] == r["suggestions"]["label"]["agent"]
    assert "misattribution" in {r["suggestions"]["subtype"]["value"] for r in with_subtype}
    store.close()
