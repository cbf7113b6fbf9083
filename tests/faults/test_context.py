"""Sources are checked against the model's context before the call: a source far larger
than the context is cut to the passages that cover the claims (and the claim is still judged
on its quote, found in the whole source), and what cannot fit even so is not sent but a
``judge_error`` with the reason. The real pipeline against the fault server over HTTP."""

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

FILLER = "The archive lists shipping records of the northern harbour for every season. "
CLAIM = "The Seine flows through Paris."
HUGE = FILLER * 4000 + CLAIM + " " + FILLER * 4000  # about 630,000 characters


@pytest.fixture
def server() -> Any:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as s:
        yield s


def judged(server: OpenAIServer, tmp_path: Path, **settings: Any) -> list[dict[str, Any]]:
    config = JudgeConfig(model="openai/fake-judge", api_base=server.base_url, strategy="batch",
                         retries=0, timeout_s=30, **settings)
    record = {"id": "a", "answer": f"{CLAIM} [S1]", "sources": [{"id": "S1", "text": HUGE}]}
    judge_file(write_records(tmp_path / "in.jsonl", [record]), config=config,
               db=tmp_path / "j.db")
    store = Store.open(tmp_path / "j.db")
    try:
        return list(store.verdict_rows())
    finally:
        store.close()


def prompt_chars(request: dict[str, Any]) -> int:
    return sum(len(str(m.get("content"))) for m in request["body"]["messages"])


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_source_larger_than_the_context_is_cut_to_the_passages_that_cover_the_claim(
    server: OpenAIServer, tmp_path: Path, version: str
) -> None:
    rows = judged(server, tmp_path, context_tokens=8192,
                  prompts={"split_claims": "v2", "verify_claims": version})
    (verify,) = server.calls("verify")
    assert prompt_chars(verify) < 8192 * 4 < len(HUGE)  # what was sent fits the context
    (row,) = rows
    assert row["label"] == "supported", row  # judged on the passage, quote found in the source
    assert all(e["found"] for e in row["evidence"])


def test_what_cannot_fit_even_cut_is_not_sent_but_a_judge_error_with_the_reason(
    server: OpenAIServer, tmp_path: Path
) -> None:
    rows = judged(server, tmp_path, context_tokens=1024, max_tokens=1000)
    assert server.calls("verify") == []  # nothing was sent
    (row,) = rows
    assert row["label"] == "judge_error"
    assert "do not fit the model's context (1024 tokens" in row["error"]
    assert "context_tokens" in row["error"]
