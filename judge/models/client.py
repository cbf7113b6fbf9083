"""Model access: every call goes through litellm, structured output through instructor.

Each logical call is keyed by a hash of everything that determines it (model, messages,
sampling parameters, output schema). A successful call is stored whole and served from the
store the next time, so re-running a batch with the same judge version makes zero model
calls, and replay re-derives verdicts from stored outputs alone. Failures are stored too (with
the error) and surface as :class:`CallFailed`: the pipeline turns them into ``judge_error``
verdicts. Nothing fails open.

One retry layer, this one: litellm and the provider SDK are told not to retry. A transient
failure (a 5xx, a 429 — honouring ``Retry-After`` —, a timeout, a lost connection) is tried
again after a capped exponential backoff with jitter, at most ``retries`` times; an output
that does not parse is asked again (with the validation error) at most ``reasks`` times.
Every HTTP attempt is recorded (status, latency, error) and counted. After
``breaker_after`` consecutive calls that failed at the provider, or when a budget
(calls, tokens, cost) is spent, the client raises :class:`RunStopped`: the run stops cleanly,
nothing of the unfinished answer is stored, and running the same command again resumes.

Identical calls in flight at the same time are made once (the others wait for its answer).
Once a run is stopped, every later call of the client raises :class:`RunStopped` at once.
Calls named in ``refresh`` (``judge run --retry-errors``: the calls behind stored
``judge_error`` verdicts) are made again even when their stored output parses; the stored row
they replace is kept by the store.
At most ``call_concurrency`` calls are in flight at once (the runner bounds answers in flight
with ``concurrency`` separately), and every HTTP attempt waits for the provider's rate limits
(``rpm`` / ``tpm``, :mod:`judge.models.ratelimit`).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from typing import Any, Protocol, TypeVar  # noqa: E402

from pydantic import BaseModel, ValidationError  # noqa: E402

from judge.config import JudgeConfig  # noqa: E402
from judge.hashing import content_hash  # noqa: E402
from judge.models.accounting import Accounting, CallStats, describe  # noqa: E402
from judge.models.attempts import Attempts  # noqa: E402
from judge.models.budget import Budget, Limits, Reservation  # noqa: E402
from judge.models.choices import CHOICE_TOP_LOGPROBS, option_logprobs, stored_scores  # noqa: E402
from judge.models.embedded import ModelUnavailable, model_unavailable  # noqa: E402
from judge.models.embedding import EmbeddingCalls  # noqa: E402
from judge.models.failures import CallFailed, ReplayMiss, RunStopped, replay_failure  # noqa: E402
from judge.models.flow import CallFlow  # noqa: E402
from judge.models.prompts import RenderedPrompt  # noqa: E402
from judge.models.providers import ensure_registered, provider_for  # noqa: E402
from judge.models.structured import instructor_client, instructor_model, response_schema  # noqa: E402
from judge.store import now  # noqa: E402

__all__ = [
    "CallFailed", "CallStats", "CallStore", "Limits", "ModelClient", "ModelUnavailable",
    "ReplayMiss", "RunStopped", "ensure_provider", "instructor_model", "response_schema",
]

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class CallStore(Protocol):
    """Where calls are kept: the store, or a run's write buffer in front of it."""

    def get_call(self, call_id: str) -> dict[str, Any] | None: ...

    def save_call(self, row: dict[str, Any], attempts: Any = ()) -> None: ...


def ensure_provider(model: str) -> None:
    """Register lazily the in-process provider a model string needs
    (:mod:`judge.models.providers`); a model that cannot exist here (the embedded one without
    its extra) is :class:`ModelUnavailable`."""
    why = model_unavailable(model)  # the embedded default without its extra
    if why:
        raise ModelUnavailable(why)
    ensure_registered(model)


