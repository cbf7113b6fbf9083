"""Chinese end to end in the split checks: sentences and their citations, what a model may
skip, and whether its claims keep what a sentence says, in Traditional, Simplified and mixed
Chinese/English, on sentences of the design documents (``shared/seeds/``, copied here: CI
has no access to that folder)."""

from __future__ import annotations

import pytest

from judge.records import Source
from judge.split.checkable import checkable_reason
from judge.split.citations import segment_answer
from judge.split.faithful import uncovered_content, unfaithful

# seed 000, "結果一": the validation layers of 18 requests
SEED_LAYERS = "18 次請求都有回應，但只有 14 份通過全部四層。"
SEED_LAYERS_HANS = "18 次请求都有回应，但只有 14 份通过全部四层。"
# seed 000, "結果二": the sixth sentence the annotators judged (row 23)
SEED_ROW_23 = "資料無法說明靜止心率偏高或睡眠時間偏短的生理原因、壓力或健康狀態。"
SEED_ROW_23_HANS = "资料无法说明静止心率偏高或睡眠时间偏短的生理原因、压力或健康状态。"
# seed 000, "Concept 3": a quotation that holds a full stop of its own is one sentence
SEED_STATES = "「無法判定」與「沒有偏離」是不同狀態。"


@pytest.mark.parametrize(("sentence", "same", "changed", "negated"), [
    (SEED_LAYERS, "只有十四份通過全部四層。", "只有 15 份通過全部四層。",
     "只有 14 份沒有通過全部四層。"),
    (SEED_LAYERS_HANS, "只有十四份通过全部四层。", "只有 15 份通过全部四层。",
     "只有 14 份没有通过全部四层。"),
])
def test_a_claim_keeps_the_numbers_and_negation_of_its_sentence(
        sentence: str, same: str, changed: str, negated: str) -> None:
    assert unfaithful(same, sentence) is None
    assert unfaithful(changed, sentence) == "it says 15 份, which the sentence does not"
    assert unfaithful(negated, sentence) == "it negates what the sentence states"
    first = sentence.split("，")[0] + "。"
    assert uncovered_content(sentence, [first]) is not None  # 14 份 and 四層 are lost
    assert uncovered_content(sentence, [first, same]) is None


def test_a_mixed_sentence_keeps_its_versions_and_percentages() -> None:
    sentence = "Python 3.11 版本於 2022 年發布，比 3.10 快約 25%。"
    assert unfaithful("Python 3.11 比 3.10 快約百分之二十五。", sentence) is None
    assert unfaithful("Python 3.11 比 3.10 快約 60%。", sentence) is not None
    assert unfaithful("Python 3.12 版本於 2022 年發布。", sentence) is not None
    assert uncovered_content(sentence, ["Python 3.11 版本於 2022 年發布。"]) == (
        "no claim keeps 3.10, 25%")


@pytest.mark.parametrize("sentence", [
    SEED_ROW_23, SEED_ROW_23_HANS,  # passed as a skip before: no 是/有/會 in it
    "無狀態 API 不需要 CSRF 保護。", "候选笔记未提及企业版的资料保存期限。",
    "總之，模型很重要。", "Python 很流行。", "这里用 Docker 部署。", SEED_STATES,
])
def test_chinese_statements_may_not_be_skipped(sentence: str) -> None:
    assert checkable_reason(sentence) is not None


@pytest.mark.parametrize("sentence", [
    "建議您每天走路。", "谢谢你的提问！", "希望對你有幫助。", "不客氣！", "没问题！", "你好！",
    "OK，謝謝。", "好的。",
])
def test_chinese_advice_and_courtesy_may_be_skipped(sentence: str) -> None:
    assert checkable_reason(sentence) is None


def test_answer_sentences_keep_quotations_whole_and_their_citations() -> None:
    sources = [Source(id="S1", text="x"), Source(id="S2", text="y")]
    answer = ("標註規則寫道：「trailing 不可引用。改版後可以。」[S1] 复核版改为「部分支持」。[S2]\n"
              "Day 24 的 checker 只查 17 份。")
    got = segment_answer(answer, sources)
    assert [s.text for s in got] == [
        "標註規則寫道：「trailing 不可引用。改版後可以。」", "复核版改为「部分支持」。",
        "Day 24 的 checker 只查 17 份。"]
    assert [[c.source for c in s.citations] for s in got] == [["S1"], ["S2"], []]
