"""``probe_reader``: which tokens' hidden states the probe reads (the last token's, or the
claim's or the evidence's pooled). The setting is part of the judge version and of each
call's identity (a vector of one reader is never served for another), reaches the embedded
provider with the claim whose tokens it pools, a head records its reader and a config that
reads another is refused before any call, and stored vectors replay with zero calls. The
embedded provider's handler is replaced by the scripted one (the network edge of these
tests); the real model's token states are in tests/models/test_token_states.py."""

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
from judge.runs.replay import replay_run
from judge.store import Store
from tests.decide.test_probe import CHAT, GOOD, OTHER, batch, toy_head, write_head
from tests.decide.test_probe_layers import MODEL, UNIFORM, embedded_fake  # noqa: F401
from tests.fakes import FakeLLM
from tests.fit.synthetic import gold_items, label_embedder, write_gold


def reading(tmp_path: Path, reader: str, head_reader: str | None = None,
            **extra: Any) -> JudgeConfig:
    about = {} if head_reader is None else {"reader": head_reader}
    extra.setdefault("probe_head", write_head(tmp_path, toy_head(about),
                                              f"head-{head_reader}.json"))
    return JudgeConfig(model=MODEL, strategy="probe", prompts={"split_claims": "v1"},
                       probe_reader=reader, **extra)


def test_the_reader_is_versioned_and_checked(tmp_path: Path) -> None:
    last = reading(tmp_path, "last")
    pooled = reading(tmp_path, "last+claim_mean", "last+claim_mean")
    assert "probe_reader" not in last.versioned_fields()  # as before the setting existed
    assert version_of(pooled) != version_of(reading(tmp_path, "claim_mean", "last+claim_mean"))
    assert version_of(pooled) != version_of(last)
    assert reading(tmp_path, " last + claim_mean ").probe_reader == "last+claim_mean"
    with pytest.raises(ValidationError, match="unknown probe reader"):
        reading(tmp_path, "claim_median")
    with pytest.raises(ValidationError, match="needs strategy 'probe'"):
        JudgeConfig(model=MODEL, strategy="scores", probe_reader="claim_mean")
    with pytest.raises(ValidationError, match="needs the embedded provider"):
        JudgeConfig(model="openai/gpt-4o-mini", strategy="probe", probe_head=UNIFORM,
                    probe_reader="claim_mean")
    with pytest.raises(ValidationError, match="served probe cannot"):
        JudgeConfig(model="openai/gpt-4o-mini", strategy="probe", probe_head=UNIFORM,
                    probe_reader="claim_mean",
                    probe_endpoint={"model": "openai/qwen", "api_base": "http://127.0.0.1:1"})


def test_the_reader_and_its_claim_reach_the_provider_and_name_the_call(
    tmp_path: Path, store: Store, embedded_fake: FakeLLM  # noqa: F811
) -> None:
    config = reading(tmp_path, "last+claim_mean", "last+claim_mean")
    summary = judge_file(batch(tmp_path, [GOOD, OTHER, CHAT]), config=config, db=store).summary
    assert summary.model_calls == 3
    assert [c["params"].get("reader") for c in embedded_fake.calls] == ["last+claim_mean"] * 3
    assert [c["params"].get("reader_claim") for c in embedded_fake.calls] == [GOOD, OTHER, CHAT]
    assert {json.loads(r["params"])["reader"] for r in store.db.query(
        "select params from calls")} == {"last+claim_mean"}
    # the last token's vectors are other vectors: asked for again, never read from the store
    embedded_fake.calls.clear()
    judge_file(batch(tmp_path, [GOOD, OTHER, CHAT]), config=reading(tmp_path, "last"), db=store)
    assert len(embedded_fake.calls) == 3
    assert all("reader" not in c["params"] and "reader_claim" not in c["params"]
               for c in embedded_fake.calls)


def test_a_head_of_another_reader_is_refused_before_any_call(
    tmp_path: Path, store: Store, embedded_fake: FakeLLM  # noqa: F811
) -> None:
    for reader, head_reader in (("claim_mean", None), ("last", "claim_mean"),
                                ("last+claim_mean", "claim_mean+last")):
        with pytest.raises(ProbeHeadError, match="probe_reader"):
            judge_file(batch(tmp_path, [GOOD]), db=store,
                       config=reading(tmp_path, reader, head_reader))
    assert not embedded_fake.calls
    # a head that records "last" is the same as one that records nothing
    judge_file(batch(tmp_path, [GOOD]), db=store, config=reading(tmp_path, "last", "last"))
    assert len(embedded_fake.calls) == 1


def test_fit_records_the_reader_and_stored_vectors_replay_with_zero_calls(
    tmp_path: Path, embedded_fake: FakeLLM  # noqa: F811
) -> None:
    items = gold_items(80)
    gold = write_gold(tmp_path / "gold.jsonl", items)
    embedded_fake.embedder = label_embedder(items)
    start = reading(tmp_path, "claim_max", probe_head=UNIFORM)
    db = tmp_path / "judge.db"
    eval_gold(gold, config=start, db=db)
    out = tmp_path / "fitted" / "claim_max.toml"
    fit(gold, db=db, output=out)
    fitted = JudgeConfig.load(out)
    assert fitted.probe_reader == "claim_max" and fitted.probe_head is not None
    head = load_head(fitted.probe_head.file, fitted.probe_head.sha256)
    assert head.about["reader"] == "claim_max"
    embedded_fake.calls.clear()
    first = eval_gold(gold, config=out, db=db)
    assert first.summary.model_calls == 0 and not embedded_fake.calls
    store = Store.open(db)
    try:
        run = store.db.execute("select id from runs where judge_version = ? order by rowid "
                               "desc limit 1", [version_of(fitted)]).fetchone()[0]
        report = replay_run(store, run)
    finally:
        store.close()
    assert not embedded_fake.calls  # replayed from the stored vectors
    assert report.clean and report.claims == len(items) and not report.missing_calls
