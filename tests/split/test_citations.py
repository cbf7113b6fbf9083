"""Citations written inside answers: markers, inline titles and the sentences they cover."""

from __future__ import annotations

from judge.records import Source
from judge.split.citations import Sentence, find_markers, segment_answer, strip_markers

S1 = Source(id="S1", title="Spring Security 認證", text="401 表示身分未確認。")
S2 = Source(id="S2", title="Spring Security 授權", text="403 表示已認證但權限不足。")
NOTE = Source(id="n1", title="筆記標題", text="筆記內容。")
COBRA = Source(id="c1", title="Cobra CLI 框架", text="Cobra 是 Go 的 CLI 框架。")


def cited(sentences: list[Sentence]) -> list[tuple[str, list[str]]]:
    return [(s.text, [c.source for c in s.citations]) for s in sentences]


def test_chinese_bracket_markers_attach_to_their_sentences() -> None:
    answer = "401 表示身分未確認 [S1]。403 表示已認證但權限不足 [S2]。"
    got = segment_answer(answer, [S1, S2])
    assert cited(got) == [
        ("401 表示身分未確認。", ["S1"]),
        ("403 表示已認證但權限不足。", ["S2"]),
    ]
    first, second = got
    assert answer[first.start : first.end] == "401 表示身分未確認 [S1]。"
    assert answer[second.start : second.end] == "403 表示已認證但權限不足 [S2]。"
    assert not first.inherited and not second.inherited


def test_title_form_covers_the_preceding_uncited_sentences() -> None:
    answer = "Cobra 是 CLI 框架。它支援子指令。它也支援 flag（依據：《筆記標題》）"
    got = segment_answer(answer, [NOTE, COBRA])
    assert cited(got) == [
        ("Cobra 是 CLI 框架。", ["n1"]),
        ("它支援子指令。", ["n1"]),
        ("它也支援 flag", ["n1"]),
    ]
    assert [s.inherited for s in got] == [True, True, False]


def test_title_after_the_last_sentence_of_a_paragraph() -> None:
    answer = "第一句。第二句。（依據：《筆記標題》）\n\n第三句沒有引用。"
    got = segment_answer(answer, [NOTE])
    assert cited(got) == [("第一句。", ["n1"]), ("第二句。", ["n1"]), ("第三句沒有引用。", [])]


def test_trailing_citation_stops_at_cited_sentence_and_paragraph() -> None:
    answer = "A is true [S1]. B follows. C also [S2].\n\nD stands alone. E too [S1]. F none."
    got = segment_answer(answer, [S1, S2])
    assert cited(got) == [
        ("A is true.", ["S1"]),
        ("B follows.", ["S2"]),
        ("C also.", ["S2"]),
        ("D stands alone.", ["S1"]),
        ("E too.", ["S1"]),
        ("F none.", []),
    ]
    assert cited(segment_answer("Uncited first.\n\nSecond [S1].", [S1]))[0] == (
        "Uncited first.", [])


def test_marker_after_the_full_stop_belongs_to_the_previous_sentence() -> None:
    got = segment_answer("401 means unauthenticated. [S1] 403 means forbidden. [S2]", [S1, S2])
    assert cited(got) == [("401 means unauthenticated.", ["S1"]),
                          ("403 means forbidden.", ["S2"])]


def test_numeric_markers_map_by_position_unless_ids_are_numbers() -> None:
    a, b = Source(id="alpha", text="x"), Source(id="beta", text="y")
    assert cited(segment_answer("One [1]. Two 【2】.", [a, b])) == [
        ("One.", ["alpha"]), ("Two.", ["beta"])]
    two, one = Source(id="2", text="x"), Source(id="1", text="y")
    assert cited(segment_answer("One [1].", [two, one])) == [("One.", ["1"])]


