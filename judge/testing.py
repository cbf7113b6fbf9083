"""Gating CI on the judge, as DeepEval users gate theirs with ``assert_test``: plain functions
that raise :class:`JudgeGateFailed` (an ``AssertionError``, so pytest reports it as a failed
test with the message) naming every claim or figure over its limit.

    # tests/test_answers_quality.py
    import judge.testing as jt

    def test_no_contradicted_claim():
        jt.assert_judged("answers.jsonl", db="judge.db", max_labels={"contradicted": 0})

    def test_the_judge_still_finds_our_hallucinations():
        jt.assert_calibrated("gold.jsonl", db="judge.db", queue_recall_below=0.9)

``assert_judged`` judges a file (or takes results already judged) and checks label counts and
judge errors; ``assert_calibrated`` judges a gold file (``judge.eval_gold``) and checks the
calibration thresholds ``judge calibrate --fail-on`` takes (``queue_recall_below``,
``lenient_rate_above``, ...). Both return what they computed, for further asserts.

A top-level module over :mod:`judge.api` (imported when called, so ``import judge.testing`` is
cheap).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.api import CalibrationResult, JudgeResults


class JudgeGateFailed(AssertionError):
    """A gate's limit was exceeded; the message names each claim or figure over it."""


def assert_judged(results: JudgeResults | str | Path, *, config: Any = None, db: Any = None,
                  max_labels: Mapping[str, int] | None = None, max_judge_errors: int = 0,
                  max_flagged: int | None = None, allow_refused: bool = True,
                  show: int = 10) -> JudgeResults:
    """Judge ``results`` (a JSONL path; or take :class:`~judge.api.JudgeResults` as they
    are) and fail when a label occurs more often than ``max_labels`` allows (``{"contradicted":
    0}``: none), when more than ``max_judge_errors`` claims are ``judge_error``, more than
    ``max_flagged`` are flagged for review, or (``allow_refused=False``) an answer was refused
    or rejected. The message names the first ``show`` offending claims."""
    from judge.api import JudgeResults, RunStopped, judge_file

    if not isinstance(results, JudgeResults):
        try:
            results = judge_file(results, config=config, db=db)
        except RunStopped as exc:
            raise JudgeGateFailed(f"the run stopped: {exc}") from exc
    limits = dict(max_labels or {})
    limits["judge_error"] = max_judge_errors
    problems: list[str] = []
    verdicts = [v for answer in results for v in answer.verdicts]
    for label, limit in limits.items():
        hits = [v for v in verdicts if v.label == label]
        if len(hits) > limit:
            shown = "; ".join(f"{v.answer_id}/{v.claim_id}: {v.claim!r}" for v in hits[:show])
            problems.append(f"{len(hits)} claim(s) {label} (at most {limit}): {shown}")
    flagged = [v for v in verdicts if v.review]
    if max_flagged is not None and len(flagged) > max_flagged:
        problems.append(f"{len(flagged)} claim(s) flagged for review (at most {max_flagged})")
    if not allow_refused:
        left = [a for a in results if a.status in ("refused", "rejected")]
        if left:
            problems.append("; ".join(f"answer {a.answer_id or '?'} {a.status}: "
                                      f"{a.refused_reason or a.error}" for a in left[:show]))
    if problems:
        raise JudgeGateFailed("\n".join(problems))
    return results


def assert_calibrated(gold: str | Path, *, config: Any = None, db: Any = None,
                      **thresholds: float) -> CalibrationResult:
    """Judge the gold file with ``config`` (stored calls reused) and fail when a calibration
    threshold is violated, e.g. ``queue_recall_below=0.9`` (the review queue must reach 90% of
    the claims people rejected), ``lenient_rate_above=0.1``. At least one threshold is needed."""
    from judge.api import eval_gold

    if not thresholds:
        raise TypeError("assert_calibrated needs at least one threshold, e.g. "
                        "queue_recall_below=0.9")
    result = eval_gold(gold, config=config, db=db)
    violations = result.violations(thresholds)
    if violations:
        raise JudgeGateFailed("\n".join(v["message"] for v in violations))
    return result
