"""One verdict from one decision (see :mod:`judge.assembly`)."""

from __future__ import annotations

from judge.assembly.subtypes import derive_misattribution, derive_subtype
from judge.checks.claims import check_evidence_quotes, evidence_numbers_check, run_claim_checks
from judge.checks.strength import strength as evidence_strength
from judge.config import JudgeConfig
from judge.decide import Decision
from judge.decide.abstention import check_abstention
from judge.decide.signals import apply_signals
from judge.records import AnswerRecord
from judge.verdicts import JUDGE_ERROR, Check, Claim, Evidence, Label, Verdict

MAX_EVIDENCE, MAX_QUOTE, MAX_RATIONALE = 3, 1000, 600


class Assembler:
    """Turns decisions into verdicts for one judge version."""

    def __init__(self, config: JudgeConfig, judge_version: str) -> None:
        self.config = config
        self.judge_version = judge_version

    def verdict(
        self, record: AnswerRecord, decision: Decision, extra_calls: list[str] | None = None
    ) -> Verdict:
        """``extra_calls`` (the split call) come before the decision's own calls."""
        claim, judgement, error = decision.claim, decision.judgement, decision.error
        located, support = decision.located, decision.support
        call_ids = [*(extra_calls or []), *decision.call_ids]
        checks: list[Check] = run_claim_checks(claim.text, claim.citations, record)
        reasons: list[str] = []
        evidence: list[Evidence]
        subtype: str | None
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
            quote_checks: list[Check]
            if located is not None:  # located by the program: found by construction
                evidence, quote_checks = located, []
            else:
                evidence, quote_checks = check_evidence_quotes(evidence, record)
            checks += quote_checks
            if label == Label.SUPPORTED.value:
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
        if claim.origin == "uncovered":  # the split left this sentence out
            reasons.append("uncovered_sentence")
        strength = evidence_strength(claim.text, evidence, checks, record)
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
            claim=claim.text,
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
