"""The judging pipeline for one answer: split → deterministic checks → verify → review flags.

``Pipeline.judge`` is free of storage writes: it returns an ``AnswerResult`` that the
runner persists in one transaction, and that ``replay`` compares with what was stored.
"""

from __future__ import annotations

import asyncio
import math
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from judge import checks as checks_mod
from judge.abstention import check_abstention, looks_like_abstention
from judge.checks import evidence_numbers_check
from judge.citations import segment_answer, strip_markers
from judge.config import JudgeConfig, judge_version
from judge.excerpts import locate_excerpts, locate_sentences
from judge.linear import decide_linear, features
from judge.models.client import CallFailed, ModelClient
from judge.prompts import prompt_versions, prompts_dir, render, template_hash
from judge.records import AnswerRecord, Citation, content_hash
from judge.schemas import ClaimJudgement, ClaimLabel, SplitOutput, VerifyOutput
from judge.scores import OPTIONS, YES_NO, combine, decide, describe, yes_probability
from judge.selfgrade import self_grading_reason
from judge.signals import apply_signals
from judge.slots import SlotFill, compare, find_slot
from judge.text import has_cjk
from judge.verdicts import JUDGE_ERROR, AnswerStatus, Check, Claim, Evidence, Label, Verdict

MAX_EVIDENCE, MAX_QUOTE, MAX_RATIONALE = 3, 1000, 600


@dataclass
class AnswerResult:
    record: AnswerRecord
    status: str  # "judged" | "refused"
    claims: list[Claim] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    answer_status: AnswerStatus | None = None
    refused_reason: str | None = None


def claim_id(answer_id: str, text: str, occurrence: int = 0) -> str:
    norm = unicodedata.normalize("NFKC", text).strip()
    return "c-" + content_hash([answer_id, norm, occurrence])[:16]


def answer_status(claims: list[Claim]) -> AnswerStatus:
    abstentions = sum(c.is_abstention for c in claims)
    if abstentions == 0:
        return "answered"
    return "insufficient" if abstentions == len(claims) else "partial"


