"""Strategy ``batch``: the model labels several claims per call against the whole sources,
quoting its evidence (checked by the program afterwards). Made for strong models.

With verify_claims v1, ``verify_batch_size`` claims go in each call. From v2 on, every claim of
an answer goes in one call when it fits the model's context and ``max_tokens``, else as few
calls as fit (:mod:`judge.decide.packing`); the model answers in the compact schema
(:class:`~judge.models.schemas.CompactVerifyOutput`), whose evidence is a short quote that the
program finds in the named source and extends to its sentence (:func:`extend_quote`). A quote
that is not found stays as the model wrote it, so the quote check fails (fail closed).

Before any call the sources are checked against the model's context (:meth:`_shown`): sources
that do not fit with the longest claim and ``max_tokens`` are cut to the passages that cover
the claims (:func:`excerpt_record`), and when even those do not fit, the claims are not sent
but recorded as ``judge_error`` with the reason.

From verify_claims v3 on, every call of an answer takes the answer's frame token (derived from
its sources and all its claims), so the calls of an answer whose claims need several share
their beginning up to the claims (instructions, then sources) for a provider's prompt cache.
With ``label_logprobs`` the calls ask for log-probabilities and each claim's support is read
from the tokens that spell its label (:mod:`judge.models.label_tokens`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from judge.config import JudgeConfig
from judge.decide import Decision, StrategyBase
from judge.decide.excerpts import locate_excerpts
from judge.decide.packing import (
    TOKENS_PER_FRAME,
    context_size,
    estimate_tokens,
    fits_whole,
    plan,
    prompt_tokens,
    schema_tokens,
)
from judge.models.client import CallFailed, ModelClient
from judge.models.label_tokens import asks_label_logprobs, label_supports
from judge.models.prompts import RenderedPrompt, render
from judge.models.schemas import (
    ClaimJudgement,
    CompactJudgement,
    CompactVerifyOutput,
    EvidenceQuote,
    JointClaim,
    VerifyOutput,
)
from judge.records import AnswerRecord
from judge.text import find_quote, sentence_spans
from judge.verdicts import Claim

#: (judgement or why there is none, by claim number; error of the whole call; call id;
#: support read from the label's tokens, by claim number)
Judged = tuple[dict[int, ClaimJudgement | str], str | None, str | None, dict[int, float]]


def prompt_version(version: str) -> int:
    return int(version.lstrip("v"))


class BatchStrategy(StrategyBase):
    def __init__(self, config: JudgeConfig, client: ModelClient, root: Path) -> None:
        super().__init__(config, client, root)
        self.version = config.prompts["verify_claims"]
        self.compact = prompt_version(self.version) >= 2
        #: v3 and later: one frame token per answer, the same in each of its calls
        self.answer_frame = prompt_version(self.version) >= 3
        #: the verification calls ask for log-probabilities (``label_logprobs``)
        self.logprobs = asks_label_logprobs(config)

    async def decide(
        self, record: AnswerRecord, claims: list[Claim], run_id: str | None
    ) -> list[Decision]:
        shown, refused = self._shown(record, claims)
        if refused is not None:  # not sent: the sources cannot fit the model's context
            return [Decision(claim, None, refused) for claim in claims]
        if self.compact:
            batches, results = await self._fitted(record, shown, claims, run_id)
        else:
            size = self.config.verify_batch_size
            batches = [claims[i : i + size] for i in range(0, len(claims), size)]
            results = list(await asyncio.gather(
                *(self._batch(shown, b, run_id) for b in batches)))
        decisions = []
        first = 1
        for batch, (judgements, error, call, supports) in zip(batches, results, strict=True):
            calls = [call] if call else []
            # v1 numbers the claims of each call from 1; v2 numbers the answer's claims
            start = first if self.compact else 1
            for number, claim in enumerate(batch, start=start):
                found = judgements.get(number)
                j = None if isinstance(found, str) else found
                err: str | None = found if isinstance(found, str) else error
                if err is None and j is None:
                    err = f"no judgement for claim {number}"
                decisions.append(Decision(claim, j, err, list(calls),
                                          support=supports.get(number) if j else None))
            first += len(batch)
        return decisions

    def _shown(self, record: AnswerRecord, claims: list[Claim]
               ) -> tuple[AnswerRecord, str | None]:
        """The record as the model is shown it: whole when its sources fit the context with
        the longest claim and ``max_tokens`` to spare; else each source cut to the passages
        that cover the claims (:func:`excerpt_record`); when even those do not fit, why the
        claims are not sent (checked before any call)."""
        schema = schema_tokens(CompactVerifyOutput if self.compact else VerifyOutput)
        largest = max((estimate_tokens(c.text) for c in claims), default=0) + TOKENS_PER_FRAME
        room = context_size(self.config) - self.config.max_tokens

        def need(shown: AnswerRecord) -> int:
            return prompt_tokens(self._render(shown, [], 1, claims)) + schema + largest

        whole = need(record)
        if whole <= room:
            return record, None
        cut = excerpt_record(record, claims)
        trimmed = need(cut)
        if trimmed <= room:
            return cut, None
        return record, (
            f"the sources do not fit the model's context ({context_size(self.config)} tokens, "
            f"max_tokens {self.config.max_tokens} of them kept for the answer): about {whole} "
            f"tokens whole and {trimmed} cut to the passages that cover the claims; not sent. "
            "Pin a model with a larger context (context_tokens) or give shorter sources")

    # -- v1: fixed batches ------------------------------------------------------------------

    async def _batch(
        self, record: AnswerRecord, batch: list[Claim], run_id: str | None
    ) -> Judged:
        prompt = self._render(record, batch, 1)
        try:
            out, call = await self.client.structured(prompt, VerifyOutput, "verify", run_id,
                                                     logprobs=self.logprobs)
        except CallFailed as exc:
            return {}, f"verify failed: {exc}", exc.call_id, {}
        by_number: dict[int, ClaimJudgement | str] = {}
        for j in out.judgements:  # a claim judged twice: neither judgement is trusted
            by_number[j.claim] = judged_twice(j.claim) if j.claim in by_number else j
        return by_number, None, call, self._supports(call, [j.claim for j in out.judgements])

    def _supports(self, call: str, numbers: list[int]) -> dict[int, float]:
        """Each judged claim's support read from the tokens that spell its label (the
        judgements in the order the model wrote them, ``numbers``), when the call asked for
        log-probabilities and they could be read."""
        supports = self.label_supports(call, len(numbers))
        return {n: s for n, s in zip(numbers, supports, strict=True) if s is not None}

    def label_supports(self, call: str, count: int) -> list[float | None]:
        """The support of each of the ``count`` labels a stored call wrote, in order (all
        None when it asked for no log-probabilities or they could not be read)."""
        if not self.logprobs or self.client.store is None:
            return [None] * count
        stored = self.client.store.get_call(call)
        return label_supports(stored.get("label_tokens") if stored else None, count)

    def _render(self, record: AnswerRecord, batch: list[Claim], first: int,
                every: list[Claim] | None = None) -> RenderedPrompt:
        """The verify prompt of ``batch`` (numbered from ``first``). From v3 on, the frame
        token is the answer's: derived from its sources and ``every`` claim of it (default:
        ``batch``), so each of its calls frames its data with the same token."""
        claims = [claim_data(n, c) for n, c in enumerate(batch, start=first)]
        sources = source_data(record)
        frame = None
        if self.answer_frame:
            frame = {"sources": sources,
                     "claims": [claim_data(n, c) for n, c in enumerate(every or batch, start=1)]}
        return render("verify_claims", self.version, self.root, frame=frame, sources=sources,
                      claims=claims)

    # -- v2: as few calls as fit, compact output ---------------------------------------------

    async def _fitted(
        self, record: AnswerRecord, shown: AnswerRecord, claims: list[Claim],
        run_id: str | None,
    ) -> tuple[list[list[Claim]], list[Judged]]:
        """``shown``: the record as the prompts show it (:meth:`_shown`); quotes are found
        in ``record``'s whole sources."""
        whole = self._render(shown, claims, 1)
        schema = schema_tokens(CompactVerifyOutput)
        if fits_whole(prompt_tokens(whole) + schema, len(claims), self.config):
            sizes = [len(claims)]
        else:
            fixed = prompt_tokens(self._render(shown, [], 1, claims)) + schema
            sizes = plan(fixed, [estimate_tokens(c.text) + TOKENS_PER_FRAME for c in claims],
                         self.config)
        batches, prompts, first = [], [], 1
        for size in sizes:
            batch = claims[first - 1 : first - 1 + size]
            batches.append(batch)
            prompts.append(whole if size == len(claims)
                           else self._render(shown, batch, first, claims))
            first += size
        starts = [sum(sizes[:i]) + 1 for i in range(len(sizes))]
        results = await asyncio.gather(*(
            self._compact_call(record, prompt, start, len(batch), run_id)
            for prompt, start, batch in zip(prompts, starts, batches, strict=True)))
        return batches, list(results)

    async def _compact_call(
        self, record: AnswerRecord, prompt: RenderedPrompt, first: int, count: int,
        run_id: str | None,
    ) -> Judged:
        try:
            out, call = await self.client.structured(prompt, CompactVerifyOutput, "verify",
                                                     run_id, logprobs=self.logprobs)
        except CallFailed as exc:
            return {}, f"verify failed: {exc}", exc.call_id, {}
        wanted = range(first, first + count)
        seen: dict[int, CompactJudgement] = {}
        conflicting: set[int] = set()
        for j in out.judgements:
            if j.claim in seen:
                conflicting.add(j.claim)  # judged twice: neither judgement is trusted
            seen.setdefault(j.claim, j)
        judged: dict[int, ClaimJudgement | str] = {
            n: expand(j, record, n) for n, j in seen.items() if n in wanted}
        for n in conflicting & set(wanted):
            judged[n] = judged_twice(n)
        return judged, None, call, self._supports(call, [j.claim for j in out.judgements])


