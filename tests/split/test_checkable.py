"""The split's program checks: a skipped sentence that states something checkable is not
accepted as a skip; a claim must be grounded in the words of its sentence (English and
Chinese). The figures on the gold answers are in docs/split-checks.md."""

from __future__ import annotations

import pytest

from judge.split.checkable import checkable_reason, grounded, grounding
from judge.split.claims import skip_accepted


@pytest.mark.parametrize("text", [
    "Python 3.11 added the tomllib module.",       # a number
    "The library supports TOML files.",            # a name inside the sentence
    "Paris has a metro.",                          # a statement
    "yeah, it is also known as gridiron football.",  # a statement after an aside
    "重新啟動服務一定會清除快取。",                      # a Chinese statement
    "請參考《使用手冊》。",                              # a title
])
def test_checkable_sentences_are_never_accepted_as_skipped(text: str) -> None:
    assert checkable_reason(text) is not None
    assert not skip_accepted(text, "advice")
    assert not skip_accepted(text, "filler")


@pytest.mark.parametrize(("text", "reason"), [
    ("Hope this helps!", "filler"),
    ("Thanks for the chat!", "greeting"),
    ("Consider using a virtual environment.", "advice"),
    ("You should back up your data first.", "advice"),
    ("Make sure to restart afterwards.", "advice"),
    ("建議您先備份資料。", "advice"),
    ("希望這有幫助！", "filler"),
    ("How are you today?", "question"),
])
def test_advice_filler_and_questions_are_still_skipped(text: str, reason: str) -> None:
    assert skip_accepted(text, reason)


def test_a_sentence_that_cites_a_source_is_checkable() -> None:
    assert checkable_reason("Try it.", cites=True) == "it cites a source"
    assert not skip_accepted("Try it.", "advice", cites=True)


def test_a_claim_is_grounded_in_its_sentence() -> None:
    sentence = "It was commissioned on December 22, 1914, and had a displacement of 662 tons."
    assert grounded("The SM U-30 was commissioned on December 22, 1914.", sentence,
                    "The SM U-30 was a German submarine. " + sentence)  # context: the name
    assert not grounded("The moon is made of green cheese.", sentence)
    assert not grounded("Paris is the largest city of Germany.",
                        "Paris is the capital of France.")
    assert grounded("it does.", "it does.")  # no content word: found verbatim


def test_grounding_reads_chinese_by_character_bigrams() -> None:
    sentence = "401 表示身分未確認，403 表示權限不足。"
    assert grounded("403 表示權限不足", sentence)
    assert grounding("巴黎是法國的首都", sentence) == 0.0
    assert not grounded("巴黎是法國的首都", sentence)
