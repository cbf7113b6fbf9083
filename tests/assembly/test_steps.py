"""The assembly's named steps: in order, and the model flag as the last of them."""

from __future__ import annotations

from pathlib import Path

from judge.api import judge_file
from judge.assembly import steps
from judge.assembly.verdict import Assembler
from judge.config import JudgeConfig
from judge.decide import Decision
from judge.models.schemas import ClaimJudgement
from judge.records import AnswerRecord, Citation
from judge.store import Store
from judge.verdicts import Claim
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, Reply, rule_responder

SRC = "Python 3.11 added the tomllib module to the standard library."
REC = AnswerRecord.model_validate({"id": "a", "answer": "x",
                                   "sources": [{"id": "py", "text": SRC}]})
CLAIM = Claim(id="c1", answer_id="a", index=0, text="Python 3.11 added tomllib.",
              citations=[Citation(source="py")])


def decision(label: str = "supported") -> Decision:
    subtype = None if label == "supported" else "unsupported_addition"
    judgement = ClaimJudgement(claim=1, label=label, subtype=subtype, rationale="r",
                               evidence=[{"source_id": "py", "quote": SRC}])
    return Decision(CLAIM, judgement, None, ["call-1"])


def test_the_corrections_come_before_the_review_reasons_and_the_model_flag_last() -> None:
    names = [s.__name__ for s in steps.STEPS]
    assert names.index("correct_by_signals") < names.index("settle_abstention") < names.index(
        "find_misattribution") < names.index("flag_label")
    assert names[-1] == "flag_model_mismatch"


def test_a_call_another_model_answered_goes_to_review_as_the_last_reason() -> None:
    seen: list[list[str]] = []

    def other_models(call_ids: list[str]) -> list[str]:
        seen.append(call_ids)
        return ["other-model"]

    verdict = Assembler(JudgeConfig(), "v@1", other_models).verdict(REC, decision("not_in_source"),
                                                                   ["split-1"])
    assert seen == [["split-1", "call-1"]]
    assert verdict.review and verdict.review_reasons[-1] == "model_mismatch"
    assert verdict.review_reasons[0] == "label:not_in_source"


def test_without_a_model_client_nothing_is_flagged_for_the_model() -> None:
    verdict = Assembler(JudgeConfig(), "v@1").verdict(REC, decision())
    assert verdict.label == "supported" and "model_mismatch" not in verdict.review_reasons
    assert verdict.call_ids == ["call-1"]


def test_the_pipeline_flags_a_verdict_another_model_answered(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda schema, messages: Reply(
        rule_responder(schema, messages), model="anthropic/claude-3-5-sonnet")
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "a1", "answer": "401 means unauthenticated [S1].",
        "sources": [{"id": "S1", "text": "401 means unauthenticated."}]}])
    judge_file(path, config=config, db=store)
    [row] = list(store.verdict_rows())
    assert row["review"] and row["review_reasons"][-1] == "model_mismatch"
