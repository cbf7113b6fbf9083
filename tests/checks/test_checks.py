"""The deterministic, model-free layer: text normalisation, quotes, JSON paths, quantities,
claim checks and the program-computed strength."""

from __future__ import annotations

from typing import Any

import pytest

from judge.checks.claims import (
    check_evidence_quotes,
    citation_exists,
    evidence_text,
    json_path_resolves,
    numbers_match,
    quote_found,
    run_claim_checks,
)
from judge.checks.jsonpath import resolve_json_path
from judge.checks.quantities import extract_quantities, parse_chinese_numeral
from judge.checks.strength import strength
from judge.records import AnswerRecord, Citation
from judge.text import (
    best_passages,
    find_quote,
    lexical_overlap,
    normalize_with_map,
    split_sentences,
    tokens,
)
from judge.verdicts import Check, Evidence

AUTH_TEXT = "401 表示身分未確認。403 表示已認證但權限不足。"


def record(*sources: dict[str, Any], answer: str = "answer") -> AnswerRecord:
    return AnswerRecord.model_validate({"answer": answer, "sources": list(sources)})


def numbers(claim: str, *sources: dict[str, Any], cites: list[Citation] | None = None) -> Check:
    rec = record(*sources)
    cites = cites if cites is not None else [Citation(source=s["id"]) for s in sources]
    return numbers_match(claim, cites, rec)


# -- normalisation ----------------------------------------------------------------------------


def test_full_width_digits_fold_and_map_back_to_original_offsets() -> None:
    text = "日期：２０２６年"
    norm, mapping = normalize_with_map(text)
    assert norm == "日期:2026年"
    at = norm.index("2026")
    assert mapping[at] == 3 and text[mapping[at]] == "２"
    assert text[mapping[at + 3]] == "６"
    assert len(mapping) == len(norm)


def test_cjk_punctuation_and_quotes_are_unified() -> None:
    norm, mapping = normalize_with_map("他說：「好。」（是）、『對』")
    assert norm == '他說:"好."(是),"對"'
    assert mapping[norm.index(".")] == 5  # the 。


def test_whitespace_collapses_and_is_dropped_between_cjk() -> None:
    text = "Hello   \n World\t中 文  字"
    norm, mapping = normalize_with_map(text)
    assert norm == "hello world中文字"
    assert text[mapping[norm.index("w")]] == "W"
    assert mapping[norm.index("文")] == text.index("文")
    assert normalize_with_map("  a  ")[0] == "a"


def test_ellipsis_expansion_maps_every_char_to_the_same_original() -> None:
    norm, mapping = normalize_with_map("a…b")
    assert norm == "a...b" and mapping == [0, 1, 1, 1, 2]


# -- quotes ----------------------------------------------------------------------------------


def test_find_quote_returns_original_offsets_across_width_and_spacing() -> None:
    text = "規則：409 次請求在 ２０２６ 年被拒絕，原因是「權限不足」。"
    span = find_quote("在2026年被拒絕,原因是", text)
    assert span is not None
    assert text[span[0] : span[1]] == "在 ２０２６ 年被拒絕，原因是"


def test_find_quote_chinese_with_surrounding_punctuation() -> None:
    span = find_quote("「403 表示已認證但權限不足。」", AUTH_TEXT)
    assert span is not None and AUTH_TEXT[span[0] : span[1]] == "403 表示已認證但權限不足"


def test_find_quote_english_case_and_quotes() -> None:
    text = "In WAL mode, readers don’t block writers."
    span = find_quote("\"readers don't block WRITERS\"", text)
    assert span is not None and text[span[0] : span[1]] == "readers don’t block writers"


def test_invented_or_altered_quote_is_not_found() -> None:
    assert find_quote("401 代表伺服器爆炸", AUTH_TEXT) is None
    assert find_quote("401 表示身分已確認", AUTH_TEXT) is None


def test_fragment_quotes_must_occur_in_order() -> None:
    span = find_quote("401 表示…權限不足", AUTH_TEXT)
    assert span == (0, AUTH_TEXT.index("權限不足") + 4)
    assert find_quote("readers ... writers", "readers never block writers") == (0, 27)
    assert find_quote("權限不足…401 表示", AUTH_TEXT) is None
    assert find_quote("401 表示…伺服器爆炸", AUTH_TEXT) is None


