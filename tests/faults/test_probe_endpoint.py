"""Strategy ``probe`` with ``probe_endpoint``: the vectors come from a served model's embeddings
endpoint (a real HTTP server on 127.0.0.1, litellm's OpenAI path), beside the generating model.
What the endpoint answers is checked (the model it lists and answers as, the normalisation), a
head fitted on another kind of vector is refused before any call, the rate limits apply to the
vector calls, and replay makes none. The real llama.cpp server: tests/models/test_served_probe.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.decide.probe_head import ProbeHead, ProbeHeadError
from judge.runs.replay import replay_run
from judge.store import Store
from judge.verdicts import LABELS
from tests.conftest import write_jsonl
from tests.faults.test_probe_http import GOOD, OTHER, SRC, judge
from tests.support.openai_server import OpenAIServer

SERVED = "served-7b"
KIND = {"model": f"openai/{SERVED}", "pooling": "last", "normalized": False}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with OpenAIServer() as s:
        s.served_models = [SERVED]
        s.vector_scale = 5.0  # an unnormalised hidden state
        yield s


def head_file(tmp_path: Path, served: dict[str, Any] | None, name: str = "head") -> dict[str, str]:
    """A head reading [supported, not_in_source, not_verifiable] off the fake's vectors,
    fitted (as ``about`` says) on ``served``'s vectors, or in process when None."""
    coef = np.zeros((4, 3))
    coef[LABELS.index("supported"), 0] = 2.0
    coef[LABELS.index("not_in_source"), 1] = 2.0
    coef[LABELS.index("not_verifiable"), 2] = 2.0
    about = {"name": name, "prompt": "probe_claim/v1", **({"served": served} if served else {})}
    path = tmp_path / f"{name}.json"
    path.write_text(ProbeHead(tuple(LABELS), np.zeros(3), np.ones(3), coef, np.zeros(4), about)
                    .dumps(), encoding="utf-8")
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def config(tmp_path: Path, server: OpenAIServer, *, endpoint: dict[str, Any] | None = None,
           head: dict[str, str] | None = None, **extra: Any) -> JudgeConfig:
    endpoint = {"model": f"openai/{SERVED}", "api_base": server.base_url, **(endpoint or {})}
    kind = {k: v for k, v in {**KIND, **endpoint}.items() if k != "api_base"}
    return JudgeConfig(
        # the generating model: a server that is not there (given claims need no split)
        model="openai/generator", api_base="http://127.0.0.1:9/v1", strategy="probe",
        prompts={"split_claims": "v2"}, probe_endpoint=endpoint,
        probe_head=head or head_file(tmp_path, kind), backoff_s=0.0, timeout_s=5,
        retries=extra.pop("retries", 0), **extra)


def test_the_vectors_come_from_the_endpoint_unnormalised_and_replay_makes_no_call(
    tmp_path: Path, store: Store, server: OpenAIServer
) -> None:
    cfg = config(tmp_path, server)
    rows = judge(tmp_path, store, cfg, [GOOD, OTHER])
    assert rows[GOOD]["label"] == "supported" and rows[OTHER]["label"] == "not_in_source"
    embeds = server.calls("embed")
    assert len(embeds) == 2 and len(server.calls()) == 2  # no generation call
    assert {r["model"] for r in embeds} == {SERVED}
    assert all(r["body"]["embd_normalize"] == -1 for r in embeds)  # unnormalised, asked for
    calls = list(store.db.query("select model_sent, params from calls"))
    assert {c["model_sent"] for c in calls} == {f"openai/{SERVED}"}
    assert all('"normalized": false' in c["params"] for c in calls)

    again = judge_file(tmp_path / "in.jsonl", config=cfg, db=store)  # the same answer
    assert again.summary.model_calls == 0 and len(server.calls()) == 2
    # `judge replay`: a client that never calls re-derives every verdict from the store
    report = replay_run(store, store.runs()[0]["id"])
    assert report.claims == 2 and report.differences == [] and report.missing_calls == []
    assert len(server.calls()) == 2


def test_the_endpoints_address_is_not_part_of_a_calls_identity(
    tmp_path: Path, store: Store, server: OpenAIServer
) -> None:
    judge(tmp_path, store, config(tmp_path, server), [GOOD])
    with OpenAIServer() as moved:  # the same model behind another address: stored calls serve
        moved.served_models = [SERVED]
        rows = judge(tmp_path, store, config(tmp_path, server, endpoint={
            "api_base": moved.base_url}), [GOOD])
        assert rows[GOOD]["label"] == "supported" and moved.calls() == []


