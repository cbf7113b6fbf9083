"""Regressions of the hand-written sentence splitter and Chinese-numeral reader, now read by
kept libraries (pysbd, cn2an): abbreviations do not end sentences, spoken numerals that
leave out the last unit read right, and the numbers check raises no false alarm on them."""

from __future__ import annotations

import pytest

from judge.checks.claims import numbers_match
from judge.checks.quantities import extract_quantities, parse_chinese_numeral
from judge.records import AnswerRecord, Citation
from judge.split.citations import strip_markers
from judge.text import passage_sentences, split_sentences


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


@pytest.mark.parametrize("text, first", [
    ("The U.S. Army grew fast. It was big.", "The U.S. Army grew fast."),
    ("It opened on Oct. 5 in 2020. Then it closed.", "It opened on Oct. 5 in 2020."),
    ("We meet at 5 p.m. on Monday. Bring food.", "We meet at 5 p.m. on Monday."),
    ("He lives on St. James Street. Nice.", "He lives on St. James Street."),
    ("Call Dr. Smith at 3.30 today. Now.", "Call Dr. Smith at 3.30 today."),
])
def test_abbreviations_do_not_end_a_sentence(text: str, first: str) -> None:
    assert sentences(text) == [first, text[len(first) + 1:]]


def test_chinese_and_mixed_sentences_still_split() -> None:
    assert sentences("部署前必須先執行遷移。遷移失敗時回滾！好嗎？") == [
        "部署前必須先執行遷移。", "遷移失敗時回滾！", "好嗎？"]
    assert sentences("401 表示未認證 [S1]. 403 means forbidden [S1].") == [
        "401 表示未認證 [S1].", "403 means forbidden [S1]."]
    assert sentences("In the U.S.\nNew line.") == ["In the U.S.", "New line."]


def test_passages_keep_the_rules_the_default_was_fitted_on() -> None:
    """best_passages (excerpts, features of the fitted rule) cut sources as before."""
    text = "The U.S. Army grew fast. It was big."
    assert len(passage_sentences(text)) == 3 and len(split_sentences(text)) == 2


@pytest.mark.parametrize("numeral, value", [
    ("一千五", 1500), ("兩萬三", 23000), ("两万三", 23000), ("一百二", 120),
    ("一百零五", 105), ("三萬五千", 35000), ("十一", 11), ("兩", 2), ("百", 100),
])
def test_chinese_numerals(numeral: str, value: int) -> None:
    assert parse_chinese_numeral(numeral) == value


def test_ambiguous_digit_runs_are_not_numbers() -> None:
    assert parse_chinese_numeral("七八") is None  # "seven or eight"
    assert parse_chinese_numeral("萬一") is None


@pytest.mark.parametrize("claim, evidence", [
    ("預算是一千五元。", "預算為 1500 元。"),
    ("參加者有兩萬三人。", "參加者共 23,000 人。"),
    ("每天處理一千五百筆訂單。", "每天處理 1,500 筆訂單。"),
])
def test_numbers_check_raises_no_false_alarm_on_spoken_numerals(claim: str,
                                                                 evidence: str) -> None:
    record = AnswerRecord.model_validate({"answer": claim, "sources": [{"id": "S1",
                                                                        "text": evidence}]})
    check = numbers_match(strip_markers(claim), [Citation(source="S1")], record)
    assert check.outcome == "pass", check.detail
    assert [q.value for q in extract_quantities(claim)] == \
        [q.value for q in extract_quantities(evidence)]


def test_numbers_check_still_catches_a_wrong_spoken_numeral() -> None:
    record = AnswerRecord.model_validate({"answer": "x", "sources": [{"id": "S1",
                                                                      "text": "預算為 1005 元。"}]})
    assert numbers_match("預算是一千五元。", [Citation(source="S1")], record).outcome == "fail"


def _pysbd_reference_starts(text: str) -> frozenset[int]:
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return frozenset(span.start for span in segmenter.segment(text))


EDGE_TEXTS = [
    "",
    "   ",
    "One. One. One. Two.",
    "Same line.\nSame line.\n\nSame line.",
    "It rose 3.5% in Q1.  Then   it fell.\u00a0Again.\u2003End",
    "The U.S. Army grew fast. It was big. The U.S. Army grew fast.",
    "Mr. A. B. Smith went to Washington, D.C. on Jan. 5. He left.",
    "部署前必須先執行遷移。See Fig. 2. 遷移失敗時回滾！OK.",
    "(a) first item. (b) second item. 1. third. 2. fourth.",
    "“Quoted.” he said. ‘Again.’ — she said... and left?! Yes.",
]


def test_sentence_starts_are_pysbds_own_on_real_sources_and_edge_cases() -> None:
    """Sentence starts found by string search equal pysbd's char spans (which compile a
    regular expression per sentence) on every source text of the check gold and on edge
    cases (repeated sentences, odd whitespace, abbreviations, CJK, lists, quotes)."""
    import json
    from pathlib import Path

    from judge.text import _pysbd_starts

    gold = Path(__file__).resolve().parents[2] / "gold" / "eval_xl.jsonl"
    texts = list(EDGE_TEXTS)
    for line in gold.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        texts += [source["text"] for source in item["sources"]]
    texts = list(dict.fromkeys(texts))
    assert len(texts) > 100
    for text in texts:
        assert _pysbd_starts(text) == _pysbd_reference_starts(text), text[:200]
