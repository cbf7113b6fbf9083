"""Abstention statements are checked by the program: are the sources really silent?"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from judge.api import judge_file
from judge.assembly.abstention import check_abstention
from judge.config import JudgeConfig
from judge.records import AnswerRecord
from judge.split.abstention import abstention_topic, looks_like_abstention
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, choice_reply

ZH = "專業版方案包含 SSO 與稽核紀錄。團隊版不包含稽核紀錄。團隊版每位使用者每月 8 美元。"
EN = "The Pro plan includes SSO and audit logs. The Team plan does not include audit logs."


def record(text: str) -> AnswerRecord:
    return AnswerRecord.model_validate({"answer": "x", "sources": [{"id": "N1", "text": text}]})


def test_topic_drops_the_abstention_wording_and_the_names_of_the_sources() -> None:
    assert looks_like_abstention("候選筆記未提及企業版的資料保存期限。")
    assert not looks_like_abstention("團隊版每位使用者每月 8 美元。")
    assert abstention_topic("候選筆記未提及企業版的資料保存期限。") == "企業版的資料保存期限。"
    assert abstention_topic("The sources do not say whether the Team plan includes audit logs.") \
        == "the Team plan includes audit logs."


def test_silent_sources_support_it_and_a_covering_sentence_contradicts_it() -> None:
    honest = check_abstention("候選筆記未提及企業版的資料保存期限。", record(ZH), 0.6, 0.3)
    assert honest.label == "supported" and honest.evidence is None
    assert "silent" in honest.note and honest.coverage <= 0.3
    dishonest = check_abstention(
        "The sources do not say whether the Team plan includes audit logs.", record(EN), 0.6, 0.3)
    assert dishonest.label == "contradicted" and dishonest.coverage >= 0.6
    # the covering sentence about the Team plan, not the equally overlapping Pro-plan one
    assert dishonest.evidence is not None
    assert dishonest.evidence.quote == "The Team plan does not include audit logs."
    # partly covered (the price is given, but not in those words): unsettled
    unsettled = check_abstention("候選筆記未提及團隊版的價格。", record(ZH), 0.6, 0.3)
    assert unsettled.label is None and 0.3 < unsettled.coverage < 0.6
    # nothing left to look for once the wording is removed: never decided by the program
    assert check_abstention("The sources do not say.", record(EN), 0.6, 0.3).label is None


def test_thresholds_must_leave_room_between_silent_and_covered() -> None:
    with pytest.raises(ValidationError, match="abstention_silent_max"):
        JudgeConfig(abstention_covered_min=0.3, abstention_silent_max=0.5)


def test_pipeline_checks_abstentions_instead_of_asking_the_model(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda schema, messages: choice_reply("C")  # "not mentioned"
    claims = ["候選筆記未提及企業版的資料保存期限。", "候選筆記未提及團隊版的價格。",
              "團隊版每位使用者每月 8 美元。"]
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "a", "sources": [{"id": "N1", "text": ZH}], "answer": "".join(claims),
        "claims": [{"text": c, "citations": ["N1"]} for c in claims]}])
    base = dict(model="fake/judge-model", strategy="scores", signals=False,
                prompts={"split_claims": "v1", "choose_label": "v1"},
                review_support_below=0.5)  # the model's P(supported) is 0.1 here
    on = JudgeConfig(**base, abstention_check=True)
    summary = judge_file(path, config=on, db=store).summary
    rows = {r["claim"]: r for r in store.verdict_rows() if r["judge_version"] ==
            summary.judge_version}
    silent = rows[claims[0]]
    assert silent["label"] == "supported" and not silent["review"]
    assert "the sources are silent" in silent["rationale"]
    assert "the model said not_in_source" in silent["rationale"]
    unsettled = rows[claims[1]]
    assert unsettled["label"] == "not_in_source"
    assert "abstention_unsettled" in unsettled["review_reasons"]
    assert rows[claims[2]]["label"] == "not_in_source"  # not an abstention: the model decides
    # off (the default): the model's label stands for abstentions too
    off = judge_file(path, config=JudgeConfig(**base), db=store).summary
    assert off.model_calls == 0 and off.judge_version != summary.judge_version
    labels = {r["claim"]: r["label"] for r in store.verdict_rows()
              if r["judge_version"] == off.judge_version}
    assert labels[claims[0]] == "not_in_source"
