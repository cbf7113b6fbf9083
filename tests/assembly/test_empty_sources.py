"""Empty means empty: a source whose text shows nothing (whitespace, U+3000 and the other
Unicode spaces, zero-width and other format characters, characters that render as nothing)
or whose JSON document holds no value is one ``Source.is_empty`` says so of, and no claim can
be ``supported`` on it: through the real pipeline, with a scripted provider that labels every
claim supported (batch: with and without quoting the source; probe: a head whose intercept
favours supported), each such claim ends ``not_in_source`` flagged ``empty_source``, while the
same claims on sources that do hold something stay supported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.decide.probe_head import ProbeHead
from judge.records import Source
from judge.records.models import holds_no_values, is_blank
from judge.store import Store
from judge.verdicts import LABELS
from tests.conftest import FAKE_MODEL, write_jsonl
from tests.fakes import FakeLLM, claim_texts, framed_sources, rule_responder

CLAIM = "Paris is the capital of France."

#: Every spelling of "nothing" as a source's text.
EMPTY_TEXTS = {
    "nothing": "",
    "spaces": "   ",
    "tabs_and_newlines": "\t\r\n\v\f",
    "ideographic_space": "\u3000",
    "ideographic_spaces_and_newlines": "\u3000\u3000\n\u3000",
    "no_break_spaces": "\u00a0\u2007\u202f",
    "other_unicode_spaces": "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
                            "\u205f\u1680",
    "line_and_paragraph_separators": "\u2028\u2029\u0085",
    "zero_width_space": "\u200b",
    "zero_width_joiners": "\u200c\u200d",
    "word_joiner": "\u2060",
    "byte_order_mark": "\ufeff",
    "soft_hyphen": "\u00ad",
    "direction_marks": "\u200e\u200f\u061c\u202a\u202e\u2066\u2069",
    "mongolian_vowel_separator": "\u180e",
    "invisible_operators": "\u2061\u2062\u2063\u2064",
    "tag_characters": "\U000e0020\U000e0041\U000e007f",
    "variation_selectors": "\ufe0f\ufe00\U000e0100",
    "combining_grapheme_joiner": "\u034f",
    "hangul_fillers": "\u3164\u115f\u1160\uffa0",
    "braille_blank": "\u2800",
    "control_characters": "\x01\x1f\x7f",
    "mixed": " \u200b\u3000\ufeff\u00ad\u2060\n\u200d\u00a0",
}
#: Every spelling of "no value" as a source's JSON document.
EMPTY_JSON: dict[str, Any] = {
    "object": {},
    "array": [],
    "object_of_empty_array": {"a": []},
    "object_of_empty_object": {"a": {}},
    "object_of_null": {"a": None},
    "array_of_null": [None],
    "array_of_empties": [[], {}, None],
    "empty_string": {"a": ""},
    "blank_strings": {"a": " \u3000", "b": ["\u200b", "\ufeff"]},
    "deeply_nested": {"a": {"b": [None, "", {"c": "\u200b", "d": []}]}},
    "bare_empty_string": "",
    "bare_ideographic_space": "\u3000",
}
#: Sources that do hold something: the same claims stay supported on them.
FULL: dict[str, dict[str, Any]] = {
    "text": {"text": CLAIM},
    "text_with_zero_width_inside": {"text": "Paris\u200b is the capital\u3000of France."},
    "json_zero": {"json": {"a": 0}},
    "json_false": {"json": [False]},
    "json_string": {"json": {"capital": "Paris"}},
    "json_nested_value": {"json": {"a": [None, {"b": [1]}]}},
}


def test_one_helper_says_what_empty_is() -> None:
    for text in EMPTY_TEXTS.values():
        assert is_blank(text) and Source(id="S1", text=text).is_empty, repr(text)
    for doc in EMPTY_JSON.values():
        assert holds_no_values(doc) and Source(id="S1", json=doc).is_empty, repr(doc)
    for name, full in FULL.items():
        assert not Source(id="S1", **full).is_empty, name
    # a visible letter among the invisible ones is something
    assert not is_blank("\u200b\u3000x\ufeff") and not holds_no_values({"a": ["\u200bx"]})


def says_supported(schema: str, messages: list[dict[str, Any]]) -> str:
    """Every claim ``supported``, quoting the first source whole when ``quote`` is in the
    prompt's sources' ids (else with no evidence); the split as the rule responder does it."""
    user = messages[-1]["content"]
    if schema != "CompactVerifyOutput":
        return rule_responder(schema, messages)
    sources = framed_sources(user)
    evidence = [{"source": sid, "quote": body} for sid, body in sources
                if sid.startswith("quote") and body][:1]
    return json.dumps({"judgements": [
        {"claim": n, "label": "supported", "subtype": None, "evidence": evidence,
         "rationale": "yes"} for n, _ in claim_texts(user)]}, ensure_ascii=False)


def supported_head(tmp_path: Path) -> dict[str, str]:
    """A head that reads the fake's 3-number vectors and always says supported (its
    intercept), as the head of the issue's served trial did."""
    intercept = np.array([3.0 if label == "supported" else 0.0 for label in LABELS])
    path = tmp_path / "supported.json"
    path.write_text(ProbeHead(tuple(LABELS), np.zeros(3), np.ones(3), np.zeros((4, 3)),
                              intercept, {"prompt": "probe_claim/v1"}).dumps(), encoding="utf-8")
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def records(source_id: str, sources: dict[str, dict[str, Any]], given: bool
            ) -> list[dict[str, Any]]:
    out = []
    for name, body in sources.items():
        record: dict[str, Any] = {"id": name, "answer": f"{CLAIM} [{source_id}]",
                                  "generator": "other/model",
                                  "sources": [{"id": source_id, **body}]}
        if given:
            record["claims"] = [{"text": CLAIM, "citations": [source_id]}]
        out.append(record)
    return out


