"""Chinese end to end in the deterministic checks: Traditional, Simplified and mixed
Chinese/English text, on sentences of the design documents (the four Traditional Chinese
engineering diaries the design was distilled from, ``shared/seeds/``; copied here because CI
has no access to that folder). Each example is checked in Traditional and in Simplified."""

from __future__ import annotations

from typing import Any

import pytest

from judge.checks.claims import numbers_match, quote_found
from judge.checks.numerals import parse_chinese_decimal, roc_year
from judge.checks.quantities import extract_quantities
from judge.records import AnswerRecord, Citation
from judge.text import find_quote, script_lang, split_sentences

# seed 000, "結果三" and "Method": the stratified sample and its weights
SEED_WEIGHTS = ("若只推估全部 195 筆 claim，pass 樣本每筆權重為 64／20＝3.2，其餘兩層權重為 1。"
                "加權後支持 15.2 筆（7.8%）、部分支持 178.8 筆（91.7%）、不支持 0 筆、"
                "不可解讀 1 筆（0.5%）。")
SEED_WEIGHTS_HANS = ("若只推估全部 195 笔 claim，pass 样本每笔权重为 64／20＝3.2，其余两层权重为 1。"
                     "加权后支持 15.2 笔（7.8%）、部分支持 178.8 笔（91.7%）、不支持 0 笔、"
                     "不可解读 1 笔（0.5%）。")
# seed 000, "Dataset": six cases, three requests each
SEED_REQUESTS = "所以實際是六個案例各三次，共 18 次。"
SEED_REQUESTS_HANS = "所以实际是六个案例各三次，共 18 次。"
# seed 000, "Method": the generation settings (mixed Chinese/English)
SEED_SETTINGS = ("生成條件為 gemini-3.8-flash、temperature 1.0、max_output_tokens 8192，"
                 "採 API schema，沒有修正迴圈。")
# seed 000, "Concept 1": two quotations in 「」 inside one question
SEED_QUOTES = ("現在可以問得更具體：模型說「高於個人 baseline」時，引用的是哪個指標、哪一天、"
               "哪個 baseline 與偏離判定？若品質不足或 decidable=false，解讀有沒有把「無法判定」"
               "寫成「沒有偏離」？")
SEED_QUOTES_HANS = ("现在可以问得更具体：模型说「高于个人 baseline」时，引用的是哪个指标、哪一天、"
                    "哪个 baseline 与偏离判定？若品质不足或 decidable=false，解读有没有把「无法判定」"
                    "写成「没有偏离」？")
# seed 000, "結果二": a sentence quoted from the annotation rules, 。 inside the quotation
SEED_RULE = ("annotation-prompt-v1 規定：「程式判定」的事項必須出現在 baseline、deviation 或 "
             "cross_metric。")
SEED_ROW_73 = ("以 row 73 為例，句子說 minutesAsleep 的 7 天平均無法計算，有效天數 6 未達門檻 7；"
               "引用的 trailing[1].mean=null、n_valid=6、min_valid=7 都相符。")


def record(text: str, answer: str = "") -> AnswerRecord:
    return AnswerRecord.model_validate({"answer": answer or "x", "sources": [
        {"id": "S1", "text": text}]})


def numbers(claim: str, text: str) -> tuple[str, list[Any]]:
    check = numbers_match(claim, [Citation(source="S1")], record(text))
    return check.outcome, check.detail.get("missing", [])


# -- numbers, dates and units ----------------------------------------------------------------


@pytest.mark.parametrize("source", [SEED_WEIGHTS, SEED_WEIGHTS_HANS])
@pytest.mark.parametrize(("claim", "outcome"), [
    ("pass 樣本每筆權重為 3.2。", "pass"),
    ("pass 样本每笔权重为 3.2。", "pass"),
    ("加權後支持 15.2 筆，佔 7.8%。", "pass"),
    ("加权后支持 15.2 笔，占百分之七點八。", "pass"),
    ("部分支持約佔九成。", "fail"),  # 91.7% is no round 90%
    ("pass 樣本每筆權重為 3.3。", "fail"),
    ("加權後支持 15.2 筆，佔 8.7%。", "fail"),
    ("部分支持 178.8 筆（百分之九十一點七）。", "pass"),
    ("部分支持 178.8 筆（百分之九十一點五）。", "fail"),  # was read as 91 (the 點 dropped)
])
def test_seed_weights_in_both_scripts(source: str, claim: str, outcome: str) -> None:
    assert numbers(claim, source)[0] == outcome, claim


@pytest.mark.parametrize("source", [SEED_REQUESTS, SEED_REQUESTS_HANS])
def test_counts_in_chinese_numerals_and_digits(source: str) -> None:
    for claim in ("共十八次請求。", "共十八次请求。", "共 １８ 次請求。", "六個案例各跑 3 次。"):
        assert numbers(claim, source)[0] == "pass", claim
    assert numbers("共二十次請求。", source) == ("fail", ["二十次"])
    assert numbers("六个案例各跑四次。", source) == ("fail", ["四次"])


