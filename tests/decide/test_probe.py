"""Strategy ``probe``: the hidden state of one forward pass per claim, stored as float16 with
the call, and a versioned head (file + sha256) that maps it to the labels; replay and refits
need no model call, and whatever the provider or the head cannot give fails closed."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from judge.api import judge_file
from judge.config import JudgeConfig, load_config
from judge.decide.probe_head import ProbeHead, ProbeHeadError, canonical, load_head
from judge.fitting.run import version_of
from judge.models.vectors import as_f16, decode, encode, stored_vector
from judge.runs.replay import replay_run
from judge.store import Store
from judge.verdicts import LABELS
from tests.conftest import write_jsonl
from tests.fakes import EMBED, FakeLLM

SRC = {"id": "py", "text": "Python 3.11 added the tomllib module. It reads TOML files."}
GOOD = "Python 3.11 added the tomllib module."
OTHER = "Python 3.10 added tomllib."
CHAT = "I love writing Python on rainy days."


def toy_head(about: dict[str, Any] | None = None) -> ProbeHead:
    """Reads the fake provider's 3-number vectors: component 0 -> supported, 1 ->
    not_in_source, 2 -> not_verifiable (scale 1, mean 0, so the weights act on them as is).
    It records the prompt its vectors are read with (probe_claim v1 unless ``about`` says)."""
    coef = np.zeros((4, 3))
    coef[LABELS.index("supported"), 0] = 6.0
    coef[LABELS.index("not_in_source"), 1] = 6.0
    coef[LABELS.index("not_verifiable"), 2] = 6.0
    return ProbeHead(tuple(LABELS), np.zeros(3), np.ones(3), coef, np.zeros(4),
                     {"prompt": "probe_claim/v1", **(about or {})})


def write_head(folder: Path, head: ProbeHead, name: str = "head.json") -> dict[str, str]:
    path = folder / name
    path.write_text(head.dumps(), encoding="utf-8")
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def probe_config(tmp_path: Path, **extra: Any) -> JudgeConfig:
    extra.setdefault("probe_head", write_head(tmp_path, toy_head()))
    extra.setdefault("prompts", {"split_claims": "v1"})
    return JudgeConfig(model="fake/judge-model", strategy="probe", **extra)


def batch(tmp_path: Path, claims: list[str]) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [{
        "id": "p", "sources": [SRC], "answer": " ".join(claims), "generator": "other/model",
        "claims": [{"text": c, "citations": ["py"]} for c in claims]}])


def test_vectors_round_trip_as_float16_and_impossible_ones_are_refused() -> None:
    v = as_f16([0.1, -2.5, 300.25])
    assert v.dtype == np.float16
    assert np.array_equal(decode(encode(v)), v)
    assert np.array_equal(stored_vector({"error": None, "parsed": json.dumps(encode(v))}), v)
    assert stored_vector({"error": "boom", "parsed": json.dumps(encode(v))}) is None
    for bad in ([], [1.0, math.nan], [math.inf], [1e6], ["x"]):
        with pytest.raises(ValueError):
            as_f16(bad)


def test_probe_labels_from_the_head_store_vectors_and_replay_with_no_call(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    config = probe_config(tmp_path)
    summary = judge_file(batch(tmp_path, [GOOD, OTHER, CHAT]), config=config, db=store).summary
    assert {c["schema"] for c in fake_llm.calls} == {EMBED}
    assert summary.model_calls == 3
    rows = {r["claim"]: r for r in store.verdict_rows()}
    assert rows[GOOD]["label"] == "supported" and rows[GOOD]["support"] > 0.9
    assert rows[OTHER]["label"] == "not_in_source" and rows[OTHER]["support"] < 0.1
    assert rows[CHAT]["label"] == "not_verifiable"
    assert "probe head" in rows[GOOD]["rationale"]
    # the evidence is what the program located (found by construction), not model-quoted
    assert rows[GOOD]["evidence"][0]["source_id"] == "py"
    calls = list(store.db.query("select parsed, template from calls"))
    assert {c["template"] for c in calls} == {"probe_claim"}
    assert all(json.loads(c["parsed"])["dim"] == 3 for c in calls)
    # the same batch again: every vector comes from the store
    fake_llm.calls.clear()
    again = judge_file(batch(tmp_path, [GOOD, OTHER, CHAT]), config=config, db=store).summary
    assert again.model_calls == 0 and not fake_llm.calls
    # replay re-derives every verdict from the stored vectors
    report = replay_run(store, summary.run_id)
    assert report.clean and report.claims == 3 and not report.missing_calls
    assert not fake_llm.calls


def test_a_provider_without_a_vector_or_with_nan_fails_closed(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    fake_llm.embedder = lambda text: [math.nan, 0.0, 0.0]
    judge_file(batch(tmp_path, [GOOD]), config=probe_config(tmp_path), db=store)
    row = next(store.verdict_rows())
    assert row["label"] == "judge_error" and row["review"]
    assert "NaN" in row["error"]
    fake_llm.embedder = lambda text: RuntimeError("provider down")
    judge_file(batch(tmp_path, [OTHER]), config=probe_config(tmp_path, retries=0), db=store)
    assert {r["label"] for r in store.verdict_rows()} == {"judge_error"}


def test_a_head_for_another_model_fails_closed(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    head = ProbeHead(tuple(LABELS), np.zeros(5), np.ones(5), np.zeros((4, 5)), np.zeros(4),
                     {"prompt": "probe_claim/v1"})
    config = probe_config(tmp_path, probe_head=write_head(tmp_path, head, "five.json"))
    judge_file(batch(tmp_path, [GOOD]), config=config, db=store)
    row = next(store.verdict_rows())
    assert row["label"] == "judge_error" and "5 numbers" in row["error"]


def test_the_head_is_pinned_by_sha256_and_is_part_of_the_version(tmp_path: Path) -> None:
    ref = write_head(tmp_path, toy_head())
    config = probe_config(tmp_path, probe_head=ref)
    assert config.prompts["probe_claim"] == "v1"
    # the head's content is the identity, not where the file lies
    moved = tmp_path / "moved.json"
    moved.write_bytes(Path(ref["file"]).read_bytes())
    assert version_of(probe_config(tmp_path, probe_head={**ref, "file": str(moved)})) \
        == version_of(config)
    other = write_head(tmp_path, toy_head({"note": "refit"}), "other.json")
    assert version_of(probe_config(tmp_path, probe_head=other)) != version_of(config)
    # an altered file is refused, naming both hashes
    Path(ref["file"]).write_text(toy_head({"edited": True}).dumps(), encoding="utf-8")
    with pytest.raises(ProbeHeadError, match="the file changed"):
        load_head(ref["file"], ref["sha256"])


def test_config_errors_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="needs a head"):
        JudgeConfig(model="fake/m", strategy="probe")
    with pytest.raises(ValidationError, match="needs strategy 'probe'"):
        JudgeConfig(model="fake/m", strategy="batch", probe_head=write_head(tmp_path, toy_head()))
    with pytest.raises(ValidationError, match="64 hexadecimal"):
        JudgeConfig(model="fake/m", strategy="probe",
                    probe_head={"file": "x.json", "sha256": "abc"})


def test_a_relative_head_file_is_read_beside_the_config(tmp_path: Path) -> None:
    ref = write_head(tmp_path, toy_head(), "h.json")
    toml = tmp_path / "judge.toml"
    toml.write_text(f'[judge]\nmodel = "fake/m"\nstrategy = "probe"\n'
                    f'probe_head = {{ file = "h.json", sha256 = "{ref["sha256"]}" }}\n',
                    encoding="utf-8")
    config = load_config(toml)
    assert config.probe_head is not None and Path(config.probe_head.file) == tmp_path / "h.json"
    assert load_head(config.probe_head.file, config.probe_head.sha256).dim == 3


def test_canonical_head_is_what_its_file_holds(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    head = ProbeHead(tuple(LABELS), rng.normal(size=7), rng.uniform(0.5, 2, 7),
                     rng.normal(size=(4, 7)), rng.normal(size=4))
    same, sha = canonical(head)
    path = tmp_path / "c.json"
    path.write_text(head.dumps(), encoding="utf-8")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha
    x = rng.normal(size=(5, 7))
    assert np.array_equal(same.probabilities(x),
                          load_head(str(path), sha).probabilities(x))
