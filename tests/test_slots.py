"""The fill-the-blank question: which detail is blanked, how the answer is read, the
pipeline's call and the rule's features."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from judge.config import JudgeConfig
from judge.linear import BASE_FEATURES, FEATURES, SLOT_FEATURES, ScoreModel, features
from judge.records import AnswerRecord
from judge.runner import run_batch
from judge.slots import BLANK, compare, find_slot
from judge.store import Store
from judge.verdicts import LABELS, Evidence
from tests.conftest import write_jsonl
from tests.fakes import CHOICE, FakeLLM, choice_reply

SRC = "Python 3.11 added the tomllib module to the standard library in October 2022."
REC = AnswerRecord.model_validate({"answer": "x", "sources": [{"id": "py", "text": SRC}]})
EV = [Evidence(source_id="py", quote=SRC, found=True, start=0, end=len(SRC))]
EVEN = {label: math.log(0.25) for label in LABELS}


@pytest.mark.parametrize(
    ("claim", "detail"),
    [
        ("Python 3.10 added the tomllib module.", "Python 3.10"),  # a version first
        ("Yeah, GNR is from Los Angeles, California, formed in 1965.", "1965"),  # number first
        ("His music career began in Seattle.", "Seattle"),  # the last name
        ("Gymnastics was started by the ancient Romans.", "Romans"),  # not the first word
        ("The Bank of America is in Charlotte.", "Charlotte"),
        ("I think so. You should try it.", None),  # capitals that only start sentences
        ("HTTP 401 表示身分未確認。", "401"),
        ("《紅樓夢》的作者是曹雪芹。", "紅樓夢"),
        ("這家店很好吃。", None),
    ],
)
def test_find_slot_blanks_one_detail(claim: str, detail: str | None) -> None:
    slot = find_slot(claim)
    if detail is None:
        assert slot is None
        return
    assert slot is not None and slot.text == detail
    assert claim[slot.start:slot.end] == detail
    assert slot.statement == claim[:slot.start] + BLANK + claim[slot.end:]
    assert detail not in slot.statement


def test_compare_reads_the_answer_against_the_detail_and_the_excerpts() -> None:
    excerpts = [SRC]
    version = find_slot("Python 3.10 added the tomllib module.")
    assert version is not None
    assert compare(version, "Python 3.11", excerpts) == "other"  # in the excerpts, different
    assert compare(version, "Python 3.10", excerpts) == "same"
    assert compare(version, "Python 3.9", excerpts) == "unstated"  # not in the excerpts
    assert compare(version, "none", excerpts) == "unstated"
    assert compare(version, "", excerpts) == "unstated"
    assert compare(version, f"{BLANK}", excerpts) == "unstated"
    year = find_slot("It shipped in October 2021.")
    assert year is not None
    assert compare(year, "October 2022", excerpts) == "other"
    assert compare(year, "October 2021", excerpts) == "same"
    name = find_slot("The module came from the Rust community.")
    assert name is not None and name.text == "Rust"
    assert compare(name, "rust", excerpts) == "same"  # case does not matter
    assert compare(name, "Python", excerpts) == "other"
    zh = find_slot("HTTP 403 表示身分未確認。")
    assert zh is not None
    assert compare(zh, "401", ["HTTP 401 表示身分未確認"]) == "other"
    assert compare(zh, "沒有", ["HTTP 401 表示身分未確認"]) == "unstated"


def test_slot_features_are_one_hot_and_need_the_question() -> None:
    values = features("Python 3.10 added tomllib.", EVEN, EV, REC, 0.5, 0.4, None, "other")
    assert set(values) == set(FEATURES) - {f for f in FEATURES if f.startswith("s_max_")}
    assert [values[f] for f in SLOT_FEATURES] == [0.0, 1.0, 0.0]
    plain = features("Python 3.10 added tomllib.", EVEN, EV, REC, 0.5, 0.4)
    assert set(plain) == set(BASE_FEATURES)
    assert all(plain[f] == 0.0 for f in SLOT_FEATURES)  # not asked, or no detail
    rule = ScoreModel(weights={label: {} for label in LABELS} | {"contradicted": {"slot_other": 2}},
                      intercept={label: 0.0 for label in LABELS})
    assert rule.slot_features() == ["slot_other"]
    with pytest.raises(ValidationError, match="needs prompt 'fill_slot'"):
        JudgeConfig(strategy="scores", score_model=rule)
    JudgeConfig(strategy="scores", score_model=rule,
                prompts={"split_claims": "v1", "choose_label": "v1", "fill_slot": "v1"})
    with pytest.raises(ValidationError, match="never asks it"):
        JudgeConfig(strategy="per_claim", prompts={"split_claims": "v1", "fill_slot": "v1"})


def _config(rule: ScoreModel, **update: Any) -> JudgeConfig:
    return JudgeConfig(model="fake/judge-model", strategy="scores", score_model=rule,
                       prompts={"split_claims": "v1", "choose_label": "v1", "fill_slot": "v1"},
                       **update)


def _batch(tmp_path: Path, *claims: str) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [{
        "id": f"t{n}", "answer": claim, "sources": [{"id": "py", "text": SRC}],
        "claims": [{"text": f"{claim} [py]", "citations": ["py"]}]} for n, claim in enumerate(claims)])


def test_pipeline_asks_to_fill_the_blank_and_the_rule_weighs_the_outcome(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    asked: list[str] = []

    def responder(schema: str, messages: list[dict[str, Any]]) -> Any:
        if schema == CHOICE:
            return choice_reply("A", confidence=0.6)
        asked.append(messages[-1]["content"])
        return json.dumps({"answer": "Python 3.11"})

    fake_llm.responder = responder
    rule = ScoreModel(
        weights={label: {} for label in LABELS} | {"contradicted": {"slot_other": 5.0}},
        intercept={"supported": 1.0, "contradicted": -1.0, "not_in_source": -5.0,
                   "not_verifiable": -5.0})
    batch = _batch(tmp_path, "Python 3.10 added the tomllib module.", "The module only reads files.")
    summary = asyncio.run(run_batch(batch, store, _config(rule)))
    # the claim with a detail gets a second call; the one without has nothing to blank
    assert summary.model_calls == 3 and len(asked) == 1
    assert f"{BLANK} added the tomllib module." in asked[0] and "[py]" not in asked[0]
    assert "Python 3.10" not in asked[0].split("Sentence with a blank")[1]
    rows = {r["answer_id"]: r for r in store.verdict_rows()}
    assert rows["t0"]["label"] == "contradicted"
    assert "blank 'Python 3.10' filled as 'Python 3.11': other" in rows["t0"]["rationale"]
    assert len(rows["t0"]["call_ids"]) == 2
    assert rows["t1"]["label"] == "supported" and "blank" not in rows["t1"]["rationale"]


def test_a_failed_fill_the_blank_question_is_a_judge_error(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    def responder(schema: str, messages: list[dict[str, Any]]) -> Any:
        return choice_reply("A") if schema == CHOICE else "not json at all"

    fake_llm.responder = responder
    rule = ScoreModel(weights={label: {} for label in LABELS},
                      intercept={label: 0.0 for label in LABELS} | {"supported": 1.0})
    batch = _batch(tmp_path, "Python 3.10 added the tomllib module.")
    asyncio.run(run_batch(batch, store, _config(rule, retries=0)))
    row = next(iter(store.verdict_rows()))
    assert row["label"] == "judge_error" and row["review"]
    assert "fill-the-blank question failed" in row["error"]
