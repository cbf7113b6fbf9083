"""A Chinese answer under a head with a language offset: judged with the fake provider,
replayed from the store with zero model calls to the same verdicts; and the Simplified and
Traditional forms of one answer (OpenCC ``s2twp``) get the same verdicts, source ids and
evidence offsets where the conversion keeps lengths (most text: character for character),
while where it rewrites a phrase to another length the offsets are located again in the
converted text, never reused. (Claim ids are hashes of the claim's text, so a converted claim
is another claim; ids a record gives, answer and source ids, are the record's.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.api import judge_file
from judge.decide.probe_head import LanguageShift, ProbeHead
from judge.language import LANGUAGE_RULE, read_language
from judge.runs.replay import replay_run
from judge.store import Store
from judge.text import find_quote
from tests.conftest import write_jsonl
from tests.decide.test_probe import probe_config, toy_head, write_head
from tests.fakes import FakeLLM, claim_in_evidence_vector

#: what the fake model's hidden state carries for a Chinese prompt beside the claim: a pull
#: toward not_in_source, as the real model's does (issue 33)
PULL = np.array([-1.0, 1.0, 0.0])

# the design documents' sentences (shared/seeds/, seed 000), Simplified as OpenCC's input
HANS = "所以实际是六个案例各三次，共 18 次。资料无法说明静止心率偏高或睡眠时间偏短的生理原因。"
HANS_CLAIMS = ["所以实际是六个案例各三次，共 18 次。", "所有案例都通过了全部四层检查。"]
EN = "The run made 18 requests: six cases, three each. The data cannot explain the cause."
EN_CLAIMS = ["The run made 18 requests: six cases, three each.", "Every case passed all four layers."]


def pulled_vector(text: str) -> list[float]:
    """The fake's vector, pulled when the prompt's claim reads as Chinese."""
    vector = np.asarray(claim_in_evidence_vector(text))
    claim = text.split("Claim: ", 1)[-1].split("\n", 1)[0]
    return list(vector + PULL if read_language(claim) == "zh" else vector)


def shifted_head() -> ProbeHead:
    head = toy_head()
    return ProbeHead(head.labels, head.mean, head.scale, head.coef, head.intercept, head.about,
                     LanguageShift(LANGUAGE_RULE, {"zh": PULL}, {"from": "test"}))


def record(answer_id: str, source: str, claims: list[str]) -> dict[str, Any]:
    return {"id": answer_id, "sources": [{"id": "seed", "text": source}],
            "answer": "".join(claims), "generator": "other/model",
            "claims": [{"text": c, "citations": ["seed"]} for c in claims]}


def verdicts(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    return [(r["answer_id"], r["idx"], r["claim"], r["label"], r["support"],
             [(e["source_id"], e["start"], e["end"]) for e in r["evidence"]])
            for r in store.verdict_rows(run_id=run_id)]


def test_a_chinese_answer_is_shifted_and_replays_with_no_call(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    fake_llm.embedder = pulled_vector
    path = write_jsonl(tmp_path / "in.jsonl", [record("zh", HANS, HANS_CLAIMS),
                                               record("en", EN, EN_CLAIMS)])
    unshifted = probe_config(tmp_path, probe_head=write_head(tmp_path, toy_head(), "v4.json"))
    config = probe_config(tmp_path, probe_head=write_head(tmp_path, shifted_head(), "v5.json"))
    before = judge_file(path, config=unshifted, db=store).summary
    labels = {r["claim"]: r["label"] for r in store.verdict_rows(run_id=before.run_id)}
    # without the offset the Chinese claim found verbatim is pulled to not_in_source
    assert labels[HANS_CLAIMS[0]] == "not_in_source" and labels[EN_CLAIMS[0]] == "supported"
    summary = judge_file(path, config=config, db=store).summary
    assert summary.model_calls == 0  # the vectors do not depend on the head
    first = verdicts(store, summary.run_id)
    got = {row[2]: row[3] for row in first}
    assert got == {HANS_CLAIMS[0]: "supported", HANS_CLAIMS[1]: "not_in_source",
                   EN_CLAIMS[0]: "supported", EN_CLAIMS[1]: "not_in_source"}
    fake_llm.calls.clear()
    report = replay_run(store, summary.run_id)
    assert report.clean and report.claims == 4 and not report.missing_calls
    assert not fake_llm.calls
    again = judge_file(path, config=config, db=store).summary
    assert again.model_calls == 0 and not fake_llm.calls
    assert verdicts(store, again.run_id) == first


def test_script_conversion_keeps_ids_and_evidence_offsets(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    opencc = pytest.importorskip("opencc")
    cc = opencc.OpenCC("s2twp")
    hant, hant_claims = cc.convert(HANS), [cc.convert(c) for c in HANS_CLAIMS]
    assert len(hant) == len(HANS)  # this text converts character for character
    fake_llm.embedder = pulled_vector
    config = probe_config(tmp_path, probe_head=write_head(tmp_path, shifted_head(), "v5.json"))
    path = write_jsonl(tmp_path / "in.jsonl", [record("seed-1", HANS, HANS_CLAIMS)])
    hans_run = judge_file(path, config=config, db=store).summary.run_id
    path = write_jsonl(tmp_path / "tw.jsonl", [record("seed-1-tw", hant, hant_claims)])
    hant_run = judge_file(path, config=config, db=store).summary.run_id
    hans_rows, hant_rows = verdicts(store, hans_run), verdicts(store, hant_run)
    # the same claims, labels, support, source ids and evidence offsets in both scripts
    assert [r[1:2] + r[3:] for r in hans_rows] == [r[1:2] + r[3:] for r in hant_rows]
    assert [r[3] for r in hant_rows] == ["supported", "not_in_source"]
    # the stored Simplified evidence, converted, is at the same offsets of the converted text
    for row in store.verdict_rows(run_id=hans_run):
        for e in row["evidence"]:
            assert e["quote"] == HANS[e["start"]:e["end"]]
            assert cc.convert(e["quote"]) == hant[e["start"]:e["end"]]
    # a phrase OpenCC rewrites changes lengths (软件 -> 軟體, 内存 -> 記憶體): offsets after it
    # move by one, so stored offsets are not reused on converted text: judged again, the
    # evidence is located in the converted text, and find_quote re-locates a stored quote
    longer = "软件的默认设置在内存中。" + HANS
    moved = cc.convert(longer)
    assert len(moved) == len(longer) + 1
    path = write_jsonl(tmp_path / "long.jsonl", [record("seed-2", longer, HANS_CLAIMS[:1]),
                                                 record("seed-2-tw", moved, hant_claims[:1])])
    run = judge_file(path, config=config, db=store).summary.run_id
    spans = {}
    for row in store.verdict_rows(run_id=run):
        text = longer if row["answer_id"] == "seed-2" else moved
        (e,) = row["evidence"][:1]
        assert text[e["start"]:e["end"]] == e["quote"] and row["label"] == "supported"
        spans[row["answer_id"]] = (e["start"], e["end"], e["quote"])
    start, end, quote = spans["seed-2"]
    assert spans["seed-2-tw"][1] == end + 1 and moved[start:end] != cc.convert(quote)
    # a quote after the rewritten phrase moves by one: find_quote finds it where it now is
    claim = HANS_CLAIMS[0]
    found = find_quote(cc.convert(claim), moved)
    assert found is not None and found[0] == longer.index(claim) + 1
    assert moved[found[0]:found[1]] == cc.convert(claim).rstrip("。")
