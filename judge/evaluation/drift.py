"""Drift between two judge versions on the same claims: which claims both judged, re-running a
stored version, and the drift report with each version against gold.

Judging the answers a version has not judged yet is the caller's job (:func:`judge.api.drift`
does it with :func:`judge.api.judge_answers`); this module reads the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from calibration import (
    DriftPair,
    DriftReport,
    ThresholdViolation,
    build_drift_report,
    drift_verdict,
    render_drift_html,
)
from calibration import check_thresholds as check_drift_thresholds
from judge.config import JudgeConfig
from judge.evaluation import EvaluationError
from judge.evaluation.calibrate import CalibrationOutcome, calibrate
from judge.evaluation.gold import GoldFile
from judge.evaluation.matching import ClaimRef, StoreIndex
from judge.evaluation.reports import extra_html, flatten_figures, inject_html
from judge.store import Store


def version_config(store: Store, version: str) -> JudgeConfig:
    """The judge config a stored version was run with; refuses when its prompt templates have
    changed since (re-running it would be a different judge)."""
    from judge.version import version_of

    row = store.judge_version_row(version)
    if row is None:
        raise EvaluationError(f"judge version {version!r} is not in the store")
    # as the CLI builds a config (profile defaults included): the stored config holds only
    # the versioned fields
    from judge.version import remember_stored_heads

    remember_stored_heads(store)
    config = JudgeConfig.load(None, **row["config"])
    current = version_of(config)
    if current != version:
        raise EvaluationError(
            f"judge version {version} cannot be re-run: its config now gives version "
            f"{current} (a prompt template changed)")
    return config


def missing_answers(store: Store, version: str, answer_ids: Iterable[str]) -> list[str]:
    return [a for a in answer_ids if not store.answer_done(version, a)]


def drift_pairs(
    index: StoreIndex,
    version_a: str,
    version_b: str,
    *,
    answer_ids: set[str] | None = None,
    claim_ids: set[str] | None = None,
    gold_by_claim: dict[str, str] | None = None,
) -> tuple[list[DriftPair], list[str], list[str]]:
    """Pairs of verdicts on the claims both versions judged (in scope), and the claim ids only
    one of them judged."""
    def scoped(version: str) -> dict[str, dict[str, Any]]:
        rows = index.rows.get(version, {})
        return {
            cid: r for cid, r in rows.items()
            if (answer_ids is None or r["answer_id"] in answer_ids)
            and (claim_ids is None or cid in claim_ids)
        }

    rows_a, rows_b = scoped(version_a), scoped(version_b)
    gold_by_claim = gold_by_claim or {}
    pairs = [
        DriftPair(claim_id=cid, label_a=ra["label"], label_b=rows_b[cid]["label"],
                  rationale_a=ra["rationale"], rationale_b=rows_b[cid]["rationale"],
                  gold_label=gold_by_claim.get(cid))
        for cid, ra in rows_a.items() if cid in rows_b
    ]
    only_a = [c for c in rows_a if c not in rows_b]
    only_b = [c for c in rows_b if c not in rows_a]
    return pairs, only_a, only_b


@dataclass
class DriftResult:
    """A drift report between versions A and B, with everything its renderings show: the
    claims' texts, each version's calibration on the claims both judged (with gold), and the
    claim ids only one version judged."""

    report: DriftReport
    claims: dict[str, str]
    only_a: list[str]
    only_b: list[str]
    #: per version ("a", "b"): calibration against gold on the claims both judged
    outcomes: dict[str, CalibrationOutcome] = field(default_factory=dict)
    generated_at: str = field(
        default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def violations(self, thresholds: dict[str, float]) -> list[ThresholdViolation]:
        """Thresholds (``kappa_below``, ``flip_rate_above``, ...) this report violates."""
        return check_drift_thresholds(self.report, thresholds) if thresholds else []

    def to_dict(self, thresholds: dict[str, float] | None = None) -> dict[str, Any]:
        """The JSON contract of ``judge drift --json``."""
        report = self.report
        dump = report.model_dump(mode="json")
        calibration = None
        if self.outcomes:
            calibration = {
                key: {"judge_version": o.report.judge_version, **flatten_figures(o.report),
                      "validity_gate": o.gate}
                for key, o in self.outcomes.items()
            }
        return {
            "generated_at": self.generated_at,
            "version_a": report.version_a,
            "version_b": report.version_b,
            "verdict": drift_verdict(report),
            "n": report.n,
            "flips": dump["flips"],
            "n_flipped": report.n_flipped,
            "agreement": dump["agreement"]["value"],
            "agreement_ci": {k: dump["agreement"][k] for k in ("ci_low", "ci_high", "n")},
            "kappa": {k: dump["kappa"][k] for k in ("value", "ci_low", "ci_high", "n")},
            "mcnemar_p": dump["mcnemar"]["p_value"],
            "stuart_maxwell_p": dump["stuart_maxwell"]["p_value"],
            "bowker_p": dump["bowker"]["p_value"],
            "flipped": [f.claim_id for f in report.flipped],
            "flipped_claims": [{**f.model_dump(mode="json"), "claim": self.claims.get(f.claim_id)}
                               for f in report.flipped],
            "per_label": dump["per_label"],
            "only_a": self.only_a,
            "only_b": self.only_b,
            "gold": dump["gold"],
            "calibration": calibration,
            "violations": [v.model_dump(mode="json")
                           for v in self.violations(thresholds or {})],
            "report": dump,
        }

    def to_html(self, thresholds: dict[str, float] | None = None) -> str:
        """A self-contained HTML page."""
        page = render_drift_html(self.report, self.violations(thresholds) if thresholds else None,
                                 self.claims)
        for key, name in (("a", "A"), ("b", "B")):
            if key in self.outcomes:
                outcome = self.outcomes[key]
                page = inject_html(page, extra_html(
                    outcome, f"Version {name} ({outcome.report.judge_version}): "
                             "gates and gold coverage", version=name))
        return page


def build_drift(
    store: Store,
    version_a: str,
    version_b: str,
    *,
    gold: GoldFile | None = None,
    refs: dict[str, ClaimRef] | None = None,
    answer_ids: set[str] | None = None,
) -> DriftResult:
    """The drift report of two stored versions: on the claims of ``answer_ids`` (answers of
    an input both judged) and of the gold items, or on every claim both judged."""
    index = StoreIndex(store, [version_a, version_b])
    gold_by_claim: dict[str, str] = {}
    claim_scope: set[str] | None = None
    if answer_ids is not None:
        claim_scope = {cid for v in (version_a, version_b)
                       for cid, r in index.rows.get(v, {}).items() if r["answer_id"] in answer_ids}
    if gold is not None:
        claim_scope = claim_scope or set()
        for version in (version_a, version_b):
            outcome = calibrate(store, gold, version, refs=refs, index=index)
            for m in outcome.matching.matched:
                gold_by_claim[m.row["claim_id"]] = m.entry.item.label
                claim_scope.add(m.row["claim_id"])
    pairs, only_a, only_b = drift_pairs(index, version_a, version_b, claim_ids=claim_scope,
                                        gold_by_claim=gold_by_claim)
    if not pairs:
        raise EvaluationError(
            f"{version_a} and {version_b} judged no claim in common"
            + ("" if answer_ids is not None or gold is not None else
               "; pass an input or a gold file to have them judge the same answers"))
    report = build_drift_report(pairs, version_a=version_a, version_b=version_b)
    common = {p.claim_id for p in pairs}
    outcomes = {}
    if gold is not None:
        for key, version in (("a", version_a), ("b", version_b)):
            outcomes[key] = calibrate(store, gold, version, refs=refs, index=index,
                                      restrict=common)
    claims = {cid: index.rows[version_a][cid]["claim"] for cid in common}
    return DriftResult(report, claims, only_a, only_b, outcomes)
