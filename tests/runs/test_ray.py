"""The Ray executor: a local Ray cluster (2 CPUs) judges a batch with two workers, each with
its own model client, against a real OpenAI-compatible server on 127.0.0.1; the verdicts are
the ones a local run gives, the driver alone writes the store (a re-run makes no call), and
the workers keep an even share of the rate limits."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_answers
from judge.config import JudgeConfig
from tests.conftest import skip_or_fail
from tests.support.openai_server import OpenAIServer

pytestmark = skip_or_fail(
    importlib.util.find_spec("ray") is None,
    "needs Ray (pip install 'claim-judge[ray]'; make test installs it)",
    "CLAIM_JUDGE_REQUIRE_RAY",
)

SOURCES = [{"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."},
           {"id": "S2", "text": "Tokens expire after one hour."}]


def records(n: int) -> list[dict[str, Any]]:
    return [{"id": f"a{i:02d}",
             "answer": f"401 means unauthenticated [S1]. Tokens expire after {i} hours [S2].",
             "sources": SOURCES} for i in range(n)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local cluster; its workers get the provider's key from the environment they start
    in, as the nodes of a real cluster do."""
    import ray

    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "sk-test"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
        if saved is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = saved


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv


def verdicts(results: Any) -> list[list[tuple[Any, ...]]]:
    return [[(v.claim_id, v.label, v.subtype, [e.model_dump() for e in v.evidence],
              v.review_reasons, v.judge_version) for v in r.verdicts] for r in results]


def test_a_ray_run_gives_the_verdicts_of_a_local_run(
    cluster: None, server: OpenAIServer, tmp_path: Path
) -> None:
    config = JudgeConfig(model="openai/judge-model", api_base=server.base_url, concurrency=2,
                         retries=0)
    batch = records(8)
    local = judge_answers(batch, config=config, db=tmp_path / "local.db")
    made_locally = len(server.calls())
    spread = judge_answers(batch, config=config, db=tmp_path / "ray.db", executor="ray",
                           workers=2)
    assert verdicts(spread) == verdicts(local)
    assert len(server.calls()) == 2 * made_locally  # every call made again, once
    summary = spread.summary
    assert summary.answers_judged_now == 8 and summary.model_calls == made_locally
    assert summary.claims == 16 and summary.judge_errors == 0

    again = judge_answers(batch, config=config, db=tmp_path / "ray.db", executor="ray",
                          workers=2)
    assert again.summary.model_calls == 0 and again.summary.answers_from_store == 8
    assert verdicts(again) == verdicts(local)


def test_workers_reuse_the_calls_an_interrupted_run_stored(
    cluster: None, server: OpenAIServer, tmp_path: Path
) -> None:
    config = JudgeConfig(model="openai/judge-model", api_base=server.base_url, retries=0)
    db = tmp_path / "j.db"
    judge_answers(records(3), config=config, db=db)  # the calls of a1..a3 are stored
    before = len(server.calls())
    more = judge_answers(records(4), config=config, db=db, executor="ray", workers=2)
    assert more.summary.answers_from_store == 3
    # only the new answer is judged, and its calls are new
    assert len(server.calls()) - before == more.summary.model_calls > 0


def test_each_worker_keeps_an_even_share_of_the_rate_limits() -> None:
    from judge.runs.ray_executor import JudgeWorker

    config = JudgeConfig(model="openai/judge-model", rpm=120, tpm=60_000)
    worker = JudgeWorker(config.share(2).model_dump_json(), None)
    limiter = worker.pipeline.client.flow.rate
    assert limiter.requests is not None and limiter.requests.capacity == 60
    assert limiter.tokens is not None and limiter.tokens.capacity == 30_000


def test_workers_read_the_vectors_of_a_served_probe_from_its_endpoint(
    cluster: None, server: OpenAIServer, tmp_path: Path
) -> None:
    """Strategy ``probe`` with ``probe_endpoint``: the workers ask the shared endpoint for the
    vectors (nothing in process: no worker loads a model), the generating model is never
    asked (given claims), and the driver alone stores the calls: a re-run makes none."""
    import hashlib

    import numpy as np

    from judge.decide.probe_head import ProbeHead
    from judge.verdicts import LABELS

    server.served_models = ["served-7b"]
    server.vector_scale = 5.0
    kind = {"model": "openai/served-7b", "pooling": "last", "normalized": False}
    coef = np.zeros((4, 3))
    coef[LABELS.index("supported"), 0] = coef[LABELS.index("not_in_source"), 1] = 2.0
    head = tmp_path / "head.json"
    head.write_text(ProbeHead(tuple(LABELS), np.zeros(3), np.ones(3), coef, np.zeros(4),
                              {"served": kind, "prompt": "probe_claim/v1"}).dumps(),
                    encoding="utf-8")
    config = JudgeConfig(
        model="openai/generator", api_base=server.base_url, strategy="probe",
        prompts={"split_claims": "v2"}, retries=0, concurrency=2,
        probe_head={"file": str(head), "sha256": hashlib.sha256(head.read_bytes()).hexdigest()},
        probe_endpoint={"model": "openai/served-7b", "api_base": server.base_url})
    given = [{**r, "claims": [{"text": "401 means unauthenticated.", "citations": ["S1"]},
                              {"text": f"Tokens expire after {i} hours.", "citations": ["S2"]}]}
             for i, r in enumerate(records(6))]
    spread = judge_answers(given, config=config, db=tmp_path / "ray.db", executor="ray",
                           workers=2)
    assert spread.summary.judge_errors == 0 and spread.summary.claims == 12
    assert [v.label for r in spread for v in r.verdicts] == ["supported", "not_in_source"] * 6
    made = len(server.calls("embed"))
    assert made == spread.summary.model_calls >= 7  # the first claim is the same prompt 6 times
    assert len(server.calls()) == made  # vectors only: no generation
    again = judge_answers(given, config=config, db=tmp_path / "ray.db", executor="ray",
                          workers=2)
    assert again.summary.model_calls == 0 and len(server.calls()) == made
