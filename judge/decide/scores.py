"""Strategy ``scores``: label scores from one multiple-choice question, and the decision over them.

A small model's generated label is biased (it says "supported" to almost everything), but
the probabilities it gives each option still order claims well. So the program locates the
source excerpts that best cover the claim, the model answers one multiple-choice question
(prompt ``choose_label``, in Chinese for a Chinese claim) with a single letter, and the
program reads the four letters' log-probabilities. The label is decided by the linear rule
of :mod:`judge.decide.linear` when the config has a ``score_model``, else by adding a
per-label bias (``label_bias``) and taking the best. The resulting probability of
``supported`` also drives the review queue (``review_support_below``).
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING

from judge.decide import Decision, StrategyBase
from judge.decide.excerpts import excerpt_data, locate_excerpts, shared_excerpts
from judge.decide.linear import decide_linear, features
from judge.decide.options import OPTIONS, decide, describe, log_normalise
from judge.models.client import CallFailed
from judge.models.prompts import render
from judge.models.schemas import ClaimJudgement
from judge.text import has_cjk
from judge.verdicts import Claim, Evidence, Label

if TYPE_CHECKING:
    from judge.config import JudgeConfig
    from judge.records import AnswerRecord


class ScoresStrategy(StrategyBase):
    async def decide(
        self, record: AnswerRecord, claims: list[Claim], run_id: str | None
    ) -> list[Decision]:
        located = [locate_excerpts(c.text, record) for c in claims]
        shown: list[list[Evidence]] = located
        frame = None
        if self.config.excerpts == "answer" and len(claims) > 1:
            shared = shared_excerpts(located, record)
            shown = [shared] * len(claims)
            frame = {"excerpts": excerpt_data(shared), "claims": [c.text for c in claims]}
        return list(await asyncio.gather(*(
            self._one(record, c, run_id, own, seen, frame)
            for c, own, seen in zip(claims, located, shown, strict=True))))

    async def _one(
        self, record: AnswerRecord, claim: Claim, run_id: str | None,
        located: list[Evidence], shown: list[Evidence], frame: object = None,
    ) -> Decision:
        try:
            scores, call = await self._ask(record, claim, run_id, shown, frame)
        except CallFailed as exc:
            version = self.config.prompts["choose_label"]
            return Decision(claim, None, f"score failed ({version}): {exc}", [exc.call_id])
        return decide_scores(self.config, record, claim, located, scores, call)

    async def score(
        self, record: AnswerRecord, claim: Claim, run_id: str | None
    ) -> tuple[list[Evidence], dict[str, float], str]:
        """(the excerpts the program located, the options' log-probabilities normalised over
        the options, the call id): the model's part, for a claim asked about its own excerpts
        (``excerpts = "claim"``). Raises ``CallFailed`` (and, replaying, ``ReplayMiss``)."""
        located = locate_excerpts(claim.text, record)
        scores, call = await self._ask(record, claim, run_id, located, None)
        return located, scores, call

    async def _ask(
        self, record: AnswerRecord, claim: Claim, run_id: str | None,
        shown: list[Evidence], frame: object,
    ) -> tuple[dict[str, float], str]:
        version = self.config.prompts["choose_label"]
        prompt = render(
            "choose_label", version, self.root, frame=frame, claim=claim.text,
            excerpts=excerpt_data(shown), zh=has_cjk(claim.text),
        )
        logprobs, call = await self.client.choice(
            prompt, OPTIONS, "score", run_id, shared_prefix=frame is not None)
        return log_normalise(logprobs), call


def decide_scores(
    config: JudgeConfig,
    record: AnswerRecord,
    claim: Claim,
    located: list[Evidence],
    scores: dict[str, float],
    call: str,
) -> Decision:
    """The program's part: the decision from the options' (normalised) log-probabilities,
    by the config's ``score_model`` (judge.decide.linear) or else its ``label_bias``. Pure:
    ``judge fit`` decides stored scores with it exactly as the pipeline does. A score that is
    not a number fails closed."""
    if config.score_model is None:
        label, probs = decide(scores, config.label_bias)
        rationale = f"scores on program-located excerpts: {describe(probs)}"
    else:
        values = features(
            claim.text, scores, located, record,
            config.support_overlap_min, config.numbers_overlap_min,
        )
        label, probs = decide_linear(values, config.score_model)
        rationale = (
            f"linear rule on scores and evidence: {describe(probs)} (overlap "
            f"{values['overlap']:.2f}, numbers missing {int(values['numbers_missing'])}, "
            f"opinion wording {int(values['opinion'])})"
        )
    if not all(math.isfinite(v) for v in [*scores.values(), *probs.values()]):
        version = config.prompts["choose_label"]
        return Decision(claim, None, f"score is not a number ({version}): {describe(probs)}; "
                        "fail closed", [call])
    judgement = ClaimJudgement(
        claim=1,
        label=label,  # type: ignore[arg-type]
        subtype=None if label == "supported" else "opinion",
        rationale=rationale,
    )
    return Decision(
        claim, judgement, None, [call], located=located, support=probs[Label.SUPPORTED.value]
    )
