"""The named steps of verdict assembly, in the order :data:`STEPS` applies them to a
:class:`Draft`: first the program's corrections of the decided label, then the review reasons
(in the order a verdict lists them). A step that does not apply leaves the draft as it is; the
corrections apply to a judged claim only, never to a ``judge_error``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from judge.assembly.abstention import check_abstention
from judge.assembly.signals import apply_signals
from judge.assembly.subtypes import derive_misattribution, derive_subtype
from judge.checks.claims import check_evidence_quotes, evidence_numbers_check, run_claim_checks
from judge.checks.strength import strength as evidence_strength
from judge.config import JudgeConfig
from judge.decide import Decision
from judge.records import AnswerRecord
from judge.verdicts import JUDGE_ERROR, Check, Evidence, Label

MAX_EVIDENCE, MAX_QUOTE, MAX_RATIONALE = 3, 1000, 600

#: The models other than the pinned one that answered any of these calls (the model client's
#: ``answered_by_other``).
OtherModels = Callable[[list[str]], list[str]]


@dataclass
class Draft:
    """A verdict in the making: what the decision said, as the steps correct and flag it."""

    record: AnswerRecord
    decision: Decision
    config: JudgeConfig
    label: str
    subtype: str | None
    evidence: list[Evidence]
    rationale: str | None
    support: float | None
    #: the model's label before any correction; None: the decision is an error
    model_label: str | None
    checks: list[Check] = field(default_factory=list)
    quote_checks: list[Check] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    strength: float = 0.0
    #: the calls the verdict rests on (the split call first)
    call_ids: list[str] = field(default_factory=list)
    other_models: OtherModels | None = None

    @classmethod
    def of(cls, record: AnswerRecord, decision: Decision, config: JudgeConfig,
           extra_calls: list[str] | None = None,
           other_models: OtherModels | None = None) -> Draft:
        """The decision as it came: its label, subtype, evidence (cut to size) and rationale,
        with the checks of the claim's own text; a ``judge_error`` when it has no judgement.
        ``extra_calls`` (the split call) come before the decision's own calls."""
        claim, judgement = decision.claim, decision.judgement
        checks = run_claim_checks(claim.text, claim.citations, record)
        calls = [*(extra_calls or []), *decision.call_ids]
        if judgement is None or decision.error is not None:
            return cls(record, decision, config, JUDGE_ERROR, None, [], None, decision.support,
                       None, checks, reasons=[JUDGE_ERROR], call_ids=calls,
                       other_models=other_models)
        evidence = [Evidence(source_id=e.source_id[:200], quote=e.quote[:MAX_QUOTE])
                    for e in judgement.evidence[:MAX_EVIDENCE]]
        return cls(record, decision, config, judgement.label, judgement.subtype, evidence,
                   (judgement.rationale or "")[:MAX_RATIONALE] or None, decision.support,
                   judgement.label, checks, call_ids=calls, other_models=other_models)

    @property
    def judged(self) -> bool:
        return self.model_label is not None

    def note(self, text: str) -> None:
        """Add the program's note to the rationale."""
        self.rationale = f"{self.rationale} {text}" if self.rationale else text


# -- corrections --------------------------------------------------------------------------------


def verify_quotes(d: Draft) -> None:
    """Evidence the program located is found by construction; quoted evidence is looked up in
    the sources. A "supported" claim's numbers are checked against its evidence."""
    if not d.judged:
        return
    if d.decision.located is not None:
        d.evidence = d.decision.located
    else:
        d.evidence, d.quote_checks = check_evidence_quotes(d.evidence, d.record)
    d.checks += d.quote_checks
    if d.label == Label.SUPPORTED.value:
        d.checks.append(evidence_numbers_check(d.decision.claim.text, d.evidence, d.record))


def correct_by_signals(d: Draft) -> None:
    """``signals``: the program's overrides (:mod:`judge.assembly.signals`); with a
    ``score_model`` they are its features instead."""
    if not d.judged or not d.config.signals or d.config.score_model is not None:
        return
    d.label, signal_note = apply_signals(d.decision.claim.text, d.label, d.evidence, d.record,
                                         d.config)
    if signal_note:
        d.rationale = f"{d.rationale} [program: {signal_note}]"
        d.subtype = None if d.label == Label.SUPPORTED else d.subtype


def settle_abstention(d: Draft) -> None:
    """``abstention_check``: an abstention is checked by the program, are the sources really
    silent? (:mod:`judge.assembly.abstention`). When the program decides the label, the
    model's P(supported) is moot; when it cannot, the claim goes to review."""
    if not d.judged or not d.config.abstention_check or not d.decision.claim.is_abstention:
        return
    finding = check_abstention(d.decision.claim.text, d.record, d.config.abstention_covered_min,
                               d.config.abstention_silent_max)
    d.note(f"[program: {finding.note}; the model said {d.label}]")
    if finding.label is None:
        d.reasons.append("abstention_unsettled")
        return
    d.label, d.subtype = finding.label, None
    d.evidence = [finding.evidence] if finding.evidence else []
    d.support = None