def test_empty_and_too_short_quotes_are_not_found() -> None:
    assert find_quote("", AUTH_TEXT) is None
    assert find_quote("「表」", AUTH_TEXT) is None
    assert find_quote("...", AUTH_TEXT) is None
    assert find_quote("表示", AUTH_TEXT) == (4, 6)


# -- tokens, overlap, sentences, passages ---------------------------------------------------------


def test_tokens_mix_latin_words_and_cjk_bigrams() -> None:
    assert tokens("The HTTP 401 表示身分") == ["http", "401", "表示", "示身", "身分"]
    assert tokens("是 1,000 tokens") == ["是", "1000", "tokens"]


def test_lexical_overlap_is_the_share_of_claim_tokens_in_evidence() -> None:
    assert lexical_overlap("401 表示身分未確認", AUTH_TEXT) == 1.0
    assert lexical_overlap("", AUTH_TEXT) == 0.0
    half = lexical_overlap("readers block", "readers never stop")
    assert half == pytest.approx(0.5)


def test_split_sentences_english_and_chinese() -> None:
    text = "Use Python 3.11, e.g. for tests. It works!\n1. First item\n中文一句。第二句！「引用。」"
    got = [text[s:e] for s, e in split_sentences(text)]
    assert got == [
        "Use Python 3.11, e.g. for tests.", "It works!", "1. First item",
        "中文一句。", "第二句！", "「引用。」",
    ]


def test_an_answer_read_twice_is_split_by_pysbd_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.text
    from judge.records import Source
    from judge.split.citations import segment_answer
    from judge.split.uncited import cites_nothing

    runs: list[str] = []
    real = judge.text._pysbd_starts

    def counted(text: str) -> frozenset[int]:
        runs.append(text)
        return real(text)

    monkeypatch.setattr(judge.text, "_pysbd_starts", counted)
    answer = "A fresh answer, read twice (cached split) at 3 p.m. today. It cites nothing."
    record = AnswerRecord(id="a", question="q", answer=answer,
                          sources=[Source(id="s", text="t.")])
    assert cites_nothing(record)  # the run reading the batch
    spans = [(s.start, s.end) for s in segment_answer(answer, record.sources)]  # the split
    second = answer.index("It cites")
    expected = [(0, second - 1), (second, len(answer))]  # "3 p.m." ends no sentence
    assert spans == expected
    assert runs == [answer]
    first = split_sentences(answer)
    first.append((0, 1))  # every caller gets a list of its own
    assert split_sentences(answer) == expected


def test_a_text_longer_than_the_cache_takes_is_split_each_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.text

    runs: list[int] = []
    real = judge.text._pysbd_starts
    monkeypatch.setattr(judge.text, "_pysbd_starts",
                        lambda text: runs.append(len(text)) or real(text))
    long = "One sentence here. " * (judge.text.CACHED_CHARS // 19 + 1)
    assert split_sentences(long) == split_sentences(long)
    assert len(runs) == 2


def test_best_passages_ranks_by_weighted_overlap_with_original_offsets() -> None:
    text = "SQLite allows one writer. WAL mode lets readers continue. Backups are separate."
    (first, *_rest) = best_passages("In WAL mode readers continue", text, k=2)
    start, end, score = first
    assert text[start:end] == "WAL mode lets readers continue."
    assert 0 < score <= 1
    assert best_passages("nothing relevant here zzz", text) == []
    zh = best_passages("403 權限不足", AUTH_TEXT, k=1)
    assert AUTH_TEXT[zh[0][0] : zh[0][1]] == "403 表示已認證但權限不足。"


# -- JSON paths -------------------------------------------------------------------------------

DOC = {"metrics": [{"metric": "resting_hr", "value": 61.0}], "指標": {"心率": [70, 72]},
       "a.b": {"k'q": 1}}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("$.metrics[0].value", 61.0),
        ("$['metrics'][0]['metric']", "resting_hr"),
        ('$.指標["心率"][-1]', 72),
        ("$['a.b']['k\\'q']", 1),
        ("metrics[0].metric", "resting_hr"),
        ("$", DOC),
    ],
)
def test_json_path_resolves(path: str, value: Any) -> None:
    assert resolve_json_path(DOC, path) == (True, value)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("$.metrics[3].value", "index 3 out of range at $.metrics (length 1)"),
        ("$.metrics[-2]", "index -2 out of range at $.metrics (length 1)"),
        ("$.missing", "key 'missing' not found at $"),
        ("$.metrics.value", "needs an object but $.metrics is an array"),
        ("$.metrics[0].value[0]", "[0] needs an array but $.metrics[0].value is a float"),
        ("$.metrics[*]", "unsupported or malformed path syntax"),
    ],
)
def test_json_path_failures_name_the_segment(path: str, reason: str) -> None:
    ok, why = resolve_json_path(DOC, path)
    assert ok is False and reason in why


