"""A split cannot "correct" an answer: a model that puts the nearest true source sentence in
place of each claim, or the same true statement in place of every claim, gets no false
sentence past the judge. The real fault server over HTTP, the real pipeline, English and
Chinese, the separate split and ``one_call``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.store import Store
from tests.faults.harness import write_records
from tests.support.openai_server import OpenAIServer

EN_SOURCE = "Paris is the capital of France. The Seine flows through Paris."
ZH_SOURCE = "巴黎是法國的首都。塞納河流經巴黎。"
#: (language, record, its false sentences, the true sentence the split keeps as it is)
CASES: dict[str, tuple[dict[str, Any], tuple[str, ...], str]] = {
    "en": ({"id": "en", "generator": "openai/gpt-4o",
            "answer": "Paris is the capital of France [S1]. The Seine flows through Berlin [S1].",
            "sources": [{"id": "S1", "text": EN_SOURCE}]},
           ("The Seine flows through Berlin.",), "Paris is the capital of France."),
    "zh": ({"id": "zh", "generator": "openai/gpt-4o",
            "answer": "巴黎是法國的首都[S1]。塞納河流經柏林[S1]。",
            "sources": [{"id": "S1", "text": ZH_SOURCE}]},
           ("塞納河流經柏林。",), "巴黎是法國的首都。"),
}
CANDIDATES = {"en": ["Paris is the capital of France.", "The Seine flows through Paris."],
              "zh": ["巴黎是法國的首都。", "塞納河流經巴黎。"]}


@pytest.fixture(scope="module")
def server() -> Any:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as s:
        yield s


def run(server: OpenAIServer, tmp_path: Path, language: str, fault: str, one_call: bool
        ) -> list[dict[str, Any]]:
    record = CASES[language][0]
    server.clear()
    server.fault(fault, candidates=CANDIDATES[language] if not one_call else [],
                 only="judge" if one_call else "split")
    config = JudgeConfig(model="openai/fake-judge", api_base=server.base_url, strategy="batch",
                         retries=0, backoff_s=0.01, timeout_s=10, one_call=one_call)
    db = tmp_path / "judge.db"
    judge_file(write_records(tmp_path / "in.jsonl", [record]), config=config, db=db)
    store = Store.open(db)
    try:
        return list(store.verdict_rows())
    finally:
        store.close()


@pytest.mark.parametrize("one_call", [False, True], ids=["split", "one_call"])
@pytest.mark.parametrize("fault", ["nearest", "repeat"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_split_that_substitutes_true_statements_gets_no_false_sentence_past(
    server: OpenAIServer, tmp_path: Path, language: str, fault: str, one_call: bool
) -> None:
    _, false, true = CASES[language]
    rows = run(server, tmp_path, language, fault, one_call)
    by_text = {r["claim"].rstrip(".。"): r for r in rows}
    for sentence in false:
        # the false sentence itself is judged, as it stands, and flagged
        row = by_text[sentence.rstrip(".。")]
        assert row["label"] not in ("supported", None), row
        assert row["origin"] == "uncovered" and "uncovered_sentence" in row["review_reasons"]
    # the model's substitute for it is a judge_error that says why; nothing false is supported
    errors = [r for r in rows if r["label"] == "judge_error"]
    assert errors and all("sentence 2" in r["error"] for r in errors), rows
    supported = {r["claim"].rstrip(".。") for r in rows if r["label"] == "supported"}
    assert supported <= {true.rstrip(".。")}, rows
    # the true first sentence, split faithfully, is still judged supported
    assert true.rstrip(".。") in supported


def test_without_the_fault_both_languages_are_judged_sentence_by_sentence(
    server: OpenAIServer, tmp_path: Path
) -> None:
    for language, (record, _, _) in CASES.items():
        server.clear()
        config = JudgeConfig(model="openai/fake-judge", api_base=server.base_url,
                             strategy="batch", retries=0, timeout_s=10)
        db = tmp_path / f"{language}.db"
        judge_file(write_records(tmp_path / f"{language}.jsonl", [record]), config=config, db=db)
        store = Store.open(db)
        rows = list(store.verdict_rows())
        store.close()
        assert [r["label"] for r in rows] == ["supported", "not_in_source"], rows
        assert all(r["origin"] == "split" for r in rows)
