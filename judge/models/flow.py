"""What lets a model call go, and what stops a run: at most ``call_concurrency`` calls in
flight, each reserving its share of the budgets (:mod:`judge.models.budget`) before it is
sent; every HTTP attempt waiting for the provider's rate limits (:mod:`judge.models.ratelimit`);
transient failures tried again after a backoff, at most ``retries`` times; and the breaker,
which stops the run after ``breaker_after`` consecutive calls that failed at the provider, or at
once when the provider has answered no call yet and the first fails for a cause trying again
will not mend (the key refused, the model unknown, the endpoint unreachable:
:func:`~judge.models.attempts.setup_failure`). Once the run is stopped (the breaker, the
setup, or a budget spent), every later call raises :class:`~judge.models.failures.RunStopped`
at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from judge.config.operations import OperationalSettings
from judge.models.attempts import (
    backoff,
    is_transient,
    provider_refusal,
    retry_after,
    root_message,
    setup_failure,
)
from judge.models.budget import (
    Budget,
    BudgetSpent,
    BudgetTooSmall,
    Reservation,
    prompt_estimate,
)
from judge.models.failures import RunStopped
from judge.models.preparing import on_loop
from judge.models.prompts import RenderedPrompt
from judge.models.ratelimit import RateLimiter
from judge.text import estimate_tokens

R = TypeVar("R")


class CallFlow:
    """The flow control of one client, by its operational ``settings`` and ``budget``."""

    def __init__(self, settings: OperationalSettings, budget: Budget,
                 prepare_on_loop: bool = False) -> None:
        self.settings = settings
        self.budget = budget
        #: each attempt's request is built on the event loop's thread
        #: (:mod:`judge.models.preparing`)
        self.prepare_on_loop = prepare_on_loop
        self.slots = asyncio.Semaphore(settings.calls_in_flight())
        self.rate = RateLimiter(settings.rpm, settings.tpm)
        self._reserved: dict[str, int] = {}  # rate-limit tokens held by a call in flight
        self.consecutive_failures = 0
        #: why the run stopped (every later call raises RunStopped), None while it runs
        self.stopped: str | None = None
        #: the run stopped because a budget is smaller than one call
        self.usage_error = False
        self._settled: asyncio.Event | None = None  # set when a call in flight settles
        #: whether the provider has answered any call of this run
        self.answered = False
        #: the exit code of the first calls' failure when it is one of the setup
        #: (:func:`~judge.models.attempts.setup_failure`): 64 config, 1 unreachable
        self.setup_exit: int | None = None
        self._setup_error: int | None = None
        self._setup_why: str | None = None  # the refusal in words (provider_refusal)

    def stop(self, reason: str) -> RunStopped:
        self.stopped = self.stopped or reason
        return RunStopped(self.stopped)

    def stop_reason(self) -> str | None:
        """Why the run stopped, with a budget's final numbers."""
        return self.budget.message() or self.stopped

    async def reserve(self, prompt: RenderedPrompt | None = None, completion: int = 0,
                      reasks: int = 0) -> Reservation:
        """Reserve a call's share of the budgets (:class:`judge.models.budget.Budget`); when
        it does not fit, wait for a call in flight to settle and try again; stop the run when
        none is in flight (``usage_error`` when the budget is smaller than the first call)."""
        while True:
            if self.stopped:
                raise RunStopped(self.stopped)
            try:
                return self.budget.reserve(prompt_estimate(prompt), completion, reasks)
            except BudgetTooSmall as exc:
                self.usage_error = True
                raise self.stop(str(exc)) from None
            except BudgetSpent as exc:
                if not self.budget.in_flight():
                    raise self.stop(str(exc)) from None
                self.budget.retract()
                if self._settled is None:
                    self._settled = asyncio.Event()
                await self._settled.wait()

    def release(self, reservation: Reservation) -> None:
        self.budget.release(reservation)
        if self._settled is not None:  # the calls waiting for room try again
            self._settled.set()
            self._settled = None

    def rate_tokens(self, prompt: RenderedPrompt, completion: int) -> int:
        """What a request counts against ``tpm``: the prompt (estimated) and its output limit."""
        if self.rate.tokens is None:
            return 0
        return sum(estimate_tokens(m["content"]) for m in prompt.messages) + completion

    async def retrying(
        self, call: Callable[[], Awaitable[R]], call_id: str = "", tokens: int = 0
    ) -> tuple[R | None, str | None]:
        """(result, None) or (None, error): transient provider errors are tried again after
        a backoff, up to ``retries`` times; every other failure is returned at once. Each try
        waits for the rate limits first."""
        error = None
        transient = False
        for attempt in range(1, self.settings.retries + 2):
            if self.rate.active:
                reserved = await self.rate.acquire(tokens)
                self._reserved[call_id] = self._reserved.get(call_id, 0) + reserved
            try:
                with on_loop(self.prepare_on_loop):
                    result = await call()
            except Exception as exc:  # fail closed: every failure is recorded
                error = root_message(exc)
                transient = is_transient(exc)
                self._setup_error = None if self.answered else setup_failure(exc)
                self._setup_why = provider_refusal(exc) if self._setup_error else None
                if transient and attempt <= self.settings.retries:
                    await asyncio.sleep(backoff(attempt, retry_after(exc),
                                                self.settings.backoff_s))
                    continue
                break
            self.consecutive_failures = 0
            self.answered = True
            self._setup_error = None
            return result, None
        if transient:
            self.consecutive_failures += 1
        return None, error

    def settle(self, call_id: str, used: int) -> None:
        """A call's answer is in: the rate-limit tokens it held, against what it used."""
        self.rate.settle(self._reserved.pop(call_id, 0), used)

    def check_breaker(self, last_error: str | None) -> None:
        """Stop the run when the provider has failed ``breaker_after`` calls in a row, or
        when its first answer is a failure of the setup (nothing judged would succeed)."""
        if self._setup_error is not None and not self.answered:
            self.setup_exit = self._setup_error
            raise self.stop(
                "the first model call failed and trying again will not help "
                f"({self._setup_why or last_error}); "
                "fix the setup (`judge doctor` checks it) and run the same command again")
        if self.consecutive_failures >= self.settings.breaker_after:
            raise self.stop(
                f"the provider failed {self.consecutive_failures} calls in a row (last: "
                f"{last_error}); stopped so as not to turn a whole batch into judge "
                "errors. Run the same command again to resume when it is back."
            )
