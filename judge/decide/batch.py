"""Strategy ``batch``: the model labels up to ``verify_batch_size`` claims per call against
the whole sources, quoting its evidence (checked by the program afterwards). Made for strong
models."""

from __future__ import annotations

import asyncio

from judge.decide import Decision, StrategyBase
from judge.models.client import CallFailed
from judge.models.prompts import render
from judge.models.schemas import ClaimJudgement, VerifyOutput
from judge.records import AnswerRecord
from judge.verdicts import Claim


class BatchStrategy(StrategyBase):
    async def decide(
        self, record: AnswerRecord, claims: list[Claim], run_id: str | None
    ) -> list[Decision]:
        size = self.config.verify_batch_size
        batches = [claims[i : i + size] for i in range(0, len(claims), size)]
        results = await asyncio.gather(*(self._batch(record, b, run_id) for b in batches))
        decisions = []
        for batch, (judgements, error, call) in zip(batches, results, strict=True):
            calls = [call] if call else []
            for number, claim in enumerate(batch, start=1):
                j = judgements.get(number)
                err = error if error else (None if j else f"no judgement for claim {number}")
                if not error and number in judgements and j is None:
                    err = (f"the model gave more than one judgement for claim {number} "
                           "(conflicting or duplicate): fail closed")
                decisions.append(Decision(claim, j, err, list(calls)))
        return decisions

    async def _batch(
        self, record: AnswerRecord, batch: list[Claim], run_id: str | None
    ) -> tuple[dict[int, ClaimJudgement | None], str | None, str | None]:
        prompt = render(
            "verify_claims",
            self.config.prompts["verify_claims"],
            self.root,
            sources=[
                {
                    "id": s.id,
                    "title": s.title,
                    "version": s.version,
                    "effective_date": s.effective_date,
                    "content": s.content,
                }
                for s in record.sources
            ],
            claims=[
                {"number": n, "text": c.text, "cites": sorted({cit.source for cit in c.citations})}
                for n, c in enumerate(batch, start=1)
            ],
        )
        try:
            out, call = await self.client.structured(prompt, VerifyOutput, "verify", run_id)
        except CallFailed as exc:
            return {}, f"verify failed: {exc}", exc.call_id
        by_number: dict[int, ClaimJudgement | None] = {}
        for j in out.judgements:  # a number judged twice: None (no judgement wins)
            by_number[j.claim] = None if j.claim in by_number else j
        return by_number, None, call
