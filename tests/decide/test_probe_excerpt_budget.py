"""``probe_excerpt_chars``: how many characters of located evidence a probe prompt shows. At
500, the budget of every head before v6, it is left out of the judge version; any other value
is part of the version and, through the prompt, of each call's identity (a vector read with
one budget is never served for another). A head records the budget its vectors were read with
and a config reading another is refused before any call; ``judge fit`` records it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from judge.api import eval_gold, fit, judge_file
from judge.config import JudgeConfig
from judge.config.probe import PROBE_EXCERPT_CHARS
from judge.decide.probe import read_with
from judge.decide.probe_head import ProbeHeadError, load_head
from judge.fitting.run import version_of
from judge.store import Store
from tests.conftest import write_jsonl
from tests.decide.test_probe import probe_config, toy_head, write_head
from tests.decide.test_probe_layers import UNIFORM
from tests.fakes import FakeLLM
from tests.fit.synthetic import gold_items, label_embedder, write_gold

CLAIM = "The tomllib module reads TOML files in Python 3.11."
#: four short sources (taken whole), each about the claim: 500 characters hold one, 1,500 all
SOURCES = [{"id": f"s{k}", "text": f"Source {k}: the tomllib module reads TOML files; "
            f"{'Python 3.11 ships it. ' if k == 0 else ''}" + f"Detail {k} " * 30}
           for k in range(4)]


def budget_config(tmp_path: Path, chars: int, head_chars: int | None = None,
                  **extra: Any) -> JudgeConfig:
    about = {} if head_chars is None else {"excerpt_chars": head_chars}
    extra.setdefault("probe_head", write_head(tmp_path, toy_head(about),
                                              f"head-{head_chars}.json"))
    return probe_config(tmp_path, probe_excerpt_chars=chars, **extra)


def record(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "long.jsonl", [{
        "id": "long", "sources": SOURCES, "answer": CLAIM, "generator": "other/model",
        "claims": [{"text": CLAIM}]}])


def test_the_budget_is_versioned_and_checked(tmp_path: Path) -> None:
    default = probe_config(tmp_path)
    assert default.probe_excerpt_chars == PROBE_EXCERPT_CHARS == 500
    assert "probe_excerpt_chars" not in default.versioned_fields()  # as before it existed
    assert "excerpt_chars" not in read_with(default)
    longer = budget_config(tmp_path, 1500, 1500)
    assert longer.versioned_fields()["probe_excerpt_chars"] == 1500
    assert read_with(longer)["excerpt_chars"] == 1500
    assert version_of(longer) != version_of(budget_config(tmp_path, 1200, 1500))
    assert version_of(budget_config(tmp_path, 500)) == version_of(
        budget_config(tmp_path, PROBE_EXCERPT_CHARS))
    with pytest.raises(ValidationError, match="needs strategy 'probe'"):
        JudgeConfig(model="fake/x", strategy="scores", probe_excerpt_chars=1500)
    for wrong in (50, 100_000):
        with pytest.raises(ValidationError, match="probe_excerpt_chars"):
            budget_config(tmp_path, wrong)


def test_a_longer_budget_reads_more_of_the_sources_and_is_another_call(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    short = judge_file(record(tmp_path), config=budget_config(tmp_path, 500), db=store)
    long = judge_file(record(tmp_path), config=budget_config(tmp_path, 1500, 1500), db=store)
    assert short.summary.model_calls == 1 and long.summary.model_calls == 1  # not served
    first, second = (c["messages"][-1]["content"] for c in fake_llm.calls)
    read = [[s["id"] for s in SOURCES if s["text"][:40] in text] for text in (first, second)]
    assert len(read[0]) == 1 and len(read[1]) == 4 and set(read[0]) < set(read[1])
    evidence = {r["judge_version"]: r["evidence"] for r in store.verdict_rows()}
    assert len(evidence) == 2  # two versions, each with the evidence its probe read
    assert sorted(len(e) for e in evidence.values()) == [1, 4]


def test_a_head_of_another_budget_is_refused_naming_the_fix(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    for chars, head_chars in ((1500, None), (500, 1500), (1500, 1200)):
        with pytest.raises(ProbeHeadError, match="probe_excerpt_chars"):
            judge_file(record(tmp_path), db=store,
                       config=budget_config(tmp_path, chars, head_chars))
    assert not fake_llm.calls  # refused before any call
    # the uniform head reads no number: the head to collect a budget's vectors with
    judge_file(record(tmp_path), db=store,
               config=budget_config(tmp_path, 1500, probe_head=UNIFORM))
    assert len(fake_llm.calls) == 1


def test_fit_records_the_budget_in_the_head_and_the_config_it_writes(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    items = gold_items(80)
    gold = write_gold(tmp_path / "gold.jsonl", items)
    fake_llm.embedder = label_embedder(items)
    db = tmp_path / "judge.db"
    eval_gold(gold, config=budget_config(tmp_path, 1500, probe_head=UNIFORM), db=db)
    out = tmp_path / "fitted" / "budget.toml"
    fit(gold, db=db, output=out)
    fitted = JudgeConfig.load(out)
    assert fitted.probe_excerpt_chars == 1500 and fitted.probe_head is not None
    head = load_head(fitted.probe_head.file, fitted.probe_head.sha256)
    assert head.about["excerpt_chars"] == 1500 and head.dim == 4
    fake_llm.calls.clear()
    again = eval_gold(gold, config=out, db=db)  # accepted, and decided from stored vectors
    assert again.summary.model_calls == 0 and not fake_llm.calls
