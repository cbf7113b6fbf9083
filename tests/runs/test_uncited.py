"""Answers without any citation: checked against all their sources by default (the ``uncited``
setting, ``judge run --uncited``), ``missing_citation`` kept for answers that cite some sources
and not others, and a run summary that breaks the flags down by reason and names the switch
when one reason floods the queue. The real pipeline, with the scripted provider (the network
edge) labelling every claim supported: each claim is stated verbatim in a source."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import judge
from judge.store import Store
from tests.cli.test_cli import cli
from tests.conftest import FAKE_MODEL, write_jsonl
from tests.fakes import FakeLLM

N = 200


def answers(n: int = N) -> list[dict[str, Any]]:
    """``n`` answers of two sentences, each stated verbatim by one of two sources; every tenth
    cites its first source after the first sentence and leaves the second uncited."""
    out = []
    for i in range(n):
        hour = i % 12 + 1
        first, second = f"Shop {i} opens at {hour} am.", f"Shop {i} closes at {hour} pm."
        text = (f"{first[:-1]} [S1]. {second}" if i % 10 == 0 else f"{first} {second}")
        out.append({"id": f"a{i}", "answer": text, "generator": "rag-bot",
                    "sources": [{"id": "S1", "text": f"{first} Shop {i} sells bread."},
                                {"id": "S2", "text": f"The shops are open daily. {second}"}]})
    return out


def test_plain_answers_cite_all_their_sources_by_default(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    config = judge.load_config(model=FAKE_MODEL)  # no config file: the default
    assert config.uncited == "all_sources"
    results = judge.judge_answers(answers(), config=config, db=tmp_path / "j.db")
    summary = results.summary
    claims = [v for r in results for v in r.verdicts]
    assert summary.claims == len(claims) == 2 * N
    assert summary.labels == {"supported": 2 * N}  # the scripted provider: every claim
    assert summary.flagged < 0.6 * summary.claims
    # the tenth that cites S1 and leaves its second sentence uncited keeps missing_citation
    assert summary.flagged == N // 10
    assert summary.flag_reasons == {"missing_citation": N // 10}
    flagged = {v.claim for v in claims if v.review}
    assert all(re.fullmatch(r"Shop \d*0 closes at \d+ pm\.", c) for c in flagged)
    plain = next(r for r in results if r.answer_id == "a1")
    assert all(not v.review for v in plain.verdicts)
    # nothing the config can switch: no flood note, but the breakdown is in the dict
    assert summary.flood() is None
    assert summary.as_dict()["flag_reasons"] == {"missing_citation": N // 10}


def test_the_old_behaviour_by_name_and_the_note_that_names_the_switch(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    config = judge.load_config(model=FAKE_MODEL, uncited="missing_citation")
    results = judge.judge_answers(answers(), config=config, db=tmp_path / "j.db")
    summary = results.summary
    assert summary.labels == {"supported": 2 * N}
    # every claim of a plain answer, and the uncited sentence of the others
    assert summary.flagged == 2 * N - N // 10
    assert summary.flag_reasons == {"missing_citation": summary.flagged}
    note = summary.flood()
    assert note is not None and note.startswith(f"{summary.flagged} of {summary.flagged} ")
    assert 'uncited = "all_sources"' in note and "--uncited all_sources" in note
    assert summary.as_dict()["flood"] == note


def test_the_setting_is_read_into_the_record_and_leaves_the_judge_version(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    old = judge.load_config(model=FAKE_MODEL, uncited="missing_citation")
    new = judge.load_config(model=FAKE_MODEL)
    assert judge.version_of(new) == judge.version_of(old)
    plain, marked = answers(1)[0] | {"answer": "Shop 0 opens at 1 am."}, answers(11)[10]
    db = tmp_path / "j.db"
    results = judge.judge_answers([plain, marked], config=new, db=db)
    assert [v.review for v in results[0].verdicts] == [False]
    store = Store.open(db)
    try:  # the stored record says how it was read (so it replays as it was); a marked one
        # is stored as given
        assert store.answer_record("a0").uncited == "all_sources"  # type: ignore[union-attr]
        assert store.answer_record("a10").uncited is None  # type: ignore[union-attr]
    finally:
        store.close()
    # a record that says "all_sources" itself is read so under either setting
    own = {**plain, "id": "own", "uncited": "all_sources"}
    again = judge.judge_answers([own], config=old, db=tmp_path / "k.db")
    assert [v.review for v in again[0].verdicts] == [False]


def test_given_claims_without_citations_cite_every_source(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    record = {**answers(1)[0], "claims": [{"text": "Shop 0 opens at 1 am."}]}
    default = judge.judge_answers([record], config=judge.load_config(model=FAKE_MODEL),
                                  db=tmp_path / "a.db")
    (verdict,) = default[0].verdicts
    assert not verdict.review
    store = Store.open(tmp_path / "a.db")
    (row,) = store.verdict_rows()
    store.close()
    assert sorted(c["source"] for c in row["citations"]) == ["S1", "S2"]
    old = judge.judge_answers(
        [record], config=judge.load_config(model=FAKE_MODEL, uncited="missing_citation"),
        db=tmp_path / "b.db")
    assert old[0].verdicts[0].review_reasons == ["missing_citation"]


@pytest.mark.parametrize("uncited", [None, "missing_citation"])
def test_judge_run_prints_the_breakdown(tmp_path: Path, uncited: str | None) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", answers())
    extra = ["--uncited", uncited] if uncited else []
    proc = cli("run", str(path), "--db", str(tmp_path / "j.db"), "--model", FAKE_MODEL, *extra)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(re.sub(r"[│┃|]", " ", proc.stdout).split())  # the table's cells
    flagged = N // 10 if uncited is None else 2 * N - N // 10
    assert f"flagged for review {flagged}" in out
    assert f"flagged by reason missing_citation {flagged}" in out
    note = " ".join(proc.stderr.split())
    if uncited is None:
        assert "uncited" not in note
    else:
        assert f"{flagged} of {flagged} flagged claims (100%) are flagged missing_citation" in note
        assert "--uncited all_sources" in note
    as_json = cli("run", str(path), "--db", str(tmp_path / "j.db"), "--model", FAKE_MODEL,
                  "--json", *extra)
    assert json.loads(as_json.stdout)["flag_reasons"] == {"missing_citation": flagged}


def test_judge_run_refuses_an_unknown_uncited(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", answers(1))
    proc = cli("run", str(path), "--db", str(tmp_path / "j.db"), "--model", FAKE_MODEL,
               "--uncited", "none")
    assert proc.returncode == 64
    assert "--uncited must be all_sources or missing_citation" in proc.stderr
    assert not (tmp_path / "j.db").exists()


def test_a_store_judged_before_the_setting_resumes_as_it_was_read(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    """Answers stored under the old reading (missing_citation) are the same answers when the
    run is resumed under the new default: none is refused as the same id with other content,
    and no call is made again."""
    db = tmp_path / "old.db"
    old = judge.load_config(model=FAKE_MODEL, uncited="missing_citation")
    first = judge.judge_answers(answers(20), config=old, db=db).summary
    assert first.flagged == 2 * 20 - 20 // 10  # every uncited sentence was flagged then
    calls = len(fake_llm.calls)
    again = judge.judge_answers(answers(20), config=judge.load_config(model=FAKE_MODEL),
                                db=db).summary
    assert again.rejected_lines == [] and again.answers == 20
    assert len(fake_llm.calls) == calls  # resumed from the store: no call made again
    assert again.flagged == first.flagged
    # a new answer in the same store is read under the new default
    fresh = answers(22)[21:]  # a plain answer (every tenth cites S1)
    fresh[0]["id"] = "new"
    assert judge.judge_answers(fresh, config=judge.load_config(model=FAKE_MODEL),
                               db=db).summary.flagged == 0