def test_json_path_check_on_text_source_and_unknown_source() -> None:
    rec = record({"id": "t", "text": "plain"}, {"id": "j", "json": DOC})
    on_text = json_path_resolves("t", "$.metrics", rec, "citation[0]")
    assert on_text.outcome == "fail" and "text source" in on_text.detail["reason"]
    assert on_text.target == "citation[0]"
    assert json_path_resolves("nope", "$.metrics", rec).outcome == "skip"
    ok = json_path_resolves("j", "$.metrics[0].value", rec)
    assert ok.outcome == "pass" and ok.detail["value"] == "61.0"  # always text
    bad = json_path_resolves("j", "$.metrics[2]", rec)
    assert bad.outcome == "fail" and bad.detail["segment"] == "[2]"
    assert bad.detail["at"] == "$.metrics"


# -- citation / quote checks ------------------------------------------------------------------


def test_citation_exists_and_quote_found_checks() -> None:
    rec = record({"id": "S1", "text": AUTH_TEXT})
    assert citation_exists("S1", rec).outcome == "pass"
    missing = citation_exists("S9", rec, "citation[1]")
    assert missing.outcome == "fail" and missing.target == "citation[1]"
    assert missing.detail["known_sources"] == ["S1"]
    found = quote_found("S1", "403 表示已認證但權限不足", rec, "citation[0]")
    assert found.outcome == "pass"
    assert AUTH_TEXT[found.detail["start"] : found.detail["end"]] == "403 表示已認證但權限不足"
    invented = quote_found("S1", "401 代表伺服器爆炸", rec)
    assert invented.outcome == "fail" and "not found" in invented.detail["reason"]
    assert "nearest" in invented.detail
    assert quote_found("S1", "表", rec).outcome == "fail"
    assert quote_found("S9", "401", rec).outcome == "skip"


def test_run_claim_checks_covers_every_citation() -> None:
    rec = record({"id": "S1", "text": AUTH_TEXT}, {"id": "j", "json": DOC})
    cites = [
        Citation(source="S1", quote="401 表示身分未確認"),
        Citation(source="j", path="$.metrics[0].value"),
        Citation(source="S7"),
    ]
    checks = run_claim_checks("401 表示身分未確認，心率 61 [S1]", cites, rec)
    got = [(c.name, c.target, c.outcome) for c in checks]
    assert got == [
        ("citation_exists", "citation[0]", "pass"),
        ("quote_found", "citation[0]", "pass"),
        ("citation_exists", "citation[1]", "pass"),
        ("json_path_resolves", "citation[1]", "pass"),
        ("citation_exists", "citation[2]", "fail"),
        ("numbers_match", "claim", "pass"),
    ]
    assert checks[-1].detail["matched"] == ["401", "61"]


def test_check_evidence_quotes_sets_found_and_offsets() -> None:
    rec = record({"id": "S1", "text": AUTH_TEXT}, {"id": "j", "json": DOC})
    evidence = [
        Evidence(source_id="S1", quote="403 表示已認證"),
        Evidence(source_id="S1", quote="401 代表伺服器爆炸"),
        Evidence(source_id="S5", quote="anything"),
        Evidence(source_id="j", path="$.metrics[0].value"),
    ]
    out, checks = check_evidence_quotes(evidence, rec)
    assert out[0].found is True and AUTH_TEXT[out[0].start : out[0].end] == "403 表示已認證"
    assert out[1].found is False and out[1].start is None
    assert out[2].found is False
    assert out[3].found is True
    assert evidence[0].found is None  # inputs are not mutated
    assert [(c.name, c.target, c.outcome) for c in checks] == [
        ("quote_found", "evidence[0]", "pass"),
        ("quote_found", "evidence[1]", "fail"),
        ("citation_exists", "evidence[2]", "fail"),
        ("json_path_resolves", "evidence[3]", "pass"),
    ]


