from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import litellm

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, Reply, rule_responder, verify_reply

AUTH = {"id": "S1", "title": "auth", "text": "401 表示身分未確認。403 表示已認證但權限不足。"}


def run(path: Path, store: Store, config: JudgeConfig):  # type: ignore[no-untyped-def]
    return judge_file(path, config=config, db=store).summary


def rows(store: Store) -> list[dict[str, Any]]:
    return list(store.verdict_rows())


def test_chinese_answer_end_to_end_labels_and_checks(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "zh", "answer": "401 表示身分未確認 [S1]。404 表示找不到頁面 [S1]。", "sources": [AUTH]}],
    )
    summary = run(path, store, config)
    got = {r["claim"]: r for r in rows(store)}
    assert summary.claims == 2 and summary.answers == 1
    supported = got["401 表示身分未確認。"] if "401 表示身分未確認。" in got else got["401 表示身分未確認"]
    assert supported["label"] == "supported" and supported["evidence"][0]["found"] is True
    assert supported["citations"] == [{"source": "S1"}]
    other = next(r for r in got.values() if r["claim"].startswith("404"))
    assert other["label"] == "not_in_source" and other["subtype"] == "unsupported_addition"
    assert other["review"] and "label:not_in_source" in other["review_reasons"]
    assert "check:numbers_match" in other["review_reasons"]  # 404 occurs in no cited text
    assert summary.labels == {"supported": 1, "not_in_source": 1}


def test_rerun_makes_zero_model_calls_and_no_duplicates(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": f"a{i}", "answer": f"401 表示身分未確認 [S1]。第 {i} 句。", "sources": [AUTH]}
         for i in range(3)],
    )
    first = run(path, store, config)
    calls = len(fake_llm.calls)
    assert first.model_calls == calls > 0
    second = run(path, store, config)
    assert len(fake_llm.calls) == calls
    assert second.model_calls == 0 and second.answers_from_store == 3
    assert second.claims == first.claims
    count = store.db.execute("select count(*) from verdicts").fetchone()[0]
    assert count == first.claims
    # a fresh process-level cache miss is served by stored calls: delete verdicts, re-run
    store.db.execute("delete from verdicts")
    store.db.execute("delete from run_answers")
    store.db.conn.commit()
    third = run(path, store, config)
    assert third.model_calls == 0 and third.cached_calls == calls and third.claims == first.claims


def test_invented_quote_is_flagged(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    def responder(schema: str, messages: list[dict[str, Any]]) -> str:
        if "Split" in schema:
            return rule_responder(schema, messages)
        return verify_reply(schema, [{
            "claim": 1, "label": "supported", "subtype": None,
            "evidence": [{"source_id": "S1", "quote": "401 代表伺服器爆炸"}], "rationale": "r"}])

    fake_llm.responder = responder
    path = write_jsonl(tmp_path / "in.jsonl", [{"answer": "401 表示身分未確認 [S1]。", "sources": [AUTH]}])
    run(path, store, config)
    (row,) = rows(store)
    assert row["label"] == "supported"
    assert row["evidence"][0]["found"] is False
    assert "invented_quote" in row["review_reasons"] and row["review"]


def test_misattribution_is_derived_by_the_program(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    a = {"id": "A", "text": "In WAL mode, readers do not block writers."}
    b = {"id": "B", "text": "SQLite allows only one writer at a time."}
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"answer": "SQLite allows only one writer at a time [A].", "sources": [a, b]}],
    )
    run(path, store, config)
    (row,) = rows(store)
    assert row["label"] == "not_in_source" and row["subtype"] == "misattribution"
    assert "B" in row["rationale"] and row["review"]


def test_self_grading_is_refused_and_recorded(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    config = JudgeConfig(model="fake/qwen2.5-coder-1.5b-instruct")
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "own", "answer": "401 表示身分未確認 [S1]。", "sources": [AUTH],
          "generator": "ollama/qwen3.5:9b"},
         {"id": "other", "answer": "401 表示身分未確認 [S1]。", "sources": [AUTH],
          "generator": "openai/gpt-4o"}],
    )
    summary = run(path, store, config)
    assert [r["answer_id"] for r in summary.refused_answers] == ["own"]
    assert "same model family" in summary.refused_answers[0]["reason"]
    assert {r["answer_id"] for r in rows(store)} == {"other"}
    assert not any("ollama" in json.dumps(c["messages"]) for c in fake_llm.calls)