def claim_data(number: int, claim: Claim) -> dict[str, object]:
    """A claim as the verify templates frame it: its number, text and cited source ids."""
    return {"number": number, "text": claim.text,
            "cites": sorted({cit.source for cit in claim.citations})}


def source_data(record: AnswerRecord) -> list[dict[str, str | None]]:
    """The answer's sources as the templates that frame whole sources read them
    (``verify_claims``, ``judge_answer``)."""
    return [{"id": s.id, "title": s.title, "version": s.version,
             "effective_date": s.effective_date, "content": s.content}
            for s in record.sources]


def excerpt_record(record: AnswerRecord, claims: list[Claim]) -> AnswerRecord:
    """The record with each source cut to the passages that best cover these claims
    (:func:`judge.decide.excerpts.locate_excerpts`), in source order, joined by an ellipsis
    line: what a model whose context cannot hold the whole sources is shown. Every passage
    is the source's own text, so a quote from it is found in the whole source."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for claim in claims:
        for evidence in locate_excerpts(claim.text, record):
            if evidence.start is not None and evidence.end is not None:
                spans.setdefault(evidence.source_id, []).append((evidence.start, evidence.end))
    sources = []
    for source in record.sources:
        content, merged = source.content, list[tuple[int, int]]()
        for start, end in sorted(spans.get(source.id, [])):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        text = "\n…\n".join(content[a:b] for a, b in merged) or "(no passage of this source "\
            "matches the claims)"
        sources.append(source.model_copy(update={"text": text, "json_doc": None}))
    return record.model_copy(update={"sources": sources})


def judged_twice(number: int) -> str:
    return (f"the model gave more than one judgement for claim {number} (conflicting or "
            "duplicate): fail closed")


def expand(
    judgement: CompactJudgement | JointClaim, record: AnswerRecord, number: int
) -> ClaimJudgement:
    """A compact judgement as the full one of claim ``number``, each quote extended to its
    sentence when found."""
    return ClaimJudgement(
        claim=number,
        label=judgement.label,
        subtype=judgement.subtype,
        evidence=[
            EvidenceQuote(source_id=e.source, quote=extend_quote(e.source, e.quote, record))
            for e in judgement.evidence
        ],
        rationale=judgement.rationale,
    )


def extend_quote(source_id: str, quote: str, record: AnswerRecord) -> str:
    """The sentence(s) of the source that hold the quote, found after normalisation; the
    quote unchanged when the source or the quote is not found (the quote check then fails)."""
    source = record.source(source_id)
    if source is None:
        return quote
    content = source.content
    span = find_quote(quote, content)
    if span is None:
        return quote
    start, end = span
    for s, e in sentence_spans(content):
        if s <= span[0] < e:
            start = min(start, s)
        if s < span[1] <= e:
            end = max(end, e)
    return content[start:end]