class Pipeline:
    """A pinned judge: config + prompt templates → a judge version; judges answer records."""

    def __init__(self, config: JudgeConfig, client: ModelClient, root: Path | None = None):
        self.config = config
        self.client = client
        self.root = root or prompts_dir()
        self.templates = {
            f"{name}/{version}": template_hash(name, version, self.root)
            for name, spec in sorted(config.prompts.items())
            for version in prompt_versions(spec)
        }
        verify_prompt = {"per_claim": "label_claim", "scores": "choose_label"}.get(
            config.strategy, "verify_claims"
        )
        for required in ("split_claims", verify_prompt):
            if required not in config.prompts:
                raise ValueError(f"judge config names no version for prompt {required!r}")
        self.judge_version = judge_version(config, self.templates)

    # -- public -----------------------------------------------------------------------

    async def judge(self, record: AnswerRecord, run_id: str | None = None) -> AnswerResult:
        reason = self_grading_reason(record.generator, self.config.model)
        if reason:
            return AnswerResult(record, "refused", refused_reason=reason)
        claims, split_error, split_call = await self._claims(record, run_id)
        if split_error is not None:
            claim = claims[0]
            verdict = self._verdict(
                record, claim, None, split_error, [split_call] if split_call else []
            )
            return AnswerResult(record, "judged", claims, [verdict], answer_status(claims))
        verdicts = await self._verify(record, claims, run_id, split_call)
        return AnswerResult(record, "judged", claims, verdicts, answer_status(claims))

    # -- split -------------------------------------------------------------------------

    async def _claims(
        self, record: AnswerRecord, run_id: str | None
    ) -> tuple[list[Claim], str | None, str | None]:
        answer_id = record.answer_id
        if record.claims is not None:  # pre-split: used as given, never re-split
            claims = self._make_claims(
                answer_id,
                [(c.text, c.citations, looks_like_abstention(c.text)) for c in record.claims],
                origin="given",
            )
            return claims, None, None
        sentences = segment_answer(record.answer, record.sources) or []
        texts = [s.text for s in sentences if s.text.strip()]
        kept = [s for s in sentences if s.text.strip()]
        if not texts:
            texts, kept = [record.answer], []
        prompt = render(
            "split_claims",
            self.config.prompts["split_claims"],
            self.root,
            question=record.question,
            sentences=texts,
            max_claims=self.config.max_claims_per_answer,
        )
        try:
            out, call = await self.client.structured(prompt, SplitOutput, "split", run_id)
        except CallFailed as exc:
            return self._unsplit(record), f"split failed: {exc}", exc.call_id
        error = None
        if len(out.claims) > self.config.max_claims_per_answer:
            error = (
                f"split produced {len(out.claims)} claims; the bound is "
                f"{self.config.max_claims_per_answer}"
            )
        bad = [c.sentence for c in out.claims if not 1 <= c.sentence <= len(texts)]
        if bad:
            error = f"split referred to sentence numbers that do not exist: {bad[:5]}"
        if error:
            return self._unsplit(record), error, call
        specs = []
        for c in out.claims:
            cites = kept[c.sentence - 1].citations if kept else []
            specs.append((c.text, cites, c.kind == "abstention" or looks_like_abstention(c.text)))
        return self._make_claims(answer_id, specs, origin="split"), None, call

    def _unsplit(self, record: AnswerRecord) -> list[Claim]:
        text = record.answer if len(record.answer) <= 4000 else record.answer[:4000] + "…"
        return [
            Claim(
                id=claim_id(record.answer_id, text, -1),
                answer_id=record.answer_id,
                index=0,
                text=text,
                origin="unsplit",
            )
        ]

    @staticmethod
    def _make_claims(
        answer_id: str, specs: list[tuple[str, list[Citation], bool]], origin: str
    ) -> list[Claim]:
        seen: dict[str, int] = {}
        claims = []
        for index, (text, cites, abstention) in enumerate(specs):
            key = unicodedata.normalize("NFKC", text).strip()
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            claims.append(
                Claim(
                    id=claim_id(answer_id, text, occurrence),
                    answer_id=answer_id,
                    index=index,
                    text=text.strip(),
                    citations=list(cites),
                    origin=origin,  # type: ignore[arg-type]
                    is_abstention=abstention,
                )
            )
        return claims

    # -- verify ------------------------------------------------------------------------

    async def _verify(
        self, record: AnswerRecord, claims: list[Claim], run_id: str | None, split_call: str | None
    ) -> list[Verdict]:
        if self.config.strategy in ("per_claim", "scores"):
            one = self._score_one if self.config.strategy == "scores" else self._label_one
            return list(await asyncio.gather(*(one(record, c, run_id, split_call) for c in claims)))
        size = self.config.verify_batch_size
        batches = [claims[i : i + size] for i in range(0, len(claims), size)]
        results = await asyncio.gather(*(self._verify_batch(record, b, run_id) for b in batches))
        verdicts = []
        for batch, (judgements, error, call) in zip(batches, results, strict=True):
            calls = [c for c in (split_call, call) if c]
            for number, claim in enumerate(batch, start=1):
                j = judgements.get(number)
                err = error if error else (None if j else f"no judgement for claim {number}")
                verdicts.append(self._verdict(record, claim, j, err, calls))
        return verdicts

    async def _label_one(
        self, record: AnswerRecord, claim: Claim, run_id: str | None, split_call: str | None
    ) -> Verdict:
        located = locate_excerpts(claim.text, record)
        prompt = render(
            "label_claim",
            self.config.prompts["label_claim"],
            self.root,
            claim=claim.text,
            excerpts=excerpt_data(located),
        )
        calls = [split_call] if split_call else []
        try:
            out, call = await self.client.structured(prompt, ClaimLabel, "label", run_id)
        except CallFailed as exc:
            return self._verdict(record, claim, None, f"label failed: {exc}", [*calls, exc.call_id])
        judgement = ClaimJudgement(
            claim=1,
            label=out.label,
            subtype=None if out.label == "supported" else "opinion",
            rationale="label by the model on program-located excerpts",
        )
        return self._verdict(record, claim, judgement, None, [*calls, call], located=located)

    async def _score_one(
        self, record: AnswerRecord, claim: Claim, run_id: str | None, split_call: str | None
    ) -> Verdict:
        located = locate_excerpts(claim.text, record)
        excerpts = excerpt_data(located)
        calls = [split_call] if split_call else []
        answers = []
        for version in prompt_versions(self.config.prompts["choose_label"]):
            try:
                logprobs, call = await self._ask(
                    "choose_label", version, OPTIONS, "score", claim, excerpts, run_id
                )
            except CallFailed as exc:
                error = f"score failed ({version}): {exc}"
                return self._verdict(record, claim, None, error, [*calls, exc.call_id])
            calls.append(call)
            answers.append(logprobs)
        combined = combine(answers)
        sentences = None
        if self.config.sentence_questions:
            sentences = []
            version = prompt_versions(self.config.prompts["choose_label"])[0]
            for sentence in locate_sentences(claim.text, record, self.config.sentence_questions):
                try:
                    logprobs, call = await self._ask(
                        "choose_label", version, OPTIONS, "sentence", claim,
                        excerpt_data([sentence]), run_id,
                    )
                except CallFailed as exc:
                    error = f"sentence question failed: {exc}"
                    return self._verdict(record, claim, None, error, [*calls, exc.call_id])
                calls.append(call)
                sentences.append(logprobs)
        slot_outcome, slot_note = None, ""
        slot = (
            find_slot(strip_markers(claim.text, record.sources))
            if "fill_slot" in self.config.prompts else None
        )
        if slot is not None:
            prompt = render(
                "fill_slot", self.config.prompts["fill_slot"], self.root,
                statement=slot.statement, excerpts=excerpts, zh=has_cjk(claim.text),
            )
            try:
                fill, call = await self.client.structured(prompt, SlotFill, "slot", run_id)
            except CallFailed as exc:
                error = f"fill-the-blank question failed: {exc}"
                return self._verdict(record, claim, None, error, [*calls, exc.call_id])
            calls.append(call)
            slot_outcome = compare(slot, fill.answer, [e["text"] for e in excerpts])
            slot_note = f", blank {slot.text[:40]!r} filled as {fill.answer[:40]!r}: {slot_outcome}"
        if self.config.score_model is None:
            label, probs = decide(combined, self.config.label_bias)
            rationale = f"scores on program-located excerpts: {describe(probs)}"
        else:
            values = features(
                claim.text, combined, located, record,
                self.config.support_overlap_min, self.config.numbers_overlap_min, sentences,
                slot_outcome,
            )
            label, probs = decide_linear(values, self.config.score_model)
            best = (
                f", best single sentence S {math.exp(values['s_max_supported']):.2f} "
                f"C {math.exp(values['s_max_contradicted']):.2f}"
                if sentences is not None else ""
            )
            rationale = (
                f"linear rule on scores and evidence: {describe(probs)} (overlap "
                f"{values['overlap']:.2f}, numbers missing {int(values['numbers_missing'])}, "
                f"opinion wording {int(values['opinion'])}{best}{slot_note})"
            )
        if "check_contradiction" in self.config.prompts and (
            label in self.config.contradiction_overrides
        ):
            try:
                answer, call = await self._ask(
                    "check_contradiction", self.config.prompts["check_contradiction"], YES_NO,
                    "contradiction", claim, excerpts, run_id,
                )
            except CallFailed as exc:
                error = f"contradiction check failed: {exc}"
                return self._verdict(record, claim, None, error, [*calls, exc.call_id])
            calls.append(call)
            yes = yes_probability(answer)
            rationale += f"; contradiction check: yes {yes:.2f}"
            if yes > self.config.contradiction_yes_above:
                rationale += f" > {self.config.contradiction_yes_above} (was {label})"
                label = Label.CONTRADICTED.value
        judgement = ClaimJudgement(
            claim=1,
            label=label,  # type: ignore[arg-type]
            subtype=None if label == "supported" else "opinion",
            rationale=rationale,
        )
        return self._verdict(
            record, claim, judgement, None, calls, located=located,
            support=probs[Label.SUPPORTED.value],
        )

    async def _ask(
        self,
        name: str,
        version: str,
        options: dict[str, str],
        purpose: str,
        claim: Claim,
        excerpts: list[dict[str, str]],
        run_id: str | None,
    ) -> tuple[dict[str, float], str]:
        """One option question about a claim and its excerpts (in Chinese for a Chinese
        claim): the options' log-probabilities and the call id."""
        prompt = render(
            name, version, self.root, claim=claim.text, excerpts=excerpts, zh=has_cjk(claim.text)
        )
        return await self.client.choice(prompt, options, purpose, run_id)

    async def _verify_batch(
        self, record: AnswerRecord, batch: list[Claim], run_id: str | None
    ) -> tuple[dict[int, ClaimJudgement], str | None, str | None]:
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
        by_number: dict[int, ClaimJudgement] = {}
        for j in out.judgements:
            by_number.setdefault(j.claim, j)  # first judgement of a number wins
        return by_number, None, call

    # -- program-derived fields ---------------------------------------------------------

    def _verdict(
        self,
        record: AnswerRecord,
        claim: Claim,
        judgement: ClaimJudgement | None,
        error: str | None,
        call_ids: list[str],
        located: list[Evidence] | None = None,
        support: float | None = None,
    ) -> Verdict:
        checks: list[Check] = checks_mod.run_claim_checks(claim.text, claim.citations, record)
        reasons: list[str] = []
        if judgement is None or error is not None:
            label, subtype, evidence, rationale = JUDGE_ERROR, None, [], None
            reasons.append(JUDGE_ERROR)
        else:
            label, subtype = judgement.label, judgement.subtype
            model_label = label
            rationale = (judgement.rationale or "")[:MAX_RATIONALE] or None
            evidence = [
                Evidence(source_id=e.source_id[:200], quote=e.quote[:MAX_QUOTE])
                for e in judgement.evidence[:MAX_EVIDENCE]
            ]
            if located is not None:  # located by the program: found by construction
                evidence, quote_checks = located, []
            else:
                evidence, quote_checks = checks_mod.check_evidence_quotes(evidence, record)
            checks += quote_checks
            if label == Label.SUPPORTED:
                checks.append(evidence_numbers_check(claim.text, evidence, record))
            if self.config.signals and self.config.score_model is None:  # else: its features
                label, signal_note = apply_signals(claim.text, label, evidence, record, self.config)
                if signal_note:
                    rationale = f"{rationale} [program: {signal_note}]"
                    subtype = None if label == Label.SUPPORTED else subtype
            if self.config.abstention_check and claim.is_abstention:
                label, subtype, evidence, rationale, decided = self._abstention(
                    record, claim, label, subtype, evidence, rationale, reasons
                )
                if decided:  # by the program: the model's P(supported) is moot
                    support = None
            if located is not None or (label != Label.SUPPORTED and subtype is None):
                subtype = derive_subtype(claim.text, label, evidence, record)
            label, subtype, note = derive_misattribution(claim, label, subtype, evidence)
            if note:
                rationale = f"{rationale} [program: {note}]" if rationale else f"[program: {note}]"
            if label != model_label:  # the program changed the label: the model's
                support = None  # P(supported) no longer describes it
            if label != Label.SUPPORTED:
                reasons.append(f"label:{label}")
            if any(c.failed for c in quote_checks if c.name == "quote_found"):
                reasons.append("invented_quote")
        for check in checks:
            if check.failed and f"check:{check.name}" not in reasons:
                reasons.append(f"check:{check.name}")
        if not claim.citations and not claim.is_abstention:
            reasons.append("missing_citation")
        strength = checks_mod.strength(claim.text, evidence, checks, record)
        if label == Label.SUPPORTED and strength < self.config.review_strength_below:
            reasons.append("weak_evidence")
        if (
            label == Label.SUPPORTED
            and support is not None
            and support < self.config.review_support_below
        ):
            reasons.append("doubtful_support")
        return Verdict(
            claim_id=claim.id,
            answer_id=claim.answer_id,
            judge_version=self.judge_version,
            label=label,
            subtype=subtype,
            evidence=evidence,
            rationale=rationale,
            checks=checks,
            strength=round(strength, 4),
            support=None if support is None or error is not None else round(support, 4),
            review=bool(reasons),
            review_reasons=reasons,
            error=error,
            call_ids=call_ids,
        )


    def _abstention(
        self,
        record: AnswerRecord,
        claim: Claim,
        label: str,
        subtype: str | None,
        evidence: list[Evidence],
        rationale: str | None,
        reasons: list[str],
    ) -> tuple[str, str | None, list[Evidence], str | None, bool]:
        """An abstention is checked by the program: are the sources really silent? The last
        item says whether the program decided the label."""
        finding = check_abstention(
            claim.text, record, self.config.abstention_covered_min,
            self.config.abstention_silent_max,
        )
        note = f"[program: {finding.note}; the model said {label}]"
        rationale = f"{rationale} {note}" if rationale else note
        if finding.label is None:
            reasons.append("abstention_unsettled")
            return label, subtype, evidence, rationale, False
        found = [finding.evidence] if finding.evidence else []
        return finding.label, None, found, rationale, True


