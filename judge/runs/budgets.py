"""Budgets buy verdicts: a run under a budget (``--max-calls`` / ``--max-tokens`` /
``--max-cost``) starts an answer only when what the answer is expected to cost (its split and
its verification) fits what is left, counting what the answers in flight are still expected
to spend. So at any ``-j`` a budget that covers N answers finishes about N, instead of
spending itself on the first calls of many answers none of which can finish. (The calls
themselves still reserve their share before they are sent, :mod:`judge.models.budget`, so no
budget is ever exceeded.)

An answer's expected cost is its prior (from the sizes of its prompts: the pinned templates,
the question, the answer and its sources; the calls its strategy makes) scaled by what the
answers finished so far spent against their priors. The prior is a guess: an answer is always
started when none is in flight and none has finished. When the next answer does not fit and
none is in flight, the run stops; its summary says how many answers finished and about how
much more would finish the rest (:meth:`AnswerBudget.message`)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from judge.models.budget import ESTIMATE_MARGIN, MESSAGE_TOKENS, Budget, Spend
from judge.models.prompts import template_path
from judge.pipeline import Pipeline
from judge.records import AnswerRecord
from judge.text import estimate_tokens

#: The budgets, in the order they are checked.
KINDS = ("calls", "tokens", "cost")
#: The output allowed for each claim's decision in a prior (a label, a quote, a rationale).
DECISION_TOKENS = 60

Prior = Callable[[AnswerRecord], Spend]


@dataclass
class Share:
    """One answer admitted: its prior, and what its calls spent so far (counted by
    :func:`judge.models.budget.charge` while it is judged)."""

    prior: Spend
    spent: Spend = field(default_factory=Spend)


class AnswerBudget:
    """The admissions of one run's answers under the budgets of its model client."""

    def __init__(self, budget: Budget, prior: Prior) -> None:
        self.budget = budget
        self.prior = prior
        self.running: list[Share] = []
        #: the priors of the answers finished, and what they spent
        self.priors, self.spent = Spend(), Spend()
        self.finished = 0
        #: the budget the next answer did not fit, once the run stopped admitting
        self.stopped_by: str | None = None
        self.halted = False  # the run stopped for another cause: admit nothing more
        self._changed: asyncio.Event | None = None

    def expected(self, prior: Spend) -> Spend:
        """What an answer of this prior is expected to spend, by what the finished ones did."""
        if not self.finished:
            return prior
        out = Spend()
        for kind in KINDS:
            priors, spent = getattr(self.priors, kind), getattr(self.spent, kind)
            value = getattr(prior, kind) * spent / priors if priors else spent / self.finished
            setattr(out, kind, value)
        return out

    def short_of(self, prior: Spend) -> str | None:
        """The first budget an answer of this prior does not fit beside the answers in
        flight (what they are still expected to spend), or None when it fits."""
        expected = self.expected(prior)
        for kind in KINDS:
            limit = self.budget.limit(kind)
            if limit is None:
                continue
            held = sum(max(0.0, getattr(self.expected(s.prior), kind) - getattr(s.spent, kind))
                       for s in self.running)
            if self.budget.used(kind) + held + getattr(expected, kind) > limit:
                return kind
        return None

    async def admit(self, record: AnswerRecord) -> Share | None:
        """Wait until ``record``'s expected cost fits, and hold it; None when the run admits
        no more answers (the next did not fit with none in flight, or the run stopped)."""
        prior = self.prior(record)
        while not (self.halted or self.stopped_by):
            short = self.short_of(prior)
            if short is None or not (self.running or self.finished):
                share = Share(prior)
                self.running.append(share)
                return share
            if not self.running:
                self.stopped_by = short
                self._wake()
                break
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()
        return None

    def done(self, share: Share, finished: bool) -> None:
        """An admitted answer is over: ``finished`` (judged, whatever its verdicts) teaches the
        expected cost; otherwise (stopped, taken from the store, held elsewhere) it only
        gives back what it held."""
        self.running.remove(share)
        if finished:
            self.finished += 1
            self.priors.add(share.prior)
            self.spent.add(share.spent)
        self._wake()

    def halt(self) -> None:
        """The run stopped for another cause: the answers waiting are not started."""
        self.halted = True
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def message(self, pending: Sequence[AnswerRecord], answers: int) -> str | None:
        """Why a budget stopped the run, with how many answers finished and about how much
        more would finish the rest; None when no budget stopped it."""
        kind = self.budget.stopped_by or self.stopped_by
        if kind is None:
            return None
        more = sum(getattr(self.expected(self.prior(r)), kind) for r in pending)
        need = self.budget.next_need if self.budget.stopped_by == kind else ""
        return (f"budget reached: {answers - len(pending)} of {answers} answers finished; "
                f"about {amount(kind, more)} would finish the rest (spent "
                f"{self.budget.spent(kind)}{need}); what finished is stored, and running the "
                "same command again resumes")

    def to_finish(self, pending: Sequence[AnswerRecord]) -> dict[str, float]:
        """About what the pending answers would spend, for each budget the run has."""
        expected = [self.expected(self.prior(r)) for r in pending]
        return {kind: round_up(sum(getattr(e, kind) for e in expected), kind)
                for kind in KINDS if self.budget.limit(kind) is not None}


