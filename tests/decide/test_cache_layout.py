"""Prompts laid out for providers' prompt caches (verify_claims v3, judge_answer v2): the fixed
instructions first with nothing of the data in them, then the sources, then what varies; the
calls of one answer share their beginning through its sources; a sentence's citations reach
the one-call prompt. The earlier versions render as they did."""

from __future__ import annotations

import re
from typing import Any

from judge.api import judge_answers
from judge.config import JudgeConfig
from tests.conftest import FAKE_MODEL
from tests.fakes import FakeLLM

V3 = {"split_claims": "v2", "verify_claims": "v3", "judge_answer": "v2"}


def record(answer_id: str, words: str, claims: int = 0) -> dict[str, Any]:
    source = {"id": "S1", "text": f"The {words} river is long. The {words} bridge is old."}
    out: dict[str, Any] = {"id": answer_id, "generator": "openai/gpt-4o", "sources": [source],
                           "answer": f"The {words} river is long [S1]. Hope this helps!"}
    if claims:
        out["claims"] = [{"text": f"The {words} claim number {k} holds.", "citations": ["S1"]}
                         for k in range(claims)]
    return out


def user_heads(user: str) -> list[str]:
    """The kind of each frame of a user block, in order (source, claim, answer)."""
    return re.findall(r"^<<DATA-[0-9a-f]{16} (\w+)", user, re.M)


def test_the_instructions_hold_nothing_of_the_data_and_come_first(fake_llm: FakeLLM) -> None:
    config = JudgeConfig(model=FAKE_MODEL, one_call=True, prompts=V3)
    judge_answers([record("a", "red"), record("b", "blue"),
                   record("c", "green", claims=2), record("d", "grey", claims=3)],
                  config=config)
    by_schema: dict[str, list[list[dict[str, str]]]] = {}
    for call in fake_llm.calls:
        by_schema.setdefault(call["schema"], []).append(call["messages"])
    assert sorted(by_schema) == ["CompactVerifyOutput", "JointOutput"]
    for calls in by_schema.values():
        assert len(calls) == 2
        (system_a, user_a), (system_b, user_b) = ([m["content"] for m in c] for c in calls)
        assert system_a == system_b  # byte for byte: a provider caches it for every call
        assert "DATA-" not in system_a
        for user in (user_a, user_b):
            token = re.match(r"Frame token: (DATA-[0-9a-f]{16})\n", user)
            assert token is not None  # the data begins by naming its frame token
            heads = user_heads(user)
            assert heads[0] == "source" and "source" not in heads[heads.index(
                next(h for h in heads if h != "source")):]  # every source before the rest
            assert set(re.findall(r"DATA-[0-9a-f]{16}", user)) == {token.group(1)}


def test_the_verify_calls_of_one_answer_share_its_beginning_through_the_sources(
        fake_llm: FakeLLM) -> None:
    small = JudgeConfig(model=FAKE_MODEL, context_tokens=1400, max_tokens=400, prompts=V3)
    judge_answers([record("a", "red", claims=12)], config=small)
    calls = [c["messages"] for c in fake_llm.calls]
    assert len(calls) > 1  # the claims did not fit one call
    systems = {m[0]["content"] for m in calls}
    # the user message up to its first claim: the frame token line and every source
    heads = {m[1]["content"].split(" claim ", 1)[0] for m in calls}
    assert len(systems) == 1 and len(heads) == 1  # instructions, token and sources alike
    assert all(' source "S1"' in head for head in heads)
    # under v2 each call has a frame token of its own, named in its system message
    fake_llm.calls.clear()
    judge_answers([record("b", "red", claims=12)], config=small.model_copy(
        update={"prompts": {"split_claims": "v2", "verify_claims": "v2"}}))
    assert len({c["messages"][0]["content"] for c in fake_llm.calls}) == len(fake_llm.calls)


def test_a_sentence_that_cites_says_so_in_the_one_call_prompt(fake_llm: FakeLLM) -> None:
    judge_answers([record("a", "red")], config=JudgeConfig(model=FAKE_MODEL, one_call=True,
                                                           prompts=V3))
    user = fake_llm.calls[0]["messages"][1]["content"]
    assert '[1] cites ["S1"]: The red river is long.\n[2] Hope this helps!' in user
    # judge_answer v1 renders as it always did: no citations, its own frame token last in
    # the system message
    fake_llm.calls.clear()
    judge_answers([record("a", "red")], config=JudgeConfig(model=FAKE_MODEL, one_call=True))
    system, user = (m["content"] for m in fake_llm.calls[0]["messages"])
    assert "[1] The red river is long.\n[2] Hope this helps!" in user and "cites" not in user
    token = re.search(r"<<(DATA-[0-9a-f]{16}) answer", user).group(1)  # type: ignore[union-attr]
    assert token in system.splitlines()[-1]
