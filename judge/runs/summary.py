"""What a run did: answers, claims, labels, flags, refusals, rejected input, calls and tokens."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A review reason floods the queue when more than this share of the flagged claims have it.
FLOOD_SHARE = 0.5


def _switches(uncited: str) -> dict[str, str]:
    """The review reasons a setting controls, each with the setting and what it does (a
    reason the config already turned the other way is not listed: no switch is left)."""
    switches = {
        "weak_evidence": "`review_strength_below` in judge.toml sends supported claims with "
                         "weak evidence to review; lower it (0: off) to flag fewer",
        "doubtful_support": "`review_support_below` in judge.toml sends supported claims of "
                            "low probability to review; lower it (0: off) to flag fewer",
    }
    if uncited != "all_sources":
        switches["missing_citation"] = (
            '`uncited = "all_sources"` in judge.toml (or `judge run --uncited all_sources`) '
            "checks an answer without any citation against all its sources instead")
    return switches



@dataclass
class RunSummary:
    run_id: str
    judge_version: str
    resumed: bool = False
    answers: int = 0
    answers_judged_now: int = 0
    answers_from_store: int = 0
    #: the code that judges now (judge.fingerprint), and how many answers taken from the
    #: store were judged by other (or unrecorded) code: their verdicts may be stale
    code: str = ""
    answers_from_other_code: int = 0
    claims: int = 0
    labels: Counter[str] = field(default_factory=Counter)
    subtypes: Counter[str] = field(default_factory=Counter)
    flagged: int = 0
    #: flagged claims by review reason (a claim counts once under each of its reasons)
    flag_reasons: Counter[str] = field(default_factory=Counter)
    #: the config's ``uncited`` setting (which switch :meth:`flood` can name depends on it)
    uncited: str = ""
    judge_errors: int = 0
    refused_answers: list[dict[str, str]] = field(default_factory=list)
    #: answers that name no generator (self-grading cannot be ruled out for them; refused
    #: when the config sets ``require_generator``)
    missing_generator: int = 0
    #: answers judged again by ``--retry-errors`` (their earlier verdicts had a judge_error)
    retried_answers: int = 0
    rejected_lines: list[dict[str, Any]] = field(default_factory=list)
    model_calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    #: HTTP requests sent (a retried or re-asked call counts each try)
    attempts: int = 0
    #: identical calls in flight at once, made once
    merged_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: prompt tokens the provider served from its prompt cache (priced lower: counted in
    #: ``cost``); None when no call's provider reported any
    cached_tokens: int | None = None
    cost: float = 0.0
    wall_seconds: float = 0.0
    model_mismatch: list[str] = field(default_factory=list)
    #: why the run stopped early (circuit breaker, budget); None when it ran to the end
    stopped: str | None = None
    #: answers of the input left unjudged by a stopped run (judged on resume)
    pending: int = 0
    #: a run a budget stopped: about what the pending answers would spend, per budget
    #: (``{"tokens": 12000.0}``): what the resumed run needs
    budget_to_finish: dict[str, float] = field(default_factory=dict)
    #: the run stopped on a usage error (a budget smaller than one call): exit 64
    usage_error: bool = False
    #: the exit code of a run stopped because its first calls failed for a cause of the setup
    #: (64 the config or the environment, 1 the endpoint unreachable); None otherwise
    setup_exit: int | None = None

    def stale_warning(self, db: Path | str | None) -> str | None:
        """What to say when answers from the store were judged by other code."""
        if not self.answers_from_other_code:
            return None
        return (
            f"{self.answers_from_other_code} answer(s) taken from the store were judged by "
            f"other code than this ({self.code}), so their verdicts may be stale; "
            f"`judge replay --db {db} --run {self.run_id}` shows what this code would change "
            "(no model call), and records the answers it reproduces so this warning stops"
        )

    def flood(self) -> str | None:
        """What to say when one review reason that a setting controls is behind more than
        :data:`FLOOD_SHARE` of the flagged claims: the reason, its share and the switch."""
        switches = _switches(self.uncited)
        for reason, n in self.flag_reasons.most_common():
            if reason in switches and n > FLOOD_SHARE * self.flagged:
                return (f"{n} of {self.flagged} flagged claims ({n / self.flagged:.0%}) are "
                        f"flagged {reason}: {switches[reason]}")
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "judge_version": self.judge_version,
            "resumed": self.resumed,
            "answers": self.answers,
            "answers_judged_now": self.answers_judged_now,
            "answers_from_store": self.answers_from_store,
            "code": self.code,
            "answers_from_other_code": self.answers_from_other_code,
            "claims": self.claims,
            "labels": dict(sorted(self.labels.items())),
            "subtypes": dict(sorted(self.subtypes.items())),
            "flagged": self.flagged,
            "flag_reasons": dict(self.flag_reasons.most_common()),
            "flood": self.flood(),
            "judge_errors": self.judge_errors,
            "refused_answers": self.refused_answers,
            "missing_generator": self.missing_generator,
            "retried_answers": self.retried_answers,
            "rejected_lines": self.rejected_lines,
            "model_calls": self.model_calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "attempts": self.attempts,
            "merged_calls": self.merged_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "cost": round(self.cost, 6),
            "wall_seconds": round(self.wall_seconds, 2),
            "model_mismatch": self.model_mismatch,
            "stopped": self.stopped,
            "pending": self.pending,
            "budget_to_finish": self.budget_to_finish,
            "setup_exit": self.setup_exit,
        }

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for this run: 64 stopped by a usage error (a budget smaller
        than one call), the setup's code when its first calls failed for a cause of the
        setup (64 config, 1 unreachable), 4 stopped (breaker or budget), 3 some claims are
        judge_error, 2 some lines were rejected, 0 clean (the most serious wins)."""
        if self.stopped and self.usage_error:
            return 64
        if self.stopped:
            return self.setup_exit or 4
        if self.judge_errors:
            return 3
        if self.rejected_lines:
            return 2
        return 0