def round_up(value: float, kind: str) -> float:
    """``value`` rounded up to two significant figures (calls and tokens: whole ones)."""
    if value <= 0:
        return 0
    step = 10.0 ** (math.floor(math.log10(value)) - 1)
    rounded = math.ceil(value / step - 1e-9) * step
    return float(rounded) if kind == "cost" else float(math.ceil(rounded))


def amount(kind: str, value: float) -> str:
    rounded = round_up(value, kind)
    if kind == "cost":
        return f"${rounded:.2g} more"
    unit = "tokens" if kind == "tokens" else "model calls"
    return f"{int(rounded):,} more {unit}"


def prior_of(pipeline: Pipeline, budget: Budget) -> Prior:
    """An answer's prior: the calls the pipeline makes to judge it (a split unless the
    claims are given, then one verify call for the answer under ``batch``, one call a claim
    under the other strategies; one call with ``one_call``), each reading its pinned
    template and its data (estimated generously, as a call's reservation is) and writing
    about twice the answer, or a short decision a claim."""
    config = pipeline.config
    size: dict[str, int] = {}
    for name, version in config.prompts.items():
        path = template_path(name, version, pipeline.root)
        try:
            size[name] = estimate_tokens(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError):
            size[name] = 0
    split, decide = size.get("split_claims", 0), size.get(config.decision_prompt, 0)
    per_claim = config.strategy != "batch"

    def prior(record: AnswerRecord) -> Spend:
        answer = estimate_tokens(record.answer) + estimate_tokens(record.question or "")
        sources = sum(estimate_tokens(s.content) for s in record.sources)
        given = record.claims is not None
        claims = len(record.claims) if record.claims is not None else len(
            pipeline.splitter.sentences(record)[0])
        calls: list[tuple[int, int]] = []  # (prompt, completion) of each call
        if config.one_call and not given:
            calls.append(((size.get("judge_answer") or split + decide) + answer + sources,
                          2 * answer + DECISION_TOKENS * claims))
        else:
            if not given:
                calls.append((split + answer, 2 * answer))
            if per_claim:
                calls += [(decide + sources + answer // max(1, claims), DECISION_TOKENS)] * claims
            else:
                calls.append((decide + sources + answer, 2 * answer + DECISION_TOKENS * claims))
        prompt = sum(int(p * ESTIMATE_MARGIN) + 3 * MESSAGE_TOKENS for p, _ in calls)
        completion = sum(c for _, c in calls)
        cost = budget.price(prompt, completion) if budget.limits.max_cost is not None else 0
        return Spend(len(calls), prompt + completion, cost or 0.0)

    return prior
