"""``label_logprobs``: the batch strategy's verification calls ask for log-probabilities and
each claim's support is read from the tokens that spell its label (no extra call); a provider
that returns none leaves the labels as they are and no support. Split and verify, one call,
and a replay from the store with zero calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_answers
from judge.config import JudgeConfig
from judge.models.label_tokens import LABEL_TOP_LOGPROBS
from judge.runs.replay import replay_run
from judge.store import Store
from tests.conftest import FAKE_MODEL
from tests.fakes import FakeLLM, answer_lines, claim_texts, rule_responder, with_label_logprobs

SRC = {"id": "S1", "text": "The river is long. The bridge is old. The tower is tall."}
CLAIMS = ["The river is long.", "The bridge is old.", "The park is green.",
          "The tower is tall."]
#: the probability of "supported" the scripted provider gives at each claim's label
P_SUPPORTED = {"The river is long.": 0.93, "The bridge is old.": 0.71,
               "The park is green.": 0.12, "The tower is tall.": 0.55}


def given(answer_id: str = "a1") -> dict[str, Any]:
    return {"id": answer_id, "generator": "openai/gpt-4o", "sources": [SRC],
            "answer": " ".join(CLAIMS),
            "claims": [{"text": c, "citations": ["S1"]} for c in CLAIMS]}


def scripted(user: str, label: str, i: int) -> float:
    """The support a verify prompt's ``i``-th judgement gets: the claim's, by its text."""
    texts = [t for _, t in claim_texts(user)] or [t for _, t in answer_lines(user)]
    return P_SUPPORTED[texts[i]]


def config(**extra: Any) -> JudgeConfig:
    settings: dict[str, Any] = {
        "model": FAKE_MODEL, "retries": 0, "reasks": 0, "timeout_s": 30,
        "label_logprobs": True, "prompts": {"split_claims": "v2", "verify_claims": "v3"}}
    return JudgeConfig(**{**settings, **extra})


@pytest.fixture
def with_logprobs(fake_llm: FakeLLM) -> FakeLLM:
    fake_llm.responder = with_label_logprobs(rule_responder, scripted)
    return fake_llm


def test_every_claim_gets_its_support_from_the_verify_call_it_was_judged_in(
        with_logprobs: FakeLLM, tmp_path: Path) -> None:
    results = judge_answers([given()], config=config(), db=tmp_path / "j.db")
    (verify,) = with_logprobs.calls  # no extra call
    assert verify["params"]["logprobs"] is True
    assert verify["params"]["top_logprobs"] == LABEL_TOP_LOGPROBS
    verdicts = results[0].verdicts
    assert [v.label for v in verdicts] == ["supported", "supported", "not_in_source",
                                          "supported"]
    # the program's reading of the label tokens: P(supported) over the labels' mass
    assert [v.support for v in verdicts] == [pytest.approx(P_SUPPORTED[c], abs=1e-4)
                                             for c in CLAIMS]
    store = Store.open(tmp_path / "j.db")
    try:
        (row,) = store.rows("select label_tokens, params from calls")
        entries = json.loads(row["label_tokens"])
        assert len(entries) == 4 and all(e["top"] for e in entries)
        assert json.loads(row["params"])["logprobs"] is True  # part of the call's identity
        run_id = store.runs()[0]["id"]
        before = len(with_logprobs.calls)
        report = replay_run(store, run_id)  # the supports are re-read from the stored tokens
        assert len(with_logprobs.calls) == before
        assert report.clean and (report.claims, report.reproduced) == (4, 1)
    finally:
        store.close()


def test_the_claims_of_a_free_text_answer_judged_in_one_call_get_theirs(
        with_logprobs: FakeLLM) -> None:
    free = {"id": "f1", "generator": "openai/gpt-4o", "sources": [SRC],
            "answer": " ".join(CLAIMS)}
    results = judge_answers([free], config=config(
        one_call=True, prompts={"split_claims": "v2", "verify_claims": "v3",
                                "judge_answer": "v2"}))
    assert [c["schema"] for c in with_logprobs.calls] == ["JointOutput"]
    assert with_logprobs.calls[0]["params"]["logprobs"] is True
    assert [v.support for v in results[0].verdicts] == [
        pytest.approx(P_SUPPORTED[c], abs=1e-4) for c in CLAIMS]


def test_a_provider_that_returns_no_logprobs_leaves_labels_and_no_support(
        fake_llm: FakeLLM) -> None:
    results = judge_answers([given()], config=config())
    assert fake_llm.calls[0]["params"]["logprobs"] is True  # asked, not answered
    verdicts = results[0].verdicts
    assert [v.label for v in verdicts] == ["supported", "supported", "not_in_source",
                                          "supported"]
    assert all(v.support is None for v in verdicts)


def test_without_label_logprobs_nothing_is_asked(fake_llm: FakeLLM) -> None:
    judge_answers([given()], config=config(label_logprobs=False))
    assert "logprobs" not in fake_llm.calls[0]["params"]