def test_evidence_text_uses_verified_pointers_only() -> None:
    rec = record({"id": "S1", "text": AUTH_TEXT}, {"id": "j", "json": DOC})
    assert evidence_text([Citation(source="S1", quote="403 表示已認證")], rec) == "403 表示已認證"
    # an invented quote is not evidence: the whole cited source is used instead
    assert evidence_text([Citation(source="S1", quote="999 invented")], rec) == AUTH_TEXT
    assert evidence_text([Citation(source="j", path="$.metrics[0]")], rec) == (
        '{"metric": "resting_hr", "value": 61.0}'
    )
    assert evidence_text([Citation(source="nope")], rec) == ""


# -- quantities and numbers_match -------------------------------------------------------------

S_AUTH = {"id": "S1", "text": AUTH_TEXT}


def test_status_code_mismatch_401_vs_403() -> None:
    check = numbers("404 表示找不到頁面", S_AUTH)
    assert check.outcome == "fail" and check.detail["missing"] == ["404"]
    ok = numbers("401 表示身分未確認", S_AUTH)
    assert ok.outcome == "pass" and ok.detail["matched"] == ["401"]
    swapped = numbers("403 means not authenticated", {"id": "S", "text": "401 means not authenticated"})
    assert swapped.detail["missing"] == ["403"]


def test_version_mismatch() -> None:
    src = {"id": "rel", "text": "Released in version 6.2 for Python 3.10."}
    assert numbers("版本 6.3 已發布", src).detail["missing"] == ["版本 6.3"]
    assert numbers("Version 6.2 is out", src).outcome == "pass"
    assert numbers("It needs Python 3.1", src).detail["missing"] == ["Python 3.1"]
    assert numbers("It needs Python 3.10", src).outcome == "pass"
    assert numbers("uses v6.2", src).outcome == "pass"
    assert numbers("uses HTTP/2", {"id": "h", "text": "HTTP/1.1 and 2 retries"}).outcome == "fail"


def test_decimal_matches_string_and_json_float() -> None:
    assert numbers("latency is 3.2 s", {"id": "j", "json": {"latency_s": "3.2"}}).outcome == "pass"
    assert numbers("latency is 3.2 s", {"id": "j", "json": {"latency_s": 3.25}}).outcome == "fail"
    cite = [Citation(source="j", path="$.metrics[0].value")]
    assert numbers("靜止心率為 61 bpm", {"id": "j", "json": DOC}, cites=cite).outcome == "pass"
    assert numbers("靜止心率為 62 bpm", {"id": "j", "json": DOC}, cites=cite).outcome == "fail"


def test_chinese_numerals_equal_arabic_with_counter() -> None:
    # Decision: Chinese numerals before a counter/unit are converted, so 三次 == 3 次.
    src = {"id": "d", "text": "每個案例各跑 3 次，共 18 次請求，兩份輸入。"}
    assert numbers("每個案例跑了三次", src).outcome == "pass"
    assert numbers("每個案例跑了四次", src).detail["missing"] == ["四次"]
    assert numbers("用了 2 份輸入", {"id": "z", "text": "用了兩份輸入"}).outcome == "pass"
    assert numbers("共十八次請求", src).outcome == "pass"


@pytest.mark.parametrize(
    ("text", "value"),
    [("三", 3), ("兩", 2), ("十", 10), ("十一", 11), ("二十三", 23), ("一百零五", 105),
     ("三萬五千", 35000), ("七八", None), ("萬", None)],
)
def test_parse_chinese_numeral(text: str, value: int | None) -> None:
    assert parse_chinese_numeral(text) == value


def test_idiomatic_chinese_numerals_are_not_quantities() -> None:
    assert extract_quantities("這十分重要，千萬不要統一處理，萬一出錯就是一個問題。") == []
    assert [q.value for q in extract_quantities("兩個來源、第三天、二十三歲")] == [2, 3, 23]


def test_dates_in_different_formats_agree() -> None:
    src = {"id": "d", "text": "生效日期 2026-01-01，檢查日 2026/3/5。"}
    for claim in ("自 2026年1月1日 起生效", "effective Jan 1, 2026", "on 1 January 2026",
                  "in 2026/01/01", "檢查日為三月五日", "in 2026"):
        assert numbers(claim, src).outcome == "pass", claim
    assert numbers("自 2026年1月2日 起生效", src).detail["missing"] == ["2026年1月2日"]
    assert numbers("effective Jan 1 2025", src).outcome == "fail"