def test_mixed_chinese_english_numbers_and_versions() -> None:
    assert numbers("生成用 gemini-3.8-flash，temperature 為 1.0。", SEED_SETTINGS)[0] == "pass"
    assert numbers("max_output_tokens 設為 8192。", SEED_SETTINGS)[0] == "pass"
    assert numbers("生成用 gemini-3.9-flash。", SEED_SETTINGS) == ("fail", ["gemini-3.9-flash"])
    assert numbers("max_output_tokens 设为 4096。", SEED_SETTINGS) == ("fail", ["4096"])
    release = "Python 3.11 was released in October 2022 and is up to 25% faster than 3.10."
    assert numbers("Python 3.11 版本於 2022 年發布。", release)[0] == "pass"
    assert numbers("Python 3.11 版本于 2022 年发布，比 3.10 快百分之二十五。", release)[0] == "pass"
    assert numbers("Python 3.12 版本於 2022 年發布。", release) == ("fail", ["Python 3.12"])
    assert numbers("Python 3.11 版本於 2021 年發布。", release) == ("fail", ["2021 年"])
    assert numbers("有效天數六天未達門檻七天。", SEED_ROW_73)[0] == "pass"
    assert numbers("有效天數 5 未達門檻 7。", SEED_ROW_73) == ("fail", ["5"])


@pytest.mark.parametrize(("claim", "evidence", "outcome"), [
    ("跑了一千五公尺。", "全程 1,500 公尺。", "pass"),
    ("跑了一千五公尺。", "全程 1.5 公里。", "pass"),
    ("跑了一千六公尺。", "全程 1.5 公里。", "fail"),
    ("參加者有兩萬三人。", "参加者共 23,000 人。", "pass"),
    ("预算为 1.5 万元。", "預算一萬五千元。", "pass"),
    ("預算為 1萬5千元。", "預算 15,000 元。", "pass"),
    ("預算為 1萬6千元。", "預算 15,000 元。", "fail"),
    ("路程三點五公里。", "路程 3.5 km。", "pass"),
    ("路程三点五公里。", "路程 5 km。", "fail"),  # was read as 5 km
    ("體重 10 公斤。", "体重 10000 公克。", "pass"),
    ("耗時 3 小時。", "耗时 180 分钟。", "pass"),
    ("耗時一個半小時。", "耗時 90 分鐘。", "pass"),
    ("耗时一个半小时。", "耗時 1 小時。", "fail"),
    ("耗時半小時。", "耗時 30 分鐘。", "pass"),
    ("計畫進行兩年半。", "計畫為期 30 個月。", "fail"),  # months and years do not convert
    ("計畫進行兩年半。", "計畫為期 2.5 年。", "pass"),
    ("約三成使用者回覆。", "回覆率 30%。", "pass"),
    ("约三成五使用者回复。", "回覆率 0.35。", "pass"),
    ("約三成使用者回覆。", "回覆率 40%。", "fail"),
    ("回覆率百分之六十一。", "回覆率 61％。", "pass"),
    ("回覆率百分之六十一。", "回覆率 ６２％。", "fail"),
])
def test_chinese_amounts_and_units(claim: str, evidence: str, outcome: str) -> None:
    assert numbers(claim, evidence)[0] == outcome, (claim, evidence)


@pytest.mark.parametrize(("claim", "evidence", "outcome"), [
    ("解讀日為 2026年3月5日。", "對照 syn_p01 的 2026-03-05 bundle。", "pass"),
    ("解读日为二〇二六年三月五日。", "對照 syn_p01 的 2026-03-05 bundle。", "pass"),
    ("解讀日為 ２０２６年３月５日。", "對照 syn_p01 的 2026-03-05 bundle。", "pass"),
    ("解讀日為 2026年3月6日。", "對照 syn_p01 的 2026-03-05 bundle。", "fail"),
    ("解讀日為民國115年3月5日。", "對照 syn_p01 的 2026-03-05 bundle。", "pass"),
    ("解读日为民国114年3月5日。", "對照 syn_p01 的 2026-03-05 bundle。", "fail"),
    ("解讀日為 2026年3月5日。", "解讀日：民國一一五年三月五日。", "pass"),
    ("民國115年的資料。", "2026 年的資料。", "pass"),
])
def test_dates_in_both_scripts_and_the_roc_calendar(claim: str, evidence: str,
                                                    outcome: str) -> None:
    assert numbers(claim, evidence)[0] == outcome, (claim, evidence)


def test_idioms_are_not_quantities() -> None:
    assert extract_quantities("一成不變，八成是他，一點一滴，半天，5年半導體") == [
        q for q in extract_quantities("5年") if q.value == 5]
    assert extract_quantities("完成了，成為三成員之一") == []


