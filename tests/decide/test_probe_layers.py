"""``probe_layers``: the probe reads the hidden state after the model's first N blocks. The
setting is part of the judge version and of each call's identity (a vector of one layer is
never served for another), reaches the embedded provider as ``layers``, and a head is refused
by a config that reads another layer than the one it was fitted on; ``judge fit`` records the
layer in the heads it writes. The embedded provider's handler is replaced by the scripted one
(the network edge of these tests); the real model's layers are in test_embedded_probe.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from judge.api import eval_gold, fit, judge_file
from judge.config import JudgeConfig
from judge.decide.probe_head import ProbeHeadError, load_head
from judge.fitting.run import version_of
from judge.store import Store
from tests.decide.test_probe import CHAT, GOOD, OTHER, batch, toy_head, write_head
from tests.fakes import FakeLLM
from tests.fit.synthetic import gold_items, label_embedder, write_gold

MODEL = "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
UNIFORM = {"file": "builtin:uniform",
           "sha256": "a69ab0b9de353d7ab1a80b2caf53b8e22586f9e2b74d2890e6c6f4f04f865d41"}


@pytest.fixture
def embedded_fake(monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM) -> FakeLLM:
    """The scripted provider answers for ``embedded/...`` (no model is found, verified or
    loaded: the run's check that it loads is the scripted model's too)."""
    from judge.models import embedded, embedded_provider

    monkeypatch.setattr(embedded_provider, "_HANDLER", fake_llm)
    monkeypatch.setattr(embedded, "unavailable", lambda: None)
    for loads in ("load", "layered_file", "model_file"):
        monkeypatch.setattr(embedded, loads, lambda *args, **kwargs: None)
    return fake_llm


def layered(tmp_path: Path, layers: int | None, head_layers: int | None = None,
            **extra: Any) -> JudgeConfig:
    about = {} if head_layers is None else {"layers": head_layers}
    extra.setdefault("probe_head", write_head(tmp_path, toy_head(about),
                                              f"head-{head_layers}.json"))
    return JudgeConfig(model=MODEL, strategy="probe", prompts={"split_claims": "v1"},
                       probe_layers=layers, **extra)


def test_probe_layers_is_versioned_and_checked(tmp_path: Path) -> None:
    last = layered(tmp_path, None)
    sixteen = layered(tmp_path, 16, 16)
    assert "probe_layers" not in last.versioned_fields()  # as before the setting existed
    assert version_of(sixteen) != version_of(layered(tmp_path, 17, 16))
    with pytest.raises(ValidationError, match="needs strategy 'probe'"):
        JudgeConfig(model=MODEL, strategy="scores", probe_layers=16)
    with pytest.raises(ValidationError, match="needs the embedded provider"):
        JudgeConfig(model="openai/gpt-4o-mini", strategy="probe", probe_head=UNIFORM,
                    probe_layers=16)
    with pytest.raises(ValidationError):
        layered(tmp_path, 0)


def test_the_layer_reaches_the_provider_and_names_the_call(
    tmp_path: Path, store: Store, embedded_fake: FakeLLM
) -> None:
    summary = judge_file(batch(tmp_path, [GOOD, OTHER, CHAT]), config=layered(tmp_path, 16, 16),
                         db=store).summary
    assert summary.model_calls == 3
    assert [c["params"].get("layers") for c in embedded_fake.calls] == [16, 16, 16]
    rows = {r["claim"]: r for r in store.verdict_rows()}
    assert rows[GOOD]["label"] == "supported" and rows[OTHER]["label"] == "not_in_source"
    assert {json.loads(r["params"])["layers"] for r in store.db.query(
        "select params from calls")} == {16}
    # the last layer's vectors are other vectors: asked for again, never read from the store
    embedded_fake.calls.clear()
    judge_file(batch(tmp_path, [GOOD, OTHER, CHAT]), config=layered(tmp_path, None), db=store)
    assert len(embedded_fake.calls) == 3
    assert all("layers" not in c["params"] for c in embedded_fake.calls)


def test_a_head_of_another_layer_is_refused_naming_the_fix(
    tmp_path: Path, store: Store, embedded_fake: FakeLLM
) -> None:
    for layers, head_layers in ((16, None), (None, 16), (16, 20)):
        with pytest.raises(ProbeHeadError, match="probe_layers"):
            judge_file(batch(tmp_path, [GOOD]), db=store,
                       config=layered(tmp_path, layers, head_layers))
    assert not embedded_fake.calls  # refused before any call
    # the uniform head reads no number: the head to collect a layer's vectors with
    judge_file(batch(tmp_path, [GOOD]), config=layered(tmp_path, 16, probe_head=UNIFORM),
               db=store)
    assert [c["params"].get("layers") for c in embedded_fake.calls] == [16]


def test_a_head_of_another_prompt_is_refused_naming_the_fix(
    tmp_path: Path, store: Store, embedded_fake: FakeLLM
) -> None:
    head = write_head(tmp_path, toy_head({"prompt": "probe_claim/v2"}), "head-v2.json")
    with pytest.raises(ProbeHeadError, match="prompts.probe_claim to 'v2'"):
        judge_file(batch(tmp_path, [GOOD]), db=store,
                   config=layered(tmp_path, None, probe_head=head))
    assert not embedded_fake.calls  # refused before any call
    v2 = JudgeConfig(model=MODEL, strategy="probe", probe_head=head,
                     prompts={"split_claims": "v1", "probe_claim": "v2"})
    judge_file(batch(tmp_path, [GOOD]), db=store, config=v2)
    assert len(embedded_fake.calls) == 1


def test_fit_records_the_layer_in_the_head_it_writes(
    tmp_path: Path, embedded_fake: FakeLLM
) -> None:
    items = gold_items(80)
    gold = write_gold(tmp_path / "gold.jsonl", items)
    embedded_fake.embedder = label_embedder(items)
    start = layered(tmp_path, 16, probe_head=UNIFORM)
    db = tmp_path / "judge.db"
    eval_gold(gold, config=start, db=db)
    out = tmp_path / "fitted" / "layer16.toml"
    fit(gold, db=db, output=out)
    fitted = JudgeConfig.load(out)
    assert fitted.probe_layers == 16 and fitted.probe_head is not None
    head = load_head(fitted.probe_head.file, fitted.probe_head.sha256)
    assert head.about["layers"] == 16 and head.dim == 4
    assert head.about["prompt"] == "probe_claim/v1"
    embedded_fake.calls.clear()
    again = eval_gold(gold, config=out, db=db)  # accepted, and decided from stored vectors
    assert again.summary.model_calls == 0 and not embedded_fake.calls


def test_a_head_that_records_no_prompt_is_refused(
    tmp_path: Path, store: Store, embedded_fake: FakeLLM
) -> None:
    head = write_head(tmp_path, toy_head({"prompt": None}), "head-no-prompt.json")
    for version in ("v1", "v2"):
        config = JudgeConfig(model=MODEL, strategy="probe", probe_head=head,
                             prompts={"split_claims": "v1", "probe_claim": version})
        with pytest.raises(ProbeHeadError, match="records no prompt"):
            judge_file(batch(tmp_path, [GOOD]), db=store, config=config)
    assert not embedded_fake.calls  # refused before any call


def test_a_head_of_another_models_hidden_states_is_refused(
    tmp_path: Path, store: Store, embedded_fake: FakeLLM
) -> None:
    from judge.models.embedded import MODEL_SHA256

    other = write_head(tmp_path, toy_head({"gguf_sha256": "ab" * 32}), "head-other.json")
    with pytest.raises(ProbeHeadError, match="fitted on the hidden states of the model"):
        judge_file(batch(tmp_path, [GOOD]), db=store, config=layered(tmp_path, None,
                                                                    probe_head=other))
    assert not embedded_fake.calls
    ours = write_head(tmp_path, toy_head({"gguf_sha256": MODEL_SHA256}), "head-ours.json")
    judge_file(batch(tmp_path, [GOOD]), db=store, config=layered(tmp_path, None,
                                                                probe_head=ours))
    assert len(embedded_fake.calls) == 1