class ModelClient(EmbeddingCalls):
    """Model calls with a store-backed cache. ``replay=True`` never calls a model.

    The client makes and keys the calls; it composes what is not its own: the flow control
    (:class:`~judge.models.flow.CallFlow`: calls in flight, budgets, rate limits, retries,
    the breaker), the accounting (:class:`~judge.models.accounting.Accounting`) and the
    instructor client (:mod:`judge.models.structured`)."""

    def __init__(self, config: JudgeConfig, store: CallStore | None, replay: bool = False,
                 limits: Limits | None = None) -> None:
        self.config = config
        self.store = store
        self.replay = replay
        self.limits = limits or Limits()
        self.accounting = Accounting(config.model)
        self.flow = CallFlow(config, Budget(self.limits, self.stats, config.model))
        #: call ids to make again although their stored output parses (--retry-errors)
        self.refresh: set[str] = set()
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        self._instructor: Any = None
        if not replay:
            ensure_provider(config.model)

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

    def params(self) -> dict[str, Any]:
        return {
            "temperature": self.config.temperature,
            "seed": self.config.seed,
            "max_tokens": self.config.max_tokens,
        }

    def choice_params(self, shared_prefix: bool = False) -> dict[str, Any]:
        """``shared_prefix``: the prompt shares its excerpts with the other claims of its
        answer; the embedded runtime then reuses their KV cache (judge.models.shared_prefix),
        which changes the numbers slightly, so it is part of the call's identity. Other
        providers are not told (their prompt caching needs nothing from us)."""
        params: dict[str, Any] = {
            "temperature": self.config.temperature,
            "seed": self.config.seed,
            "max_tokens": 1,
            "logprobs": True,
            "top_logprobs": CHOICE_TOP_LOGPROBS,
        }
        provider = provider_for(self.config.model)
        if shared_prefix and provider is not None and provider.shared_prefix:
            params["shared_prefix"] = True
        return params

    def endpoint(self) -> dict[str, Any]:
        """Where calls go and how (operational: not part of a call's identity). The provider
        SDK and litellm never retry on their own: this client is the one retry layer."""
        extra: dict[str, Any] = {"num_retries": 0}
        if self.config.api_base:
            extra["api_base"] = self.config.api_base
        return extra

    def call_id(self, prompt: RenderedPrompt, schema: dict[str, Any]) -> str:
        return self._call_id(prompt, schema, self.params())

    def _call_id(
        self, prompt: RenderedPrompt, schema: dict[str, Any], params: dict[str, Any]
    ) -> str:
        return (
            "call-"
            + content_hash(
                {
                    "model": self.config.model,
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
    ) -> dict[str, Any]:
        return {
            "id": call_id,
            "purpose": purpose,
            "template": prompt.name,
            "template_version": prompt.version,
            "template_sha256": prompt.sha256,
            "model_sent": self.config.model,
            "params": params,
            "messages": prompt.messages,
            "response_schema": schema,
            "run_id": run_id,
        }

    # -- structured calls ---------------------------------------------------------------

    async def structured(
        self, prompt: RenderedPrompt, response_model: type[T], purpose: str, run_id: str | None
    ) -> tuple[T, str]:
        """Return (parsed output, call id); raise CallFailed when no valid output exists."""
        schema = response_schema(response_model)
        call_id = self.call_id(prompt, schema)
        stored = self.store.get_call(call_id) if self.store else None
        if (stored and stored["error"] is None and stored["raw_output"] is not None
                and call_id not in self.refresh):
            try:
                parsed = response_model.model_validate_json(stored["raw_output"])
                self.accounting.served(call_id, stored.get("model_answered"))
                return parsed, call_id
            except ValidationError:
                log.warning("stored output of %s no longer parses; calling again", call_id)
        if self.replay:
            replay_failure(stored, call_id, purpose)
        result: tuple[T, str] = await self._once(
            call_id, lambda held: self._structured_call(prompt, response_model, schema, call_id,
                                                        purpose, run_id, held.reasks),
            prompt, self.config.max_tokens, self.config.reasks)
        return result

    def _client(self) -> Any:
        if self._instructor is None:
            self._instructor = instructor_client()
        return self._instructor

    async def _structured_call(
        self,
        prompt: RenderedPrompt,
        response_model: type[T],
        schema: dict[str, Any],
        call_id: str,
        purpose: str,
        run_id: str | None,
        reasks: int | None = None,
    ) -> tuple[T, str]:
        from instructor.core.hooks import Hooks

        client = self._client()
        attempts = Attempts(call_id, run_id)
        hooks = Hooks()
        hooks.on("completion:kwargs", attempts.start)
        hooks.on("completion:response", attempts.response)
        hooks.on("completion:error", attempts.error)
        hooks.on("parse:error", attempts.parse_error)
        row = self._row(prompt, schema, call_id, purpose, run_id, self.params())
        started = time.perf_counter()
        result, error = await self.flow.retrying(
            lambda: client.create_with_completion(
                model=self.config.model,
                # plain {"role", "content"} dicts: what OpenAI's message TypedDicts are at run time
                messages=prompt.messages,  # type: ignore[arg-type,unused-ignore]
                response_model=instructor_model(response_model),
                max_retries=self.config.reasks if reasks is None else reasks,
                hooks=hooks,
                timeout=self.config.timeout_s,
                **self.params(),
                **self.endpoint(),
            ),
            call_id, self.flow.rate_tokens(prompt, self.config.max_tokens),
        )
        parsed: T | None = result[0] if result is not None else None
        latency = (time.perf_counter() - started) * 1000
        row.update(describe(attempts.responses))
        if row.get("finish_reason") == "length":
            parsed = None
            error = "truncated output (finish_reason=length); raise max_tokens or shorten input"
        if error and attempts.parse_errors:
            error = (f"{error} | parse errors: "
                     f"{json.dumps(attempts.parse_errors, ensure_ascii=False)}")
        self._finish(row, attempts, latency,
                     parsed.model_dump(mode="json") if parsed is not None else None, error)
        if parsed is None:
            raise CallFailed(error or "no output", call_id)
        return parsed, call_id

    # -- choice calls: one forward pass, the option letters' log-probabilities -------------

    async def choice(
        self, prompt: RenderedPrompt, options: dict[str, str], purpose: str, run_id: str | None,
        shared_prefix: bool = False,
    ) -> tuple[dict[str, float], str]:
        """Ask for one option letter and return (option value → log-probability, call id).

        ``options`` maps letters to values (``{"A": "supported", ...}``). The model writes
        one token; its top log-probabilities are the scores, so the program (not the
        model's argmax) decides. A provider without log-probabilities, or an answer that
        puts almost no probability on the letters, fails closed (``CallFailed``)."""
        schema = {"choice": options, "top_logprobs": CHOICE_TOP_LOGPROBS}
        params = self.choice_params(shared_prefix)
        call_id = self._call_id(prompt, schema, params)
        stored = self.store.get_call(call_id) if self.store else None
        scores = None if call_id in self.refresh else stored_scores(stored, options)
        if scores is not None:
            self.accounting.served(call_id, stored.get("model_answered") if stored else None)
            return scores, call_id
        if self.replay:
            replay_failure(stored, call_id, purpose)
        result: tuple[dict[str, float], str] = await self._once(
            call_id,
            lambda _: self._choice_call(prompt, options, schema, call_id, purpose, run_id,
                                        params),
            prompt, 1, 0)
        return result

    async def _choice_call(
        self,
        prompt: RenderedPrompt,
        options: dict[str, str],
        schema: dict[str, Any],
        call_id: str,
        purpose: str,
        run_id: str | None,
        params: dict[str, Any],
    ) -> tuple[dict[str, float], str]:
        import litellm

        litellm.suppress_debug_info = True
        attempts = Attempts(call_id, run_id)
        row = self._row(prompt, schema, call_id, purpose, run_id, params)
        started = time.perf_counter()

        async def send() -> Any:
            return await attempts.send(lambda: litellm.acompletion(
                model=self.config.model, messages=prompt.messages,
                timeout=self.config.timeout_s, **params, **self.endpoint()))

        scores = None
        response, error = await self.flow.retrying(send, call_id, self.flow.rate_tokens(prompt, 1))
        row.update(describe(attempts.responses))
        if response is not None:
            try:
                scores = option_logprobs(response, options)
            except ValueError as exc:
                error = str(exc)
                attempts.parse_error(exc)
        self._finish(row, attempts, (time.perf_counter() - started) * 1000,
                     {"logprobs": scores} if scores is not None else None, error)
        if scores is None:
            raise CallFailed(error or "no output", call_id)
        return scores, call_id

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
        self.flow.settle(row["id"], used)
        if self.store:
            self.store.save_call(row, attempts.rows)
        self.flow.check_breaker(row.get("error"))

    def answered_by_other(self, call_ids: list[str]) -> list[str]:
        """The models other than the pinned one that answered any of these calls."""
        return self.accounting.answered_by_other(call_ids)