def derive_subtype_by_rules(d: Draft) -> None:
    """The subtype by program rules when the program located the evidence or the model gave
    none (:func:`judge.assembly.subtypes.derive_subtype`)."""
    if d.judged and (d.decision.located is not None
                     or (d.label != Label.SUPPORTED and d.subtype is None)):
        d.subtype = derive_subtype(d.decision.claim.text, d.label, d.evidence, d.record)


def find_misattribution(d: Draft) -> None:
    """Supported only by sources the claim does not cite: ``not_in_source`` +
    ``misattribution``."""
    if not d.judged:
        return
    d.label, d.subtype, note = derive_misattribution(d.decision.claim, d.label, d.subtype,
                                                     d.evidence)
    if note:
        d.note(f"[program: {note}]")


def refuse_blank_sources(d: Draft) -> None:
    """An empty source (:attr:`judge.records.Source.is_empty`: blank text, whitespace and
    zero-width characters included, or a JSON document that holds no value) states nothing:
    a claim it would support (its evidence is from empty sources only, or it has no evidence
    and every source it cites, or every source when it cites none, is empty) is
    ``not_in_source`` and flagged ``empty_source``. An abstention ("the sources do not say")
    is left to its own check."""
    claim = d.decision.claim
    if not d.judged or d.label != Label.SUPPORTED or claim.is_abstention:
        return
    blank = {s.id for s in d.record.sources if s.is_empty}
    if not blank:
        return
    cited = {c.source for c in claim.citations} or {s.id for s in d.record.sources}
    if ({e.source_id for e in d.evidence} or cited) <= blank:
        d.label, d.subtype, d.evidence = Label.NOT_IN_SOURCE.value, "unsupported_addition", []
        d.note(f"[program: the source(s) {', '.join(sorted(blank))} are empty; nothing "
               "there can support a claim]")
        d.reasons.append("empty_source")


def drop_moot_support(d: Draft) -> None:
    """The program changed the label: the model's P(supported) no longer describes it."""
    if d.judged and d.label != d.model_label:
        d.support = None


# -- review reasons -----------------------------------------------------------------------------


def flag_label(d: Draft) -> None:
    """A judged claim that is not "supported" goes to review, and so does one whose quoted
    evidence is nowhere in its sources (``invented_quote``)."""
    if not d.judged:
        return
    if d.label != Label.SUPPORTED:
        d.reasons.append(f"label:{d.label}")
    if any(c.failed for c in d.quote_checks if c.name == "quote_found"):
        d.reasons.append("invented_quote")


def flag_failed_checks(d: Draft) -> None:
    for check in d.checks:
        if check.failed and f"check:{check.name}" not in d.reasons:
            d.reasons.append(f"check:{check.name}")


def flag_missing_citation(d: Draft) -> None:
    claim = d.decision.claim
    if not claim.citations and not claim.is_abstention:
        d.reasons.append("missing_citation")


def flag_uncovered_sentence(d: Draft) -> None:
    """The split left this sentence out."""
    if d.decision.claim.origin == "uncovered":
        d.reasons.append("uncovered_sentence")


def flag_weak_evidence(d: Draft) -> None:
    """The evidence strength (:mod:`judge.checks.strength`) is measured; a "supported" verdict
    below ``review_strength_below`` goes to review."""
    d.strength = evidence_strength(d.decision.claim.text, d.evidence, d.checks, d.record)
    if d.label == Label.SUPPORTED and d.strength < d.config.review_strength_below:
        d.reasons.append("weak_evidence")


def flag_doubtful_support(d: Draft) -> None:
    if (d.label == Label.SUPPORTED and d.support is not None
            and d.support < d.config.review_support_below):
        d.reasons.append("doubtful_support")


def flag_model_mismatch(d: Draft) -> None:
    """A verdict resting on a call the provider answered as another model than the pinned one
    is not the pinned judge's verdict: it goes to review (``model_mismatch``)."""
    if d.other_models is None or "model_mismatch" in d.reasons:
        return
    if d.other_models(d.call_ids):
        d.reasons.append("model_mismatch")


#: The assembly, in order.
STEPS: tuple[Callable[[Draft], None], ...] = (
    verify_quotes,
    correct_by_signals,
    settle_abstention,
    derive_subtype_by_rules,
    find_misattribution,
    refuse_blank_sources,
    drop_moot_support,
    flag_label,
    flag_failed_checks,
    flag_missing_citation,
    flag_uncovered_sentence,
    flag_weak_evidence,
    flag_doubtful_support,
    flag_model_mismatch,
)
