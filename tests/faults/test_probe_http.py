"""Strategy ``probe`` through litellm's OpenAI path against a real HTTP server on 127.0.0.1
(``POST /v1/embeddings``) with switchable faults: transient errors are retried, and a
malformed answer, a vector with NaN or of another length, or an outage become recorded
``judge_error`` verdicts that go to review; nothing becomes ``supported`` by default."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.decide.probe_head import ProbeHead
from judge.store import Store
from judge.verdicts import LABELS
from tests.conftest import write_jsonl
from tests.support.openai_server import OpenAIServer

SRC = {"id": "py", "text": "Python 3.11 added the tomllib module. It reads TOML files."}
GOOD = "Python 3.11 added the tomllib module."
OTHER = "Python 3.10 added tomllib."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with OpenAIServer() as s:
        yield s


def config(tmp_path: Path, server: OpenAIServer, **extra: Any) -> JudgeConfig:
    coef = np.zeros((4, 3))
    coef[LABELS.index("supported"), 0] = 6.0
    coef[LABELS.index("not_in_source"), 1] = 6.0
    coef[LABELS.index("not_verifiable"), 2] = 6.0
    path = tmp_path / "head.json"
    path.write_text(ProbeHead(tuple(LABELS), np.zeros(3), np.ones(3), coef, np.zeros(4),
                              {"prompt": "probe_claim/v1"}).dumps(), encoding="utf-8")
    head = {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    extra.setdefault("retries", 1)
    return JudgeConfig(model="openai/probe-model", api_base=server.base_url, strategy="probe",
                       prompts={"split_claims": "v1"}, probe_head=head, backoff_s=0.0,
                       timeout_s=5, **extra)


def judge(tmp_path: Path, store: Store, cfg: JudgeConfig, claims: list[str]) -> dict[str, Any]:
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "a1", "sources": [SRC], "answer": " ".join(claims), "generator": "other/model",
        "claims": [{"text": c, "citations": ["py"]} for c in claims]}])
    judge_file(path, config=cfg, db=store)
    return {r["claim"]: r for r in store.verdict_rows()}


def test_probe_over_http_labels_and_retries_transient_errors(
    tmp_path: Path, store: Store, server: OpenAIServer
) -> None:
    server.fault("status", status=503)
    rows = judge(tmp_path, store, config(tmp_path, server), [GOOD, OTHER])
    assert rows[GOOD]["label"] == "supported" and rows[OTHER]["label"] == "not_in_source"
    assert len(server.calls("embed")) == 3  # one 503, retried, then both claims
    attempts = list(store.db.query("select status, http_status from call_attempts"))
    assert {"status": "error", "http_status": 503} in attempts


@pytest.mark.parametrize(("fault", "call_failed", "says"), [
    ({"kind": "malformed"}, True, ""),
    ({"kind": "vector", "vector": [math.nan, 0.0, 0.0]}, True, "NaN"),
    ({"kind": "vector", "vector": []}, True, "empty"),
    ({"kind": "status", "status": 400}, True, "400"),
    # a vector of another model's length: the call is fine, the head cannot read it
    ({"kind": "vector", "vector": [1.0, 0.0, 0.0, 0.0, 0.0]}, False, "the model gave 5"),
])
def test_what_the_probe_cannot_read_fails_closed(
    tmp_path: Path, store: Store, server: OpenAIServer, fault: dict[str, Any],
    call_failed: bool, says: str,
) -> None:
    server.fault(**{**fault, "only": "embed"})
    rows = judge(tmp_path, store, config(tmp_path, server, retries=0), [GOOD])
    row = rows[GOOD]
    assert row["label"] == "judge_error" and row["review"] and says in row["error"]
    assert row["support"] is None
    failed = list(store.db.query("select error from calls where error is not null"))
    assert bool(failed) is call_failed
    # once the server is well again, --retry-errors judges it
    again = judge_file(tmp_path / "in.jsonl", config=config(tmp_path, server), db=store,
                       retry_errors=True)
    assert [v.label for r in again for v in r.verdicts] == ["supported"]


def test_an_outage_stops_the_run_and_nothing_is_judged_supported(
    tmp_path: Path, store: Store, server: OpenAIServer
) -> None:
    server.fault("status", status=503, times=0)
    cfg = config(tmp_path, server, retries=0, breaker_after=2)
    path = write_jsonl(tmp_path / "in.jsonl", [
        {"id": f"a{k}", "sources": [SRC], "answer": GOOD, "generator": "other/model",
         "claims": [{"text": GOOD, "citations": ["py"]}]} for k in range(4)])
    from judge.models.client import RunStopped

    with pytest.raises(RunStopped):
        judge_file(path, config=cfg, db=store)
    assert not any(r["label"] == "supported" for r in store.verdict_rows())


def test_an_attempt_is_stamped_when_it_leaves_not_when_its_answer_arrives(
    tmp_path: Path, store: Store, server: OpenAIServer
) -> None:
    server.latency_s = 0.5
    before = datetime.now(UTC)
    judge(tmp_path, store, config(tmp_path, server), [GOOD])
    after = datetime.now(UTC)
    (attempt,) = store.db.query("select started_at, latency_ms from call_attempts")
    started = datetime.fromisoformat(attempt["started_at"])
    assert attempt["latency_ms"] >= 500
    # it left after the run began, and its answer (0.5 s later) came before the run ended;
    # stamped at the answer, started + latency would fall past the run's end
    assert before - timedelta(milliseconds=2) <= started
    assert started + timedelta(milliseconds=attempt["latency_ms"] - 5) <= after