def excerpt_data(located: list[Evidence]) -> list[dict[str, str]]:
    """Program-located excerpts as the prompt templates take them."""
    return [{"source_id": e.source_id, "text": e.quote} for e in located]


def derive_misattribution(
    claim: Claim, label: str, subtype: str | None, evidence: list[Evidence]
) -> tuple[str, str | None, str | None]:
    """A claim the judge found supported only by sources it does not cite is
    ``not_in_source`` + ``misattribution`` with respect to its citation."""
    cited = {c.source for c in claim.citations}
    if label != Label.SUPPORTED or not cited:
        return label, subtype, None
    found = [e for e in evidence if e.found]
    if found and all(e.source_id not in cited for e in found):
        sources = ", ".join(sorted({e.source_id for e in found}))
        return (
            Label.NOT_IN_SOURCE.value,
            "misattribution",
            f"supported by {sources}, but the claim cites {', '.join(sorted(cited))}",
        )
    return label, subtype, None


_ABSOLUTE = re.compile(
    r"\b(always|never|all|every|must|only|none|no one|impossible|guaranteed)\b|"
    r"總是|一定|必須|所有|從不|絕不|永遠|完全|只有|必定",
    re.IGNORECASE,
)
_HEDGED = re.compile(
    r"\b(usually|often|typically|generally|may|might|can|some|recommended|should|most|"
    r"unless|except|if)\b|通常|經常|可能|建議|一般|多數|部分|除非|如果|若",
    re.IGNORECASE,
)


def derive_subtype(
    claim_text: str, label: str, evidence: list[Evidence], record: AnswerRecord
) -> str | None:
    """The hallucination subtype by program rules, for strategies where the model gives
    only a label: numbers/dates/versions missing from the evidence → numeric_or_version_error;
    an absolute claim over hedged evidence → overgeneralization; an opinion → opinion;
    otherwise unsupported_addition."""
    if label == Label.SUPPORTED:
        return None
    if label == Label.NOT_VERIFIABLE:
        return "opinion"
    numbers = evidence_numbers_check(claim_text, evidence, record)
    if numbers.failed:
        return "numeric_or_version_error"
    text = " ".join(e.quote or "" for e in evidence)
    if _ABSOLUTE.search(claim_text) and _HEDGED.search(text):
        return "overgeneralization"
    return "unsupported_addition"
