"""What every kind of model call shares (:class:`CallCore`, the base of
:class:`judge.models.client.ModelClient`): a call's identity (its id, the row that records
it), where calls go, the rule that identical calls in flight are made once, the budgets'
reservations around a call, and recording a finished call. Each kind of call (structured,
choice, embedding) builds on it; none of them imports another."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from judge.config import JudgeConfig
from judge.hashing import content_hash
from judge.models.accounting import Accounting, CallStats
from judge.models.attempts import Attempts
from judge.models.budget import Budget, Limits, Reservation, charge
from judge.models.flow import CallFlow
from judge.models.preparing import prepares_on_loop
from judge.models.prompts import RenderedPrompt
from judge.store import now

R = TypeVar("R")


class CallStore(Protocol):
    """Where calls are kept: the store, or a run's write buffer in front of it."""

    def get_call(self, call_id: str) -> dict[str, Any] | None: ...

    def save_call(self, row: dict[str, Any], attempts: Any = ()) -> None: ...


class CallCore:
    """The state and the steps every model call of a client shares. ``replay=True`` never
    calls a model."""

    def __init__(self, config: JudgeConfig, store: CallStore | None, replay: bool = False,
                 limits: Limits | None = None) -> None:
        self.config = config
        self.store = store
        self.replay = replay
        self.limits = limits or Limits()
        served = config.probe_endpoint
        self.accounting = Accounting(config.model, also=(served.model,) if served else ())
        self.flow = CallFlow(config, Budget(self.limits, self.stats, config.model),
                             prepare_on_loop=not replay
                             and prepares_on_loop(config.model, config.api_base))
        #: call ids to make again although their stored output parses (--retry-errors)
        self.refresh: set[str] = set()
        self._inflight: dict[str, asyncio.Future[Any]] = {}

    @property
    def stats(self) -> CallStats:
        """What the calls of this client used (:class:`~judge.models.accounting.CallStats`)."""
        return self.accounting.stats

    @property
    def answered_as(self) -> dict[str, str]:
        """Call id -> the model the provider said answered it (calls made or served here)."""
        return self.accounting.answered_as

    @property
    def stopped(self) -> str | None:
        """Why the run stopped (every later call raises RunStopped), None while it runs."""
        return self.flow.stopped

    # -- identity -----------------------------------------------------------------------

    def endpoint(self) -> dict[str, Any]:
        """Where calls go and how (operational: not part of a call's identity). The provider
        SDK and litellm never retry on their own: this client is the one retry layer."""
        extra: dict[str, Any] = {"num_retries": 0}
        if self.config.api_base:
            extra["api_base"] = self.config.api_base
        return extra

    def _call_id(
        self, prompt: RenderedPrompt, schema: dict[str, Any], params: dict[str, Any],
        model: str | None = None,
    ) -> str:
        """The call's id: a hash of everything that determines it (``model``: the model
        asked, when it is not the config's: a probe endpoint's)."""
        return (
            "call-"
            + content_hash(
                {
                    "model": model or self.config.model,
                    "messages": prompt.messages,
                    "params": params,
                    "schema": schema,
                    "schema_version": self.config.schema_version,
                }
            )[:24]
        )

    def _row(
        self,
        prompt: RenderedPrompt,
        schema: dict[str, Any],
        call_id: str,
        purpose: str,
        run_id: str | None,
        params: dict[str, Any],
        model: str | None = None,
    ) -> dict[str, Any]:
        return {
            "id": call_id,
            "purpose": purpose,
            "template": prompt.name,
            "template_version": prompt.version,
            "template_sha256": prompt.sha256,
            "model_sent": model or self.config.model,
            "params": params,
            "messages": prompt.messages,
            "response_schema": schema,
            "run_id": run_id,
        }

    # -- shared -------------------------------------------------------------------------

    async def _once(
        self, call_id: str, make: Callable[[Reservation], Awaitable[R]],
        prompt: RenderedPrompt | None = None, completion: int = 0, reasks: int = 0,
    ) -> R:
        """Make a call, unless the identical call is in flight: then wait for its result.
        The call's share of the budgets is reserved before it is sent and released after it
        (its real use is accounted by then)."""
        pending = self._inflight.get(call_id)
        if pending is not None:
            self.stats.merged += 1
            return await asyncio.shield(pending)  # type: ignore[no-any-return,unused-ignore]
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inflight[call_id] = future
        try:
            async with self.flow.slots:
                held = await self.flow.reserve(prompt, completion, reasks)
                try:
                    result = await make(held)
                finally:
                    self.flow.release(held)
                self.refresh.discard(call_id)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, no "never retrieved" warning
            raise
        else:
            future.set_result(result)
            return result
        finally:
            del self._inflight[call_id]

    def stop_reason(self) -> str | None:
        """Why the run stopped, with a budget's final numbers."""
        return self.flow.stop_reason()

    def _finish(self, row: dict[str, Any], attempts: Attempts, latency_ms: float,
                parsed: dict[str, Any] | None, error: str | None) -> None:
        """Record a call made: its output (``None``: it gave none) or its error, latency and
        tries; account for it, and stop the run when the provider keeps failing."""
        row.update({"parsed": parsed, "error": error, "latency_ms": round(latency_ms, 1),
                    "attempts": max(1, len(attempts.rows)), "created_at": now()})
        self.accounting.made(row, len(attempts.rows), ok=parsed is not None)
        used = (row.get("prompt_tokens") or 0) + (row.get("completion_tokens") or 0)
        charge(used, row.get("cost") or 0.0)  # against the answer being judged
        self.flow.settle(row["id"], used)
        if self.store:
            self.store.save_call(row, attempts.rows)
        self.flow.check_breaker(row.get("error"))

    def answered_by_other(self, call_ids: list[str]) -> list[str]:
        """The models other than the pinned one that answered any of these calls."""
        return self.accounting.answered_by_other(call_ids)
