"""Gold files: validation with line numbers, provenance (people only), revisions, conversion to
answer records, the repository's gold sets, and the README quality table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.evaluation.gold import GoldRejected, load_gold, read_gold
from judge.evaluation.matching import gold_to_records
from judge.records import AnswerRecord
from judge.records.models import MAX_ID_CHARS
from judge.split.claims import claim_id
from tests.conftest import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
SRC = [{"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."}]


def item(i: int | str, **kw: Any) -> dict[str, Any]:
    base = {"id": f"g{i}", "dataset": "t", "question": None, "answer": None, "sources": SRC,
            "claim": "401 means unauthenticated.", "label": "supported", "subtype": None,
            "original_label": None, "annotator": "human:alice"}
    return {**base, **kw}


def test_every_problem_is_reported_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    lines = [
        json.dumps(item(1)),                                         # 1 ok
        "{not json",                                                 # 2
        json.dumps(item(3, label="mostly_true")),                    # 3 unknown label
        "",                                                          # 4 blank: skipped
        json.dumps(item(5, annotator="model:gpt-4o")),               # 5 a model's label
        json.dumps(item(1)),                                         # 6 duplicate id
        json.dumps(item(7, subtype="opinion")),                      # 7 supported + subtype
        json.dumps(item(8, label="contradicted", subtype="vibes")),  # 8 unknown subtype
        json.dumps(item(9, claim="   ")),                            # 9 empty claim
        json.dumps(item(10, revision={"original_label": "supported", "reason": " "})),  # 10
        json.dumps(item(11, annotator="openai/gpt-4o-mini")),        # 11 a model again
        json.dumps(item(12, citations=[{"source": "S9"}])),          # 12 unknown source
        json.dumps(item(13, colour="blue")),                         # 13 warning only
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gold = read_gold(path)
    got = {(p.line, p.kind) for p in gold.problems}
    assert got == {(2, "error"), (3, "error"), (5, "refused"), (6, "error"), (7, "error"),
                   (8, "error"), (9, "error"), (10, "error"), (11, "refused"), (12, "error"),
                   (13, "warning")}
    messages = {p.line: p.message for p in gold.problems}
    assert "invalid JSON" in messages[2]
    assert "'mostly_true' is not one of" in messages[3]
    assert "not a person" in messages[5] and "never counts as gold" in messages[5]
    assert "duplicate id 'g1' (first on line 1)" in messages[6]
    assert "takes no subtype" in messages[7]
    assert "'vibes' is not one of" in messages[8]
    assert "claim is empty" in messages[9]
    assert "reason" in messages[10]
    assert "'S9'" in messages[12]
    assert "colour" in messages[13]
    assert [e.line for e in gold.entries] == [1, 13]
    assert not gold.ok
    with pytest.raises(GoldRejected) as exc:
        load_gold(path)
    text = str(exc.value)
    assert "2 item(s) refused" in text and "line 5 (g5): refused" in text
    assert "line 3 (g3): error" in text


def test_nul_and_a_byte_order_mark_in_mid_file_are_reported(tmp_path: Path) -> None:
    from tests.records.test_records import _marked_lines

    def line(n: int, extra: str = "") -> bytes:
        return json.dumps(item(n, claim="401 means unauthenticated." + extra),
                          ensure_ascii=False).encode()

    path = tmp_path / "gold.jsonl"
    path.write_bytes(_marked_lines(line))
    gold = read_gold(path)
    # a stray BOM or a raw NUL makes the line unreadable; a NUL written \u0000 in a text is a
    # warning: the item (a person's label on that text) is kept
    assert {(p.line, p.kind) for p in gold.problems} == {
        (2, "error"), (3, "error"), (4, "warning"), (5, "error")}
    messages = {p.line: p.message for p in gold.problems}
    assert "U+FEFF" in messages[2] and "U+FEFF" in messages[3]
    assert "U+0000" in messages[4] and "U+0000" in messages[5]
    assert [e.line for e in gold.entries] == [1, 4, 6] and not gold.ok


def test_a_model_anywhere_in_the_provenance_is_refused(tmp_path: Path) -> None:
    reviews = [{"annotator": "human:alice", "label": "supported"},
               {"annotator": "judge:v1", "label": "supported"}]
    adjudication = {"adjudicator": "model:claude", "reason": "tie",
                    "original_labels": [{"annotator": "human:alice", "label": "supported"}]}
    path = write_jsonl(tmp_path / "g.jsonl", [
        item(1, reviews=reviews),
        item(2, adjudication=adjudication),
        item(3, annotator="human:"),          # not a valid person id
        item(4, annotator="alice"),           # no human: prefix
    ])
    gold = read_gold(path)
    assert [(p.line, p.kind) for p in gold.problems] == [
        (1, "refused"), (2, "refused"), (3, "refused"), (4, "refused")]
    assert "reviews[1].annotator 'judge:v1'" in gold.problems[0].message
    assert "adjudication.adjudicator 'model:claude'" in gold.problems[1].message
    assert gold.entries == []


def test_revisions_keep_the_original_and_the_reason(tmp_path: Path) -> None:
    revised = item(1, label="not_in_source", subtype="partial_support", revision={
        "original_label": "contradicted", "original_subtype": "unsupported_addition",
        "reason": "the trailing mean is computed by the program; only the window is missing",
        "revised_by": "human:alice", "revised_at": "2026-03-07"})
    from_model = item(2, revision={"original_label": "not_in_source", "reason": "re-read",
                                   "original_annotator": "model:pre-label"})
    missing = item(3, revision={"original_label": "supported"})
    path = write_jsonl(tmp_path / "g.jsonl", [revised, from_model, missing])
    gold = read_gold(path)
    assert [e.line for e in gold.entries] == [1, 2]
    rev = gold.entries[0].item.revision
    assert rev is not None and rev.original_label == "contradicted" and "window" in rev.reason
    assert [(p.line, p.kind) for p in gold.problems] == [(2, "warning"), (3, "error")]
    assert "current label is a person's revision" in gold.problems[0].message
    assert "reason" in gold.problems[1].message


def test_the_review_queue_export_format_is_accepted(tmp_path: Path) -> None:
    exported = {
        "id": "c-0123456789abcdef", "dataset": "review:q-1", "question": "q", "answer": "a",
        "sources": [{"id": "S1", "text": "x"}, {"id": "d.json", "json": {"v": 1}}],
        "claim": "claim text", "label": "contradicted", "subtype": "overgeneralization",
        "original_label": None, "annotator": "human:carol", "guideline_version": "g-7",
        "review_status": "adjudicated",
        "adjudication": {"id": "adj-1", "adjudicator": "human:carol", "reason": "usually",
                         "decided_at": "2026-01-01", "original_labels": [
                             {"annotator": "human:alice", "label": "supported",
                              "subtype": None, "review_id": "r1"},
                             {"annotator": "human:bob", "label": "contradicted",
                              "subtype": "overgeneralization", "review_id": "r2"}]},
        "reviews": [{"review_id": "r1", "annotator": "human:alice", "label": "supported",
                     "subtype": None, "note": None, "revision": 1, "guideline_version": "g-7",
                     "created_at": "t"},
                    {"review_id": "r2", "annotator": "human:bob", "label": "contradicted",
                     "subtype": "overgeneralization", "note": "usually", "revision": 1,
                     "guideline_version": "g-7", "created_at": "t"}],
        "claim_id": "c-0123456789abcdef", "answer_id": "a1", "queue_id": "q-1",
        "stratum": "passed", "stratum_size": 64, "sample_size": 20, "weight": 3.2,
    }
    gold = read_gold(write_jsonl(tmp_path / "g.jsonl", [exported]))
    assert gold.ok and gold.problems == []
    got = gold.entries[0].item
    assert got.sampled_weight == pytest.approx(3.2)
    assert got.person_labels() == [("human:alice", "supported"), ("human:bob", "contradicted")]
    bad = {**exported, "stratum_size": 10, "sample_size": 20}
    assert not read_gold(write_jsonl(tmp_path / "b.jsonl", [bad])).ok


def test_gold_items_become_pre_split_claims_with_the_pipelines_claim_ids(tmp_path: Path) -> None:
    long_id = "0:https://example.org/" + "x" * (MAX_ID_CHARS + 100)
    entries = load_gold(write_jsonl(tmp_path / "g.jsonl", [
        # two claims of one answer: one record, judged together
        item(1, answer_id="ans-1", answer="401 means unauthenticated. 403 means forbidden.",
             citations=[{"source": "S1"}]),
        item(2, answer_id="ans-1", answer="401 means unauthenticated. 403 means forbidden.",
             claim="403 means forbidden."),
        # an item of its own with a long source id, citing every source by default
        item(3, sources=[{"id": long_id, "text": "Douglas retired in 1975."}],
             claim="Douglas retired in 1975."),
        # the same claim with the same sources as item 3, labelled again: same claim
        item(4, sources=[{"id": long_id, "text": "Douglas retired in 1975."}],
             claim="Douglas retired in 1975.", annotator="human:bob"),
    ])).entries
    conv = gold_to_records(entries)
    assert conv.problems == []
    assert len(conv.records) == 2
    grouped, single = conv.records
    assert [c["text"] for c in grouped["claims"]] == ["401 means unauthenticated.",
                                                      "403 means forbidden."]
    assert grouped["id"].startswith("gold-") and grouped["id"] != "ans-1"
    short = single["sources"][0]["id"]
    assert len(short) <= MAX_ID_CHARS and short != long_id
    assert single["claims"][0]["citations"] == [{"source": short}]
    for record in conv.records:
        AnswerRecord.model_validate(record)
    assert conv.refs["g1"].claim_id == claim_id(grouped["id"], "401 means unauthenticated.", 0)
    assert conv.refs["g2"].claim_id == claim_id(grouped["id"], "403 means forbidden.", 0)
    assert conv.refs["g3"] == conv.refs["g4"]
    # deterministic: the same gold gives the same records
    assert gold_to_records(entries).jsonl() == conv.jsonl()


def test_the_repositorys_gold_sets_are_valid_and_usable() -> None:
    for name in ("gold/samples/gold.jsonl", "gold/regression.jsonl", "gold/eval_subset.jsonl",
                 "gold/eval_large.jsonl", "gold/eval_xl.jsonl", "gold/eval_all.jsonl",
                 *(f"gold/external/{d}.dev.jsonl"
                   for d in ("factcheck_gpt", "wice", "begin", "dialfact"))):
        gold = load_gold(ROOT / name)
        # one source text of Factcheck-GPT holds a NUL: reported, the label kept
        known = [(68, "warning")] if "factcheck_gpt" in name else []
        assert [(p.line, p.kind) for p in gold.problems] == known, name
        assert all("U+0000" in p.message for p in gold.problems), name
        conv = gold_to_records(gold.entries)
        assert conv.problems == [], name
    regression = load_gold(ROOT / "gold/regression.jsonl").items
    assert 10 <= len(regression) <= 20
    assert {i.annotator for i in regression} == {"human:claim-judge-maintainers"}
    assert any("\u4e00" <= ch <= "\u9fff" for i in regression for ch in i.claim)  # Chinese
    assert any(i.claim.isascii() for i in regression)                            # English


def test_sample_gold_belongs_to_the_sample_answers() -> None:
    answers = {json.loads(line)["id"]: json.loads(line)
               for line in (ROOT / "gold/samples/answers.jsonl").read_text().splitlines()
               if line.strip()}
    gold = load_gold(ROOT / "gold/samples/gold.jsonl").items
    assert {i.answer_id for i in gold} == set(answers)
    for i in gold:
        answer = answers[i.answer_id]
        assert i.annotator == "human:claim-judge-maintainers" and i.guideline_version == "g1"
        assert [s.model_dump(by_alias=True, exclude_none=True) for s in i.sources] == \
            answer["sources"]
        assert i.generator == answer.get("generator")
        if answer.get("claims"):
            assert i.claim in [c["text"] for c in answer["claims"]]
        else:  # a sentence of the answer, citation markers removed
            core = i.claim.rstrip("。.")
            assert core in answer["answer"].replace(" [S1]", "").replace(" [tok]", "") \
                .replace(" [py-rel]", "").replace(" [A]", "").replace(" [csrf-guide]", "") \
                .replace("（依據：《產品筆記：方案價格》）", "")




def test_the_check_subsets_are_nested_and_drawn_from_the_check_part_only() -> None:
    """48 < 156 < 358 < every check item (less exact duplicates of claim and sources)."""
    splits = json.loads((ROOT / "gold/splits.json").read_text())
    check = {i for parts in splits["datasets"].values() for i in parts["check"]}
    ids = {name: [i.id for i in load_gold(ROOT / f"gold/{name}.jsonl").items]
           for name in ("eval_subset", "eval_large", "eval_xl", "eval_all")}
    for name, found in ids.items():
        assert len(found) == len(set(found)) and set(found) <= check, name
    assert set(ids["eval_subset"]) < set(ids["eval_large"]) < set(ids["eval_xl"]) \
        < set(ids["eval_all"])
    xl = load_gold(ROOT / "gold/eval_xl.jsonl").items
    # every not_verifiable claim of the check parts: the rarest label is measured in full
    external = [json.loads(line) for d in splits["datasets"]
                for line in (ROOT / f"gold/external/{d}.dev.jsonl").read_text().splitlines()
                if line.strip()]
    rare = {i["id"] for i in external if i["id"] in check and i["label"] == "not_verifiable"}
    assert rare and rare <= {i.id for i in xl}






def test_a_source_repeated_whole_is_read_once_and_a_clash_is_an_error(tmp_path: Path) -> None:
    other = {"id": "S1", "text": "Another text under the same id."}
    path = write_jsonl(tmp_path / "gold.jsonl", [
        item(1, sources=SRC + SRC),            # an upstream set listed its passage twice
        item(2, sources=SRC + [other]),        # the same id with other content
    ])
    gold = read_gold(path)
    assert [e.item.id for e in gold.entries] == ["g1"]
    assert gold.entries[0].item.sources[0].text == SRC[0]["text"]
    assert len(gold.entries[0].item.sources) == 1
    assert [(p.line, p.kind) for p in gold.problems] == [(1, "warning"), (2, "error")]
    assert "repeated whole" in gold.problems[0].message
    assert "different content" in gold.problems[1].message
    conv = gold_to_records(gold.entries)
    assert len(conv.records[0]["sources"]) == 1