@pytest.mark.parametrize(("setup", "says"), [
    # a server that normalises although unnormalised vectors were asked for
    ({"vector_scale": 1.0}, "L2-normalised vector"),
    # the config says normalised, the server's vectors are not
    ({"endpoint": {"normalized": True}}, "norm 5"),
    # the server does not serve the pinned model
    ({"served_models": ["another-7b"]}, "serves ['another-7b'], not 'served-7b'"),
    # it answers as another model
    ({"fault": {"kind": "model", "model": "another-7b"}}, "answered as 'another-7b'"),
    # it is not there
    ({"endpoint": {"api_base": "http://127.0.0.1:9/v1"}},
     "could not list the models of the embeddings endpoint at http://127.0.0.1:9/v1"),
])
def test_vectors_the_config_does_not_read_fail_closed(
    tmp_path: Path, store: Store, server: OpenAIServer, setup: dict[str, Any], says: str
) -> None:
    if "vector_scale" in setup:
        server.vector_scale = setup["vector_scale"]
    if "served_models" in setup:
        server.served_models = setup["served_models"]
    if "fault" in setup:
        server.fault(**setup["fault"], times=0)
    rows = judge(tmp_path, store, config(tmp_path, server, endpoint=setup.get("endpoint")),
                 [GOOD])
    row = rows[GOOD]
    assert row["label"] == "judge_error" and row["review"]
    assert says in row["error"]
    if "served_models" in setup:
        assert server.calls("embed") == []  # refused before asking for a vector
    stored = list(store.db.query("select error, parsed from calls"))
    assert len(stored) == 1 and says in stored[0]["error"] and stored[0]["parsed"] is None


def test_a_normalised_endpoint_is_read_as_one(
    tmp_path: Path, store: Store, server: OpenAIServer
) -> None:
    server.vector_scale = 1.0
    rows = judge(tmp_path, store, config(tmp_path, server, endpoint={"normalized": True}),
                 [GOOD])
    assert rows[GOOD]["label"] == "supported"
    assert "embd_normalize" not in server.calls("embed")[0]["body"]


@pytest.mark.parametrize(("fitted_on", "says"), [
    (None, "fitted on the vectors of the model read in process"),
    ({**KIND, "model": "openai/another-7b"}, "of the served model 'openai/another-7b'"),
    ({**KIND, "normalized": True}, "fitted on the L2-normalised vectors"),
])
def test_a_head_of_another_kind_is_refused_before_any_call(
    tmp_path: Path, store: Store, server: OpenAIServer, fitted_on: dict[str, Any] | None,
    says: str
) -> None:
    cfg = config(tmp_path, server, head=head_file(tmp_path, fitted_on))
    with pytest.raises(ProbeHeadError, match=says) as raised:
        judge(tmp_path, store, cfg, [GOOD])
    assert "judge fit" in str(raised.value) and "served model 'openai/served-7b'" in str(
        raised.value)
    assert server.calls() == []


def test_a_served_head_is_refused_in_process(tmp_path: Path) -> None:
    from judge.decide.probe import ProbeStrategy

    cfg = JudgeConfig(model="fake/x", strategy="probe", prompts={"split_claims": "v2"},
                      probe_head=head_file(tmp_path, KIND))
    with pytest.raises(ProbeHeadError, match="fitted on the unnormalised vectors .* of the "
                                             "served model 'openai/served-7b'.*in process"):
        ProbeStrategy(cfg, None, None)


def test_the_endpoints_model_is_a_judge_for_the_self_grading_ban(
    tmp_path: Path, store: Store, server: OpenAIServer
) -> None:
    cfg = config(tmp_path, server, endpoint={"model": "openai/qwen2.5-72b-instruct"})
    server.served_models = ["qwen2.5-72b-instruct"]
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "a1", "sources": [SRC], "answer": GOOD, "generator": "Qwen/Qwen2.5-7B-Instruct",
        "claims": [{"text": GOOD, "citations": ["py"]}]}])
    results = judge_file(path, config=cfg, db=store)
    assert results.summary.refused_answers and server.calls() == []


def test_the_rate_limits_apply_to_the_vector_calls(
    tmp_path: Path, server: OpenAIServer
) -> None:
    from judge.models.client import ModelClient
    from judge.models.prompts import RenderedPrompt

    cfg = config(tmp_path, server, rpm=60)
    client = ModelClient(cfg, None)
    bucket = client.flow.rate.requests
    assert bucket is not None and bucket.capacity == 60

    async def three() -> None:
        for n in range(3):
            prompt = RenderedPrompt("probe_claim", "v1", "0" * 64,
                                    [{"role": "user", "content": f"Claim: {n}"}])
            await client.embed(prompt, "probe", None)

    started = time.monotonic()
    asyncio.run(three())
    refilled = (time.monotonic() - started) * bucket.rate
    bucket._refill()
    assert len(server.calls("embed")) == 3
    assert bucket.level <= 60 - 3 + refilled + 1e-6


def test_probe_endpoint_settings_are_checked() -> None:
    base = {"model": "openai/gen", "strategy": "probe", "prompts": {"split_claims": "v2"},
            "probe_head": {"file": "builtin:uniform", "sha256": "ab" * 32}}
    endpoint = {"model": "openai/served", "api_base": "http://127.0.0.1:1/v1"}
    with pytest.raises(ValueError, match="needs strategy 'probe'"):
        JudgeConfig.model_validate({"model": "openai/gen", "probe_endpoint": endpoint})
    with pytest.raises(ValueError, match="leave probe_layers out"):
        JudgeConfig.model_validate({**base, "model": "embedded/x", "probe_layers": 21,
                                    "probe_endpoint": endpoint})
    with pytest.raises(ValueError, match="need no endpoint"):
        JudgeConfig.model_validate({**base, "probe_endpoint": {"model": "embedded/x"}})
    with pytest.raises(ValueError, match="not a litellm model string"):
        JudgeConfig.model_validate({**base, "probe_endpoint": {"model": "served"}})
    with pytest.raises(ValueError, match="pooling"):
        JudgeConfig.model_validate({**base, "probe_endpoint": {**endpoint, "pooling": "mean"}})
