"""A claim says what its sentence says (judge.split.faithful): substitutions are caught,
legitimate splits (a pronoun replaced, Chinese numerals, full-width punctuation) are not."""

from __future__ import annotations

import pytest

from judge.split.faithful import uncovered_content, unfaithful


@pytest.mark.parametrize(("claim", "sentence", "context"), [
    # a pronoun replaced by the name an earlier sentence or the question gives
    ("Acme was founded in 1990.", "It was founded in 1990.", "Acme makes anvils."),
    ("Barack Obama was born in Hawaii.", "He was born in Hawaii.",
     "Where was Barack Obama born?"),
    ("Python 3.12 支援更快的啟動。", "它支援更快的啟動。", "Python 3.12 於 2023 年發布。"),
    # Chinese numerals and full-width digits and punctuation
    ("這台伺服器每秒處理 1500 個請求", "這台伺服器每秒處理一千五個請求。", ""),
    ("價格是１５００元", "價格是 1500 元，相當便宜。", ""),
    ("The service handles 1,500 requests per second.",
     "The service handles 1500 requests per second, which is fast.", ""),
    # a negation kept in other words, an opener the claim adds
    ("The library does not support Windows.", "There is no Windows support in the library.", ""),
    ("According to the notes, Redis keeps data in memory.", "Redis keeps data in memory.", ""),
    ("Arsenal won the FA Cup in 2005.", "Arsenal won six FA Cups, one in 2005.", ""),
])
def test_a_faithful_claim_passes(claim: str, sentence: str, context: str) -> None:
    assert unfaithful(claim, sentence, context) is None


@pytest.mark.parametrize(("claim", "sentence", "context", "why"), [
    ("The Seine flows through Paris.", "The Seine flows through Berlin.",
     "Paris is the capital of France.", "Paris"),  # no pronoun: no name from elsewhere
    ("The tower is 324 metres tall.", "The tower is 330 metres tall.", "", "324"),
    ("處理 1500 個請求", "處理一千個請求", "", "1500"),
    ("Redis does not keep data in memory.", "Redis keeps data in memory.", "", "negates"),
    ("Redis 不把資料放在記憶體。", "Redis 把資料放在記憶體。", "", "negates"),
])
def test_a_claim_that_says_something_else_fails_with_the_reason(
    claim: str, sentence: str, context: str, why: str
) -> None:
    reason = unfaithful(claim, sentence, context)
    assert reason is not None and why in reason


@pytest.mark.parametrize(("sentence", "claims"), [
    ("Paris, the capital of France, lies on the Seine.",
     ["Paris is the capital of France.", "Paris lies on the Seine."]),
    ("巴黎是法國的首都，也是最大的城市。", ["巴黎是法國的首都", "巴黎是法國最大的城市"]),
    ("它支援更快的啟動。", ["Python 3.12 支援更快的啟動"]),
    ("The API does not retry, and it logs every call.",
     ["The API does not retry.", "The API logs every call."]),
])
def test_claims_that_keep_the_sentence_cover_it(sentence: str, claims: list[str]) -> None:
    assert uncovered_content(sentence, claims) is None


@pytest.mark.parametrize(("sentence", "claims", "lost"), [
    ("The Seine flows through Berlin.", ["The Seine flows through Paris."], "Berlin"),
    ("塞納河流經柏林。", ["塞納河流經巴黎。"], "柏林"),
    ("The tower is 330 metres tall.", ["The tower is tall."], "330"),
    ("The API does not retry.", ["The API retries."], "negation"),
])
def test_claims_that_leave_out_what_the_sentence_states_are_named(
    sentence: str, claims: list[str], lost: str
) -> None:
    reason = uncovered_content(sentence, claims)
    assert reason is not None and lost in reason
