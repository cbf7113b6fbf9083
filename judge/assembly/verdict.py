"""One verdict from one decision (see :mod:`judge.assembly`): a :class:`~judge.assembly.steps.Draft`
of the decision goes through the named steps (:data:`judge.assembly.steps.STEPS`) in order."""

from __future__ import annotations

from judge.assembly.steps import STEPS, Draft, OtherModels
from judge.config import JudgeConfig
from judge.decide import Decision
from judge.records import AnswerRecord
from judge.verdicts import Verdict


class Assembler:
    """Turns decisions into verdicts for one judge version. ``other_models`` (the model
    client's ``answered_by_other``) lets the last step flag a verdict a call of which another
    model answered; without it (verdicts from stored scores) no verdict is so flagged."""

    def __init__(self, config: JudgeConfig, judge_version: str,
                 other_models: OtherModels | None = None) -> None:
        self.config = config
        self.judge_version = judge_version
        self.other_models = other_models

    def verdict(
        self, record: AnswerRecord, decision: Decision, extra_calls: list[str] | None = None
    ) -> Verdict:
        """``extra_calls`` (the split call) come before the decision's own calls."""
        draft = Draft.of(record, decision, self.config, extra_calls, self.other_models)
        for step in STEPS:
            step(draft)
        claim, error, support = decision.claim, decision.error, draft.support
        return Verdict(
            claim_id=claim.id,
            answer_id=claim.answer_id,
            judge_version=self.judge_version,
            claim=claim.text,
            label=draft.label,
            subtype=draft.subtype,
            evidence=draft.evidence,
            rationale=draft.rationale,
            checks=draft.checks,
            strength=round(draft.strength, 4),
            support=None if support is None or error is not None else round(support, 4),
            review=bool(draft.reasons),
            review_reasons=draft.reasons,
            error=error,
            call_ids=draft.call_ids,
        )
