"""Degenerate vectors are refused (fail closed 4, item 2): an embeddings endpoint
(``probe_endpoint``, a real HTTP server on 127.0.0.1) or the in-process provider (the scripted
fake at the litellm edge of ``embedded/…``) that returns an all-zero, constant or absurdly
large vector gets a recorded ``judge_error`` naming the reason, not the label the head's
intercepts favour (the issue's trial: every claim ``supported`` 0.87). The check sits where the
probe decides, so a replay of the stored vector decides the same."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.decide.probe_head import ProbeHead
from judge.runs.replay import replay_run
from judge.store import Store
from judge.verdicts import LABELS
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM
from tests.support.openai_server import OpenAIServer

SRC = {"id": "py", "text": "Python 3.11 added the tomllib module. It reads TOML files."}
CLAIMS = ["Python 3.11 added the tomllib module.", "Python 3.10 added tomllib.",
          "tomllib reads TOML files.", "Python 3.11 removed tomllib.",
          "TOML files are read by tomllib.", "Python 2 had tomllib."]
SERVED = "served-7b"
EMBEDDED = "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
#: what an endpoint answers, and what the verdict's error must say
DEGENERATE = [([0.0, 0.0, 0.0], "is all zeros"), ([0.5, 0.5, 0.5], "is constant"),
              ([5000.0, 0.0, 1.0], "far outside the vectors the head was fitted on")]


def leaning_head(tmp_path: Path, served: dict[str, Any] | None) -> dict[str, str]:
    """Reads the fakes' [supported, not_in_source, not_verifiable] vectors, and its
    intercepts favour supported: a vector that says nothing would be supported 0.87."""
    coef = np.zeros((4, 3))
    for k, label in enumerate(("supported", "not_in_source", "not_verifiable")):
        coef[LABELS.index(label), k] = 2.0
    intercept = np.array([2.0 if label == "supported" else 0.0 for label in LABELS])
    about = {"prompt": "probe_claim/v1", **({"served": served} if served else {})}
    path = tmp_path / "leaning.json"
    path.write_text(ProbeHead(tuple(LABELS), np.zeros(3), np.ones(3), coef, intercept, about)
                    .dumps(), encoding="utf-8")
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with OpenAIServer() as s:
        s.served_models = [SERVED]
        s.vector_scale = 5.0  # an unnormalised hidden state
        yield s


def served_config(tmp_path: Path, server: OpenAIServer) -> JudgeConfig:
    kind = {"model": f"openai/{SERVED}", "pooling": "last", "normalized": False}
    return JudgeConfig(
        model="openai/generator", api_base="http://127.0.0.1:9/v1", strategy="probe",
        prompts={"split_claims": "v2"}, backoff_s=0.0, timeout_s=5, retries=0,
        probe_endpoint={"model": f"openai/{SERVED}", "api_base": server.base_url},
        probe_head=leaning_head(tmp_path, kind))


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM) -> FakeLLM:
    """The scripted provider answers for ``embedded/…`` (no model is loaded)."""
    from judge.models import embedded, embedded_provider

    monkeypatch.setattr(embedded_provider, "_HANDLER", fake_llm)
    monkeypatch.setattr(embedded, "unavailable", lambda: None)
    for loads in ("load", "layered_file", "model_file"):
        monkeypatch.setattr(embedded, loads, lambda *args, **kwargs: None)
    return fake_llm


def judged(tmp_path: Path, store: Store, cfg: JudgeConfig) -> dict[str, dict[str, Any]]:
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "a1", "sources": [SRC], "answer": " ".join(CLAIMS), "generator": "other/model",
        "claims": [{"text": c, "citations": ["py"]} for c in CLAIMS]}])
    judge_file(path, config=cfg, db=store)
    return {r["claim"]: r for r in store.verdict_rows()}


def assert_refused(store: Store, rows: dict[str, dict[str, Any]], says: str) -> None:
    assert set(rows) == set(CLAIMS)
    for row in rows.values():
        assert row["label"] == "judge_error" and row["review"] and row["support"] is None
        assert "probe vector refused" in row["error"] and says in row["error"], row["error"]
    # the vectors were read and stored (the call did not fail): the decision refused them
    assert all(c["error"] is None and c["parsed"] for c in store.db.query(
        "select error, parsed from calls"))
    # replay decides from the stored vectors as the run did: the same refusals, no call
    report = replay_run(store, store.runs()[0]["id"])
    assert report.claims == len(CLAIMS) and report.differences == [] and report.clean


@pytest.mark.parametrize(("vector", "says"), DEGENERATE)
def test_a_served_degenerate_vector_is_a_judge_error(
    tmp_path: Path, store: Store, server: OpenAIServer, vector: list[float], says: str
) -> None:
    server.fault("vector", vector=vector, times=0, only="embed")
    rows = judged(tmp_path, store, served_config(tmp_path, server))
    assert len(server.calls("embed")) == len(CLAIMS)
    assert_refused(store, rows, says)


def test_the_served_vectors_of_a_well_server_are_read(
    tmp_path: Path, store: Store, server: OpenAIServer
) -> None:
    """The same head and endpoint without the fault: the head decides (the refusals above are
    the vectors', not the setup's)."""
    rows = judged(tmp_path, store, served_config(tmp_path, server))
    assert rows[CLAIMS[0]]["label"] == "supported"
    assert {r["label"] for r in rows.values()} == {"supported", "not_in_source"}


@pytest.mark.parametrize(("vector", "says"), DEGENERATE)
def test_an_in_process_degenerate_vector_is_a_judge_error(
    tmp_path: Path, store: Store, in_process: FakeLLM, vector: list[float], says: str
) -> None:
    in_process.embedder = lambda text: list(vector)
    cfg = JudgeConfig(model=EMBEDDED, strategy="probe", prompts={"split_claims": "v1"},
                      probe_head=leaning_head(tmp_path, None), retries=0)
    rows = judged(tmp_path, store, cfg)
    assert len(in_process.calls) == len(CLAIMS)
    assert_refused(store, rows, says)
    # once the provider is well again, --retry-errors asks for the vectors again
    in_process.embedder = FakeLLM().embedder
    again = judge_file(tmp_path / "in.jsonl", config=cfg, db=store, retry_errors=True)
    labels = [v.label for r in again for v in r.verdicts]
    assert labels[0] == "supported" and "judge_error" not in labels


def test_a_stored_zero_vector_judged_before_the_check_is_refused_on_replay(
    tmp_path: Path, store: Store, in_process: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written by a version without the check (simulated: the check off) holds
    ``supported`` verdicts decided by the intercepts from all-zero vectors; replaying them
    now re-derives ``judge_error`` and reports every one as a difference."""
    in_process.embedder = lambda text: [0.0, 0.0, 0.0]
    cfg = JudgeConfig(model=EMBEDDED, strategy="probe", prompts={"split_claims": "v1"},
                      probe_head=leaning_head(tmp_path, None), retries=0)
    with monkeypatch.context() as off:
        off.setattr(ProbeHead, "refusal", lambda self, vector, text=None: None)
        rows = judged(tmp_path, store, cfg)
    assert {r["label"] for r in rows.values()} == {"supported"}  # the finding
    in_process.calls.clear()
    report = replay_run(store, store.runs()[0]["id"])
    assert not in_process.calls
    labels = [(d["stored"], d["replayed"]) for d in report.differences if d["field"] == "label"]
    assert labels == [("supported", "judge_error")] * len(CLAIMS)
    errors = [d["replayed"] for d in report.differences if d["field"] == "error"]
    assert len(errors) == len(CLAIMS) and all("is all zeros" in e for e in errors)