def test_malformed_and_truncated_output_become_judge_errors(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    def responder(schema: str, messages: list[dict[str, Any]]) -> str | Reply:
        text = messages[-1]["content"]
        if "Split" in schema:
            return rule_responder(schema, messages)
        if "truncate-me" in text:
            return Reply('{"judgements": [{"claim": 1, "label": "supp', finish_reason="length")
        return "this is not json at all"

    fake_llm.responder = responder
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "bad", "answer": "401 表示身分未確認 [S1]。", "sources": [AUTH]},
         {"id": "cut", "answer": "truncate-me 401 [S1].", "sources": [AUTH]}],
    )
    summary = run(path, store, config)
    got = {r["answer_id"]: r for r in rows(store)}
    assert summary.judge_errors == 2
    for row in got.values():
        assert row["label"] == "judge_error" and row["review"]
        assert "judge_error" in row["review_reasons"]
    assert "truncated" in got["cut"]["error"]
    calls = {c["id"]: c for c in store.db["calls"].rows}
    failed = [c for c in calls.values() if c["error"]]
    assert len(failed) == 2 and all(c["raw_output"] for c in failed)


def test_model_exception_fails_closed(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    def responder(schema: str, messages: list[dict[str, Any]]) -> Exception:
        return litellm.exceptions.BadRequestError("boom", model="x", llm_provider="fake")

    fake_llm.responder = responder
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": "e", "answer": "401 [S1].", "sources": [AUTH]}])
    summary = run(path, store, config)
    (row,) = rows(store)
    assert row["label"] == "judge_error" and row["origin"] == "unsplit"
    assert "split failed" in row["error"] and summary.judge_errors == 1


def test_pre_split_claims_are_used_as_given_with_json_paths(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    src = {"id": "s.json", "json": {"metrics": [{"metric": "resting_hr", "value": 61}]}}
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "j", "answer": "whatever", "sources": [src], "claims": [
            {"text": "resting_hr is 61", "citations": [{"source": "s.json", "path": "$.metrics[0].value"}]},
            {"text": "resting_hr is 62", "citations": [{"source": "s.json", "path": "$.metrics[3].value"}]},
        ]}],
    )
    run(path, store, config)
    assert not any("Split" in c["schema"] for c in fake_llm.calls)
    got = {r["claim"]: r for r in rows(store)}
    assert got["resting_hr is 61"]["origin"] == "given"
    assert "check:json_path_resolves" in got["resting_hr is 62"]["review_reasons"]
    assert "check:json_path_resolves" not in got["resting_hr is 61"]["review_reasons"]


def test_supported_claim_whose_number_is_not_in_the_quoted_evidence_is_flagged(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    """The 401/403 swap: both numbers occur in the cited source, so only the judge's own
    quote can show that the claim's number is not the one the evidence talks about."""

    def responder(schema: str, messages: list[dict[str, Any]]) -> str:
        if "Split" in schema:
            return rule_responder(schema, messages)
        return verify_reply(schema, [{
            "claim": 1, "label": "supported", "subtype": None,
            "evidence": [{"source_id": "S1", "quote": "403 表示已認證但權限不足。"}],
            "rationale": "r"}])

    fake_llm.responder = responder
    path = write_jsonl(tmp_path / "in.jsonl",
                       [{"answer": "401 表示已認證但權限不足 [S1]。", "sources": [AUTH]}])
    run(path, store, config)
    (row,) = rows(store)
    assert row["label"] == "supported" and row["evidence"][0]["found"] is True
    assert "check:evidence_numbers_match" in row["review_reasons"] and row["review"]
    check = next(c for c in row["checks"] if c["name"] == "evidence_numbers_match")
    assert check["outcome"] == "fail" and "401" in json.dumps(check["detail"])


def test_per_claim_strategy_locates_evidence_and_derives_subtypes(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    config = JudgeConfig(model="fake/judge-model", strategy="per_claim",
                         prompts={"split_claims": "v1", "label_claim": "v1"})
    src = {"id": "py", "text": "Python 3.11 added the tomllib module. It is read-only."}
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": "p", "sources": [src], "answer": "x",
        "claims": [{"text": "Python 3.11 added the tomllib module.", "citations": ["py"]},
                   {"text": "Python 3.10 added tomllib.", "citations": ["py"]}]}])
    summary = run(path, store, config)
    assert {c["schema"] for c in fake_llm.calls} == {"ClaimLabel"}
    assert summary.model_calls == 2
    got = {r["claim"]: r for r in rows(store)}
    good = got["Python 3.11 added the tomllib module."]
    assert good["label"] == "supported" and not good["review"]
    ev = good["evidence"][0]
    assert ev["found"] and src["text"][ev["start"]:ev["end"]] == ev["quote"]
    bad = got["Python 3.10 added tomllib."]
    assert bad["label"] == "not_in_source" and bad["subtype"] == "numeric_or_version_error"
    # the instructions are the same whatever the claim: data stays in the user message
    assert len({c["messages"][0]["content"] for c in fake_llm.calls}) == 1
