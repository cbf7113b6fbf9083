"""``excerpts = "answer"`` (strategy ``scores``): the claims of an answer read one shared set of
excerpts under one frame token, so their prompts begin the same way (the embedded runtime's
prompt cache can reuse that beginning); an answer of one claim is asked exactly as before, and
each verdict keeps its own located evidence."""

from __future__ import annotations

import os
from typing import Any

from judge.api import judge_answers
from judge.config import JudgeConfig
from judge.decide.excerpts import locate_excerpts, shared_excerpts
from judge.records import AnswerRecord
from tests.fakes import CHOICE, FakeLLM

SOURCES = [
    {"id": "A", "text": "Python 3.11 added the tomllib module. It reads TOML files. "
                        "The walrus operator came in 3.8."},
    {"id": "B", "text": "Rust 1.0 was released in 2015. Cargo is its build tool."},
]
CLAIMS = ["Python 3.11 added tomllib.", "Rust 1.0 came out in 2015.", "Cargo builds Rust."]


def record(claims: list[str], aid: str = "a") -> dict[str, Any]:
    return {"id": aid, "answer": " ".join(claims), "sources": SOURCES,
            "claims": [{"text": c, "citations": ["A", "B"]} for c in claims]}


def config(excerpts: str) -> JudgeConfig:
    return JudgeConfig(model="fake/judge-model", strategy="scores",
                       prompts={"split_claims": "v1", "choose_label": "v1"},
                       excerpts=excerpts)  # type: ignore[arg-type]


def choice_users(fake: FakeLLM) -> list[str]:
    return [c["messages"][-1]["content"] for c in fake.calls if c["schema"] == CHOICE]


def test_shared_excerpts_take_each_claims_best_in_source_order() -> None:
    rec = AnswerRecord.model_validate(record(CLAIMS))
    located = [locate_excerpts(c, rec) for c in CLAIMS]
    shared = shared_excerpts(located, rec)
    assert [e.source_id for e in shared] == sorted(e.source_id for e in shared)
    for own in located:  # every claim's best excerpt is in the shared set
        best = own[0]
        assert any(e.source_id == best.source_id and e.start <= best.start  # type: ignore[operator]
                   and best.end <= e.end for e in shared)  # type: ignore[operator]
    assert all(e.found and e.quote == rec.source(e.source_id).content[e.start:e.end]  # type: ignore[union-attr, index]
               for e in shared)


def test_an_answers_prompts_share_their_beginning(fake_llm: FakeLLM) -> None:
    judge_answers([record(CLAIMS)], config=config("answer"))
    users = choice_users(fake_llm)
    assert len(users) == 3
    prefix = os.path.commonprefix(users)
    assert "Rust 1.0 was released" in prefix and "tomllib module" in prefix
    assert all(u[len(prefix):].count("\n") <= 12 for u in users)  # only the claim differs


def test_one_claim_is_asked_as_before_and_evidence_stays_the_claims_own(
    fake_llm: FakeLLM,
) -> None:
    judge_answers([record(CLAIMS[:1], "one")], config=config("claim"))
    judge_answers([record(CLAIMS[:1], "one")], config=config("answer"))
    first, second = choice_users(fake_llm)
    assert first == second
    fake_llm.calls.clear()
    own = judge_answers([record(CLAIMS, "b")], config=config("claim"))
    shared = judge_answers([record(CLAIMS, "b")], config=config("answer"))
    assert [[e.model_dump() for e in v.evidence] for v in own[0].verdicts] == \
        [[e.model_dump() for e in v.evidence] for v in shared[0].verdicts]
    assert own.summary.judge_version != shared.summary.judge_version
