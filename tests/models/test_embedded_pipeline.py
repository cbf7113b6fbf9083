"""The real embedded model, end to end, on one short answer (slow: ~1 minute)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from judge.api import judge_file
from judge.config import DEFAULT_MODEL, JudgeConfig
from judge.store import Store
from judge.verdicts import JUDGE_ERROR, LABELS
from tests.conftest import skip_or_fail, write_jsonl

pytestmark = [
    pytest.mark.embedded,
    skip_or_fail(importlib.util.find_spec("xllamacpp") is None,
                 "the 'embedded' extra is not installed", "CLAIM_JUDGE_REQUIRE_EMBEDDED"),
]


def test_embedded_model_judges_a_short_answer(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "e2e",
        "answer": "HTTP 401 means the client is not authenticated [S1].",
        "sources": [{"id": "S1", "text": "HTTP 401 Unauthorized means the request lacks valid "
                                         "authentication credentials."}],
        "generator": "openai/gpt-4o-mini",
    }])
    store = Store.open(tmp_path / "e2e.db")
    summary = judge_file(path, config=JudgeConfig.load(), db=store).summary
    assert summary.answers == 1 and summary.claims >= 1
    assert summary.model_calls >= 2  # split + verify, really made
    rows = list(store.verdict_rows())
    assert all(r["label"] in (*LABELS, JUDGE_ERROR) for r in rows)
    # a model that fails on every claim is no judge: at least one real label
    assert any(r["label"] != JUDGE_ERROR for r in rows), [r["error"] for r in rows]
    calls = list(store.db["calls"].rows)
    second_step = {"per_claim": "label", "scores": "score"}.get(JudgeConfig.load().strategy,
                                                                 "verify")
    assert {c["purpose"] for c in calls} == {"split", second_step}
    assert all(c["model_sent"] == DEFAULT_MODEL for c in calls)
    assert all(c["raw_output"] for c in calls if c["error"] is None)
    again = judge_file(path, config=JudgeConfig.load(), db=store).summary
    assert again.model_calls == 0 and again.claims == summary.claims