def test_multiple_markers_and_lists() -> None:
    for answer in ("Both hold [S1, S2].", "Both hold [S1][S2].", "Both hold [S1、S2]。",
                   "Both hold ［S1］［S2］."):
        ((_, sources),) = cited(segment_answer(answer, [S1, S2]))
        assert sources == ["S1", "S2"], answer
    ((_, ranged),) = cited(segment_answer("All three [1-2].", [S1, S2]))
    assert ranged == ["S1", "S2"]


def test_unknown_markers_are_kept_not_dropped() -> None:
    got = segment_answer("401 表示身分未確認 [S9]。Five [5].", [S1, S2])
    assert cited(got) == [("401 表示身分未確認。", ["S9"]), ("Five.", ["5"])]
    got = segment_answer("結論如此（來源：《不存在的筆記》）。", [NOTE])
    assert cited(got) == [("結論如此。", ["不存在的筆記"])]


def test_english_source_label_and_bare_titles() -> None:
    got = segment_answer("Cobra builds CLIs (source: Cobra CLI 框架). Flags bind.", [COBRA])
    assert cited(got) == [("Cobra builds CLIs.", ["c1"]), ("Flags bind.", [])]
    inline = segment_answer("詳見《Cobra CLI 框架》的說明。", [COBRA])
    assert cited(inline) == [("詳見《Cobra CLI 框架》的說明。", ["c1"])]
    assert cited(segment_answer("我喜歡《三體》這本書。", [COBRA])) == [("我喜歡《三體》這本書。", [])]


def test_simplified_chinese_labels_and_title_normalisation() -> None:
    got = segment_answer("它是框架（依据：《cobra cli 框架》、《筆記標題》）", [COBRA, NOTE])
    assert cited(got) == [("它是框架", ["c1", "n1"])]


def test_brackets_that_are_not_citations() -> None:
    answer = "See $.metrics[2].value and a[0][1] or [optional] text."
    assert find_markers(answer, [S1]) == []
    ((text, sources),) = cited(segment_answer(answer, [S1]))
    assert text == answer and sources == []


def test_list_bullets_are_separate_paragraphs_and_stripped() -> None:
    answer = "- 401 表示身分未確認\n- 403 表示權限不足 [S2]"
    got = segment_answer(answer, [S1, S2])
    assert cited(got) == [("401 表示身分未確認", []), ("403 表示權限不足", ["S2"])]
    assert answer[got[1].start : got[1].end].startswith("403")


def test_strip_markers_keeps_offsets() -> None:
    text = "401 [S1]。見（依據：《筆記標題》）"
    stripped = strip_markers(text, [S1, NOTE])
    assert len(stripped) == len(text)
    assert "[S1]" not in stripped and "依據" not in stripped
    assert stripped.index("。") == text.index("。")


def test_sources_that_differ_only_in_a_title_are_indexed_apart() -> None:
    # the index is shared among callers with the same sources: ids and titles both count
    renamed = Source(id="n1", title="另一個標題", text="筆記內容。")
    answer = "結論如此（依據：《筆記標題》）。"
    assert [c.source for mk in find_markers(answer, [NOTE]) for c in mk.citations] == ["n1"]
    # an unknown title is kept as written, not resolved to the id of the other title
    assert [c.source for mk in find_markers(answer, [renamed]) for c in mk.citations] == [
        "筆記標題"]
    assert [c.source for mk in find_markers(answer, [NOTE]) for c in mk.citations] == ["n1"]


def test_the_same_sources_share_one_index_and_the_order_counts() -> None:
    from judge.split.citations import source_index

    copy = Source(id="S1", title="Spring Security 認證", text="another text, same id and title")
    assert source_index([S1, S2]) is source_index([copy, S2])
    assert source_index([S1, S2]) is not source_index([S2, S1])
    # numbered markers follow the sources' order
    assert [c.source for mk in find_markers("見 [1]。", [S2, S1]) for c in mk.citations] == ["S2"]
    assert [c.source for mk in find_markers("見 [1]。", [S1, S2]) for c in mk.citations] == ["S1"]