def test_year_inside_a_date_is_counted_once() -> None:
    got = extract_quantities("2026年1月1日與 2026-01-01 相同")
    assert [q.kind for q in got] == ["date"]


def test_markers_and_list_numbers_are_not_quantities() -> None:
    assert [q.text for q in extract_quantities("1. 共 18 次請求\n2) 另見")] == ["18 次"]
    rec = record(S_AUTH, {"id": "S2", "text": "x"})
    check = numbers_match("表示權限不足 [1][S2]。", [Citation(source="S1")], rec)
    assert check.outcome == "skip" and check.detail["reason"] == "no quantities in claim"
    assert [q.text for q in extract_quantities("see $.metrics[2].value")] == []


def test_percent_units_and_conversions() -> None:
    assert numbers("成功率 61%", {"id": "j", "json": {"rate": 0.61}}).outcome == "pass"
    assert numbers("成功率 61%", {"id": "t", "text": "成功率 61 %"}).outcome == "pass"
    assert numbers("成功率 62%", {"id": "t", "text": "成功率 61 %"}).outcome == "fail"
    assert numbers("回應 1.5 秒", {"id": "t", "text": "p95 1500 ms"}).outcome == "pass"
    assert numbers("uses 5 GB", {"id": "t", "text": "uses 5 MB"}).outcome == "fail"
    assert numbers("3–5 天", {"id": "t", "text": "3 到 5 天"}).outcome == "pass"
    assert numbers("3–6 天", {"id": "t", "text": "3 到 5 天"}).detail["missing"] == ["6 天"]
    assert numbers("10k tokens", {"id": "t", "text": "10,000 tokens"}).outcome == "pass"


def test_identifiers_with_digits_must_occur() -> None:
    src = {"id": "t", "text": "模型為 qwen3.5:9b，本機執行。"}
    assert numbers("用 qwen3.5:9b 跑完", src).outcome == "pass"
    assert numbers("用 qwen2.5:9b 跑完", src).detail["missing"] == ["qwen2.5:9b"]


def test_numbers_skip_without_quantities_or_cited_sources() -> None:
    assert numbers("表示權限不足", S_AUTH).outcome == "skip"
    rec = record(S_AUTH)
    no_cite = numbers_match("401 表示身分未確認", [], rec)
    assert no_cite.outcome == "skip" and no_cite.detail["quantities"] == ["401"]
    unknown = numbers_match("401 表示身分未確認", [Citation(source="S9")], rec)
    assert unknown.outcome == "skip"


# -- strength ---------------------------------------------------------------------------------


def _strength(claim: str, quote: str | None, cites: list[Citation]) -> float:
    rec = record(S_AUTH)
    evidence = [Evidence(source_id="S1", quote=quote)] if quote else []
    evidence, ev_checks = check_evidence_quotes(evidence, rec)
    checks = run_claim_checks(claim, cites, rec) + ev_checks
    return strength(claim, evidence, checks, rec)


def test_strength_rewards_verbatim_evidence_and_agreeing_numbers() -> None:
    cite = [Citation(source="S1")]
    verbatim = _strength("401 表示身分未確認", "401 表示身分未確認", cite)
    assert verbatim == 1.0
    passage_only = _strength("401 表示身分未確認", None, cite)
    assert 0 < passage_only < verbatim
    invented = _strength("401 表示身分未確認", "401 代表伺服器爆炸", cite)
    assert invented <= 0.5
    wrong_number = _strength("404 表示身分未確認", "表示身分未確認", cite)
    assert wrong_number <= 0.5
    assert _strength("完全無關的句子", None, []) == 0.0


def test_strength_is_bounded_and_deterministic() -> None:
    cite = [Citation(source="S1")]
    values = {_strength("403 表示已認證但權限不足", "403 表示已認證", cite) for _ in range(3)}
    assert len(values) == 1
    (value,) = values
    assert 0.0 <= value <= 1.0


def test_times_and_impossible_dates() -> None:
    src = {"id": "t", "text": "排程於 2026-03-05T10:30:00Z 執行。"}
    assert numbers("10:30 執行", src).outcome == "pass"
    assert numbers("10:45 執行", src).detail["missing"] == ["10:45"]
    assert [(q.kind, q.value) for q in extract_quantities("2026-02-30")] == [
        ("number", 2026), ("number", 2), ("number", 30)]
    assert extract_quantities("you may 5 times") == [extract_quantities("5 times")[0]]