def judged(tmp_path: Path, cfg: JudgeConfig, source_id: str,
           sources: dict[str, dict[str, Any]], given: bool, tag: str) -> dict[str, dict[str, Any]]:
    path = write_jsonl(tmp_path / f"{tag}.jsonl", records(source_id, sources, given))
    db = tmp_path / f"{tag}.db"
    judge_file(path, config=cfg, db=db)
    store = Store.open(db)
    try:
        rows = {r["answer_id"]: r for r in store.verdict_rows()}
    finally:
        store.close()
    assert set(rows) == set(sources)  # one claim an answer, every answer judged
    return rows


EMPTY_SOURCES = {**{f"text_{k}": {"text": v} for k, v in EMPTY_TEXTS.items()},
                 **{f"json_{k}": {"json": v} for k, v in EMPTY_JSON.items()}}


@pytest.mark.parametrize(("strategy", "source_id", "given"), [
    ("batch", "S1", True),        # supported with no evidence
    ("batch", "quote1", True),    # supported quoting the empty source's whole content
    ("batch", "S1", False),       # a free-text answer, split first
    ("probe", "S1", True),        # the program locates the evidence; the head says supported
])
def test_no_claim_is_supported_on_an_empty_source(
    tmp_path: Path, strategy: str, source_id: str, given: bool
) -> None:
    from tests.fakes import install

    install(FakeLLM(responder=says_supported))
    if strategy == "batch":
        cfg = JudgeConfig(model=FAKE_MODEL, retries=0, timeout_s=30, strategy="batch",
                          signals=False)
    else:
        cfg = JudgeConfig(model=FAKE_MODEL, retries=0, timeout_s=30, strategy="probe",
                          prompts={"split_claims": "v1"}, probe_head=supported_head(tmp_path))
    rows = judged(tmp_path, cfg, source_id, EMPTY_SOURCES, given, "empty")
    for name, row in rows.items():
        assert row["label"] == "not_in_source", (name, row["label"])
        assert row["review"] and "empty_source" in row["review_reasons"], name
        assert row["evidence"] == [], name
    # the same claims on sources that hold something: the provider's "supported" stands
    full = judged(tmp_path, cfg, source_id, FULL, given, "full")
    for name, row in full.items():
        assert row["label"] == "supported", (name, row["label"])
        assert "empty_source" not in row["review_reasons"], name
    if source_id == "quote1" or strategy == "probe":  # evidence was given: it is kept
        assert full["text"]["evidence"][0]["source_id"] == source_id