def test_chinese_numeral_helpers() -> None:
    assert parse_chinese_decimal("六十一點五") == 61.5
    assert parse_chinese_decimal("零点二五") == 0.25
    assert parse_chinese_decimal("三點") is None
    assert roc_year("113") == roc_year("一一三") == roc_year("一百一十三") == 2024


# -- quotes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [SEED_QUOTES, SEED_QUOTES_HANS])
def test_quotes_in_corner_brackets_verify_and_altered_ones_fail(source: str) -> None:
    hans = source is SEED_QUOTES_HANS
    same = ("「无法判定」写成「没有偏离」", "“无法判定”写成“没有偏离”", "高于个人baseline",
            "若品质不足或 decidable＝false，解读") if hans else (
            "「無法判定」寫成「沒有偏離」", "“無法判定”寫成“沒有偏離”", "高於個人baseline",
            "若品質不足或 decidable＝false，解讀")
    for quote in same:
        check = quote_found("S1", quote, record(source))
        assert check.outcome == "pass", quote
        found = source[check.detail["start"]:check.detail["end"]]
        assert found.replace(" ", "") in source.replace(" ", "")
    altered = "「无法判定」写成「没有偏移」" if hans else "「無法判定」寫成「沒有偏移」"
    assert quote_found("S1", altered, record(source)).outcome == "fail"
    assert quote_found("S1", "「高於個人 baseline」" if not hans else "「高于个人 baseline」",
                       record(source)).outcome == "pass"


def test_full_width_and_half_width_forms_are_one() -> None:
    assert find_quote("加權後支持１５．２筆（７．８％）", SEED_WEIGHTS) is not None
    assert find_quote("加權後支持 15.2 筆(7.8%)", SEED_WEIGHTS) is not None
    assert find_quote("權重為 64/20=3.2", SEED_WEIGHTS) is not None
    assert find_quote("權重為 64/20=3.3", SEED_WEIGHTS) is None
    assert find_quote("程式判定」的事項必須出現在 baseline，deviation", SEED_RULE) is not None


def test_the_scripts_are_not_folded_into_each_other() -> None:
    # a quote is verbatim in its source's script: 「高于」 is not 「高於」 (documented limit)
    assert find_quote("高于个人 baseline", SEED_QUOTES) is None


# -- sentences --------------------------------------------------------------------------------


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def test_a_quotation_with_sentence_ends_stays_in_its_sentence() -> None:
    assert sentences("他說：「今天很好。明天再說！」然後離開了。") == [
        "他說：「今天很好。明天再說！」", "然後離開了。"]
    assert sentences("他说：“今天很好。明天再说！”然后离开了。") == [
        "他说：“今天很好。明天再说！”", "然后离开了。"]
    assert sentences("他說「今天很好。明天再說」，然後離開了。") == [
        "他說「今天很好。明天再說」，然後離開了。"]
    assert sentences("『第一句。第二句。』是引文。（註：括號裡。也有句。）外面。") == [
        "『第一句。第二句。』", "是引文。", "（註：括號裡。也有句。）", "外面。"]
    # a quotation that ends its sentence still ends it
    assert sentences("他問：「是嗎？」我答：「是。」") == ["他問：「是嗎？」", "我答：「是。」"]
    assert sentences(SEED_RULE + SEED_ROW_73) == [SEED_RULE, SEED_ROW_73.split("；")[0] + "；",
                                                 SEED_ROW_73.split("；")[1]]


def test_the_seed_question_with_quotations_splits_at_its_question_marks() -> None:
    for text in (SEED_QUOTES, SEED_QUOTES_HANS):
        got = sentences(text)
        assert len(got) == 2 and got[0].endswith("偏離判定？" if text is SEED_QUOTES
                                                 else "偏离判定？")
        assert "".join(got) == text


def test_an_unclosed_quotation_ends_nothing() -> None:
    assert sentences("他說「今天很好。明天再說。\n第三行。") == [
        "他說「今天很好。", "明天再說。", "第三行。"]


def test_mixed_text_splits_at_both_kinds_of_stop() -> None:
    assert sentences("Python 3.11 版本於 2022 年發布。It is faster. 它比 3.10 快！") == [
        "Python 3.11 版本於 2022 年發布。", "It is faster.", "它比 3.10 快！"]


# -- script ------------------------------------------------------------------------------------


def test_script_lang_tells_the_scripts_apart() -> None:
    assert script_lang(SEED_QUOTES) == "zh-Hant"
    assert script_lang(SEED_QUOTES_HANS) == "zh-Hans"
    assert script_lang("中文") == "zh"
    assert script_lang("ひらがなと漢字") == "ja"
    assert script_lang("Python 3.11 was released") is None
