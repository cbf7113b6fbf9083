"""Strategy ``probe`` over a served model, for real: llama.cpp's server in a process of its own
(tests/support/llama_server.py: the packaged GGUF, ``--embeddings --pooling last``, on
127.0.0.1) gives the vectors over HTTP through litellm (``probe_endpoint``), and the same 50
human-labelled claims are read in process (the embedded provider, last layer). The vectors
agree within a stated tolerance; heads fitted on each (``judge fit``, zero calls) give the
same labels; replay makes no call; a head of the other kind is refused before any call.

The 50 claims: the shortest of each label in research/tuning_subset.jsonl (15 supported, 15
not_in_source, 10 contradicted, 10 not_verifiable), so each costs about a second a side.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import skip_or_fail

pytestmark = [
    pytest.mark.served,
    pytest.mark.embedded,
    skip_or_fail(importlib.util.find_spec("xllamacpp") is None,
                 "the 'embedded' extra is not installed", "CLAIM_JUDGE_REQUIRE_EMBEDDED"),
]

ROOT = Path(__file__).resolve().parents[2]
ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"
UNIFORM = {"file": "builtin:uniform",
           "sha256": "a69ab0b9de353d7ab1a80b2caf53b8e22586f9e2b74d2890e6c6f4f04f865d41"}
PER_LABEL = {"supported": 15, "not_in_source": 15, "contradicted": 10, "not_verifiable": 10}
#: the largest difference of one component, relative to the vector's largest component,
#: allowed between the served and the in-process vector of a claim (both float16): about
#: float16's resolution. Measured: 0 on all 50 claims (the same llama.cpp on the same weights
#: gives the same numbers; docs/probe.md#what-was-measured)
VECTOR_TOLERANCE = 1e-3


def _gold(path: Path) -> Path:
    items = [json.loads(line) for line in
             (ROOT / "research" / "tuning_subset.jsonl").read_text(encoding="utf-8").splitlines()]

    def size(item: dict[str, Any]) -> tuple[int, str]:
        return (min(len(item["sources"][0]["text"]), 500) + len(item["claim"]), item["id"])

    chosen = [item for label, n in PER_LABEL.items()
              for item in sorted((i for i in items if i["label"] == label), key=size)[:n]]
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in chosen),
                    encoding="utf-8")
    return path


def _start_server(model: Path) -> tuple[subprocess.Popen[str], str]:
    threads = os.environ.get("CLAIM_JUDGE_THREADS", str(len(os.sched_getaffinity(0))))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.llama_server", str(model), "--alias", ALIAS,
         "--port", "0", "--threads", threads],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # printed once the model is loaded
    if not line.startswith("ADDRESS "):
        proc.kill()
        pytest.fail(f"llama.cpp's server did not start: {line!r}")
    return proc, line.split()[1]


@dataclass
class Runs:
    gold: Path
    db: Path
    served: dict[str, Any]
    local: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)


def _config(data: dict[str, Any]) -> Any:
    from judge.config import JudgeConfig

    return JudgeConfig.model_validate(data)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """The 50 claims judged once through the server (then stopped) and once in process."""
    from judge.api import eval_gold
    from judge.models.embedded import EMBEDDED_MODEL, model_file

    folder = tmp_path_factory.mktemp("served")
    gold, db = _gold(folder / "gold.jsonl"), folder / "judge.db"
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "none"  # the server asks for no key; litellm wants one
    proc, address = _start_server(model_file())
    served = {"model": "openai/generator-not-called", "api_base": "http://127.0.0.1:9/v1",
              "strategy": "probe", "prompts": {"split_claims": "v2", "probe_claim": "v1"}, "probe_head": UNIFORM,
              "probe_endpoint": {"model": f"openai/{ALIAS}", "api_base": f"{address}/v1"}}
    local = {"model": EMBEDDED_MODEL, "strategy": "probe", "prompts": {"split_claims": "v2", "probe_claim": "v1"},
             "probe_head": UNIFORM}
    out = Runs(gold, db, served, local)
    try:
        started = time.perf_counter()
        result = eval_gold(gold, config=_config(served), db=db)
        out.seconds["served"] = time.perf_counter() - started
        out.calls["served"] = result.summary.model_calls
        out.versions["served"] = result.summary.judge_version
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if saved is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = saved
    started = time.perf_counter()
    result = eval_gold(gold, config=_config(local), db=db)
    out.seconds["local"] = time.perf_counter() - started
    out.calls["local"] = result.summary.model_calls
    out.versions["local"] = result.summary.judge_version
    print(f"\nserved: {out.seconds['served']:.1f} s, in process: {out.seconds['local']:.1f} s "
          f"for {sum(PER_LABEL.values())} claims")
    yield out


def _vectors(db: Path, version: str) -> dict[str, np.ndarray]:
    """claim id -> the float16 vector its verdict was decided from."""
    from judge.models.vectors import stored_vector

    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    out = {}
    for row in con.execute("select claim_id, call_ids from verdicts where judge_version = ?",
                           (version,)):
        call = con.execute("select * from calls where id = ?",
                           (json.loads(row["call_ids"])[-1],)).fetchone()
        vector = stored_vector(dict(call))
        assert vector is not None, dict(call)["error"]
        out[row["claim_id"]] = vector.astype(np.float64)
    con.close()
    return out


def _labels(db: Path, version: str) -> dict[str, str]:
    con = sqlite3.connect(db)
    rows = dict(con.execute("select claim_id, label from verdicts where judge_version = ?",
                            (version,)).fetchall())
    con.close()
    return rows


def test_the_served_vectors_are_the_in_process_last_layer_vectors(runs: Runs) -> None:
    served, local = _vectors(runs.db, runs.versions["served"]), _vectors(runs.db,
                                                                          runs.versions["local"])
    assert runs.calls == {"served": 50, "local": 50}
    assert len(served) == 50 and set(served) == set(local)
    worst = max(float(np.max(np.abs(served[c] - local[c])) / np.max(np.abs(local[c])))
                for c in served)
    norms = [float(np.linalg.norm(served[c])) for c in served]
    print(f"\nlargest component difference / largest component: {worst:.2e}; "
          f"norms {min(norms):.1f} to {max(norms):.1f} (unnormalised)")
    assert worst <= VECTOR_TOLERANCE
    assert min(norms) > 2  # asked for unnormalised, got unnormalised


def test_heads_fitted_on_each_give_the_same_labels_with_zero_calls(runs: Runs) -> None:
    from judge.api import eval_gold, fit
    from judge.config import JudgeConfig
    from judge.decide.probe_head import load_head

    labels, heads = {}, {}
    for side in ("served", "local"):
        output = runs.gold.parent / f"{side}.toml"
        result = fit(runs.gold, db=runs.db, output=output, judge_version=runs.versions[side],
                     holdout=0.0)
        assert result.model_calls == 0
        candidate = JudgeConfig.load(output)
        heads[side] = load_head(candidate.probe_head.file, candidate.probe_head.sha256,
                                output.parent)
        judged = eval_gold(runs.gold, config=candidate, db=runs.db)
        assert judged.summary.model_calls == 0  # replayed from the stored vectors
        labels[side] = _labels(runs.db, judged.summary.judge_version)
    assert heads["served"].about["served"] == {"model": f"openai/{ALIAS}", "pooling": "last",
                                               "normalized": False}
    assert "served" not in heads["local"].about
    assert len(labels["served"]) == 50
    differ = {c for c in labels["served"] if labels["served"][c] != labels["local"][c]}
    assert differ == set()
    assert len(set(labels["served"].values())) > 1  # the heads decide, not a constant


def test_replay_of_the_served_run_makes_no_call(runs: Runs) -> None:
    from judge.api import eval_gold

    # the server is gone: only the store can answer
    again = eval_gold(runs.gold, config=_config(runs.served), db=runs.db)
    assert again.summary.model_calls == 0
    assert again.summary.judge_version == runs.versions["served"]


def test_a_head_of_the_other_kind_is_refused_before_any_call(runs: Runs) -> None:
    from judge.api import eval_gold
    from judge.decide.probe_head import ProbeHeadError

    fitted_local = runs.gold.parent / "local.toml"
    if not fitted_local.exists():
        pytest.skip("needs the heads of the fit test")
    from judge.config import JudgeConfig

    local_head = JudgeConfig.load(fitted_local).probe_head
    assert local_head is not None
    head = {"file": str(fitted_local.parent / local_head.file), "sha256": local_head.sha256}
    with pytest.raises(ProbeHeadError, match="fitted on the vectors of the model read in "
                                             "process.*judge fit"):
        eval_gold(runs.gold, config=_config({**runs.served, "probe_head": head}), db=runs.db)
