"""Run budgets (calls, tokens, cost) as promises: each call reserves its share before it is
sent and releases it once its real use is accounted, so no concurrency overshoots."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judge.models.lazy_litellm import quiet_litellm
from judge.text import estimate_tokens

if TYPE_CHECKING:
    from judge.models.prompts import RenderedPrompt


@dataclass(frozen=True)
class Limits:
    """Budgets of one run (None: no limit). Calls served from the store are free.

    A budget is never exceeded, whatever the concurrency: before a call is sent its share is
    reserved (one call; its prompt's tokens, estimated generously, plus ``max_tokens`` for
    each try it may take; their price when litellm knows the model's), and after it the
    reservation is replaced by what the provider reported. A call whose reservation does
    not fit waits for the calls in flight to settle (they usually use less than they hold),
    and stops the run only when none is in flight and it still does not fit; a call is given
    fewer re-asks when only those fit. A budget smaller than the first call, before anything
    was spent, is a usage error (:class:`BudgetTooSmall`). A cost budget for a model litellm
    has no price for stops the run before its first call (the cost could not be kept). A run
    also starts an answer only when its expected cost fits (:mod:`judge.runs.budgets`)."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


#: The reservation of a re-ask beyond the prompt and the previous output: the error message.
REASK_TOKENS = 200
#: Prompt token estimates are raised by this factor and a per-message overhead, so that a
#: provider's count stays within the reservation.
ESTIMATE_MARGIN = 1.25
MESSAGE_TOKENS = 8


@dataclass
class Reservation:
    """What a call in flight holds of the budgets; ``reasks``: the re-asks it may take."""

    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    reasks: int = 0


@dataclass
class Spend:
    """What one answer's calls used (calls made, their tokens and cost), or what it is
    expected to use (:mod:`judge.runs.budgets`)."""

    calls: float = 0
    tokens: float = 0
    cost: float = 0.0

    def add(self, other: Spend) -> None:
        self.calls += other.calls
        self.tokens += other.tokens
        self.cost += other.cost


#: The answer whose calls are being made (what they spent so far), set by the run around
#: judging it; calls made outside an answer count against no answer.
ANSWER_SPEND: ContextVar[Spend | None] = ContextVar("answer_spend", default=None)


def charge(tokens: int, cost: float) -> None:
    """A call was made: count it against the answer being judged, if any."""
    spend = ANSWER_SPEND.get()
    if spend is not None:
        spend.add(Spend(1, tokens, cost))


class BudgetSpent(RuntimeError):
    """A call's reservation does not fit: the message says which budget and the numbers."""


class BudgetTooSmall(BudgetSpent):
    """The budget is smaller than one call, before anything was spent: no call can be made
    (a usage error; the message says what the call needs)."""


def prompt_estimate(prompt: RenderedPrompt | None) -> int:
    """A generous estimate of a prompt's tokens (a provider counts differently)."""
    if prompt is None:
        return 0
    chars = sum(estimate_tokens(m["content"]) for m in prompt.messages)
    return int(chars * ESTIMATE_MARGIN) + MESSAGE_TOKENS * (len(prompt.messages) + 1)


class Budget:
    """The budgets of one client: ``stats`` (its :class:`CallStats`) is what was spent, the
    reservations what the calls in flight hold."""

    def __init__(self, limits: Limits, stats: Any, model: str) -> None:
        self.limits = limits
        self.stats = stats
        self.model = model
        self.held = Reservation()
        self.stopped_by: str | None = None  # which budget stopped the run
        self.next_need = ""  # what the call that did not fit would have needed

    def reserve(self, prompt_tokens: int, completion: int, reasks: int) -> Reservation:
        limits, stats, held = self.limits, self.stats, self.held
        first = prompt_tokens + completion
        again = prompt_tokens + 2 * completion + REASK_TOKENS  # the prompt, its output, why
        tries = reasks + 1
        if limits.max_calls is not None and stats.made + held.calls + 1 > limits.max_calls:
            self.next_need = ""
            raise self._spent("calls")
        if limits.max_tokens is not None:
            room = limits.max_tokens - stats.prompt_tokens - stats.completion_tokens - held.tokens
            if first > room:
                if self._nothing_spent():
                    raise BudgetTooSmall(
                        f"--max-tokens {limits.max_tokens} is smaller than one call: the first "
                        f"call needs up to {first} tokens (its prompt, estimated generously, "
                        f"and max_tokens {completion}); raise --max-tokens to at least {first}, "
                        "or lower max_tokens in the config")
                self.next_need = f"; the next call needs up to {first}"
                raise self._spent("tokens")
            tries = min(tries, 1 + (room - first) // again)
        cost = 0.0
        if limits.max_cost is not None:
            price_first = self.price(prompt_tokens, completion)
            price_again = self.price(prompt_tokens + completion + REASK_TOKENS, completion)
            if price_first is None or price_again is None:
                raise BudgetSpent(
                    f"budget cannot be kept: litellm knows no price for model {self.model!r}, "
                    "so a cost budget (max_cost) cannot be reserved before a call; run without "
                    "a cost budget, or with a calls or tokens budget")
            room_cost = limits.max_cost - stats.cost - held.cost
            if price_first > room_cost:
                if self._nothing_spent():
                    raise BudgetTooSmall(
                        f"--max-cost {limits.max_cost} is smaller than one call: the first "
                        f"call may cost up to ${price_first:.6f}; raise --max-cost to at least "
                        f"{price_first:.6f}")
                self.next_need = f"; the next call may cost up to ${price_first:.6f}"
                raise self._spent("cost")
            if price_again > 0:
                tries = min(tries, 1 + int((room_cost - price_first) // price_again))
            cost = price_first + (tries - 1) * price_again
        reservation = Reservation(1, first + (tries - 1) * again, cost, tries - 1)
        held.calls += reservation.calls
        held.tokens += reservation.tokens
        held.cost += reservation.cost
        return reservation

    def _nothing_spent(self) -> bool:
        return self.stats.made == 0 and self.held.calls == 0

    def in_flight(self) -> bool:
        """Whether calls hold reservations (their settling may leave room)."""
        return self.held.calls > 0

    def retract(self) -> None:
        """The call that did not fit waits for the calls in flight: no budget stopped yet."""
        self.stopped_by = None
        self.next_need = ""

    def release(self, reservation: Reservation) -> None:
        self.held.calls -= reservation.calls
        self.held.tokens -= reservation.tokens
        self.held.cost -= reservation.cost

    def price(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """What litellm's price list says such a call costs (None: no price known)."""
        litellm = quiet_litellm()

        try:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=self.model, prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens)
        except Exception:
            return None
        return float(prompt_cost) + float(completion_cost)

    def _spent(self, which: str) -> BudgetSpent:
        self.stopped_by = self.stopped_by or which
        return BudgetSpent(self.message() or which)

    def message(self) -> str | None:
        """Why a budget stopped the run, with the numbers spent so far (the final numbers
        once the calls in flight are done: the run summary uses it then)."""
        which = self.stopped_by
        if which is None:
            return None
        return (f"budget spent: {self.spent(which)}{self.next_need}; what finished is stored, "
                "and running the same command again resumes")

    def spent(self, which: str) -> str:
        """What was spent of one budget (``calls``, ``tokens`` or ``cost``), with its limit."""
        limits, stats = self.limits, self.stats
        if which == "calls":
            return f"{stats.made} of {limits.max_calls} model calls (max_calls)"
        if which == "tokens":
            return (f"{stats.prompt_tokens + stats.completion_tokens} of {limits.max_tokens} "
                    "tokens (max_tokens)")
        return f"${stats.cost:.6f} of ${limits.max_cost} (max_cost)"

    def used(self, which: str) -> float:
        """What was spent of one budget, as a number."""
        stats = self.stats
        if which == "calls":
            return float(stats.made)
        if which == "tokens":
            return float(stats.prompt_tokens + stats.completion_tokens)
        return float(stats.cost)

    def limit(self, which: str) -> float | None:
        value: float | None = getattr(self.limits, f"max_{which}")
        return value
