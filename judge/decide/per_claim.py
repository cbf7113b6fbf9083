"""Strategy ``per_claim``: the program locates the source excerpts that best cover each claim,
the model gives one label per claim, the program derives subtype and evidence. Made for small
local models."""

from __future__ import annotations

from judge.decide import Decision, PerClaim
from judge.decide.excerpts import excerpt_data, locate_excerpts
from judge.models.client import CallFailed
from judge.models.prompts import render
from judge.models.schemas import ClaimJudgement, ClaimLabel
from judge.records import AnswerRecord
from judge.verdicts import Claim


class PerClaimStrategy(PerClaim):
    async def one(self, record: AnswerRecord, claim: Claim, run_id: str | None) -> Decision:
        located = locate_excerpts(claim.text, record)
        prompt = render(
            "label_claim",
            self.config.prompts["label_claim"],
            self.root,
            claim=claim.text,
            excerpts=excerpt_data(located),
        )
        try:
            out, call = await self.client.structured(prompt, ClaimLabel, "label", run_id)
        except CallFailed as exc:
            return Decision(claim, None, f"label failed: {exc}", [exc.call_id])
        judgement = ClaimJudgement(
            claim=1,
            label=out.label,
            subtype=None if out.label == "supported" else "opinion",
            rationale="label by the model on program-located excerpts",
        )
        return Decision(claim, judgement, None, [call], located=located)
