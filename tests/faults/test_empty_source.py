"""An empty or whitespace-only source cannot support anything: a judge that says "supported"
anyway (the fault server answers so over HTTP) gets ``not_in_source``, flagged
``empty_source``, through the real pipeline; a claim resting on a real source beside a blank
one keeps its label."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.store import Store
from tests.faults.harness import write_records
from tests.support.openai_server import OpenAIServer

SAYS_SUPPORTED = json.dumps({"judgements": [
    {"claim": 1, "label": "supported", "subtype": None, "evidence": [], "rationale": "yes"}]})


def judged(tmp_path: Path, record: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.fault("content", content=SAYS_SUPPORTED, times=0, only="verify")
        config = JudgeConfig(model="openai/fake-judge", api_base=server.base_url,
                             strategy="batch", retries=0, timeout_s=10)
        judge_file(write_records(tmp_path / "in.jsonl", [record]), config=config,
                   db=tmp_path / "j.db")
    store = Store.open(tmp_path / "j.db")
    try:
        (row,) = store.verdict_rows()
        return row
    finally:
        store.close()


@pytest.mark.parametrize("blank", ["", "   ", "\n\t　\n"])
def test_a_blank_source_supports_nothing(tmp_path: Path, blank: str) -> None:
    row = judged(tmp_path, {"id": "a", "answer": "Paris is the capital of France [S1].",
                            "sources": [{"id": "S1", "text": blank}]})
    assert row["label"] == "not_in_source" and row["review"], row
    assert "empty_source" in row["review_reasons"] and row["evidence"] == []


def test_a_claim_citing_a_real_source_beside_a_blank_one_keeps_its_label(
    tmp_path: Path
) -> None:
    row = judged(tmp_path, {"id": "a", "answer": "Paris is the capital of France [S2].",
                            "sources": [{"id": "S1", "text": " "},
                                        {"id": "S2", "text": "Paris is the capital of France."}]})
    assert row["label"] == "supported" and "empty_source" not in row["review_reasons"]
