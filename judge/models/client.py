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
from dataclasses import dataclass, field  # noqa: E402
from functools import cache  # noqa: E402
from typing import Any, NoReturn, Protocol, TypeVar  # noqa: E402

from pydantic import BaseModel, ValidationError  # noqa: E402

from judge.config import JudgeConfig  # noqa: E402
from judge.errors import JudgeError  # noqa: E402
from judge.hashing import content_hash  # noqa: E402
from judge.models.attempts import Attempts, backoff, is_transient, retry_after, root_message  # noqa: E402
from judge.models.budget import Budget, BudgetSpent, Limits, Reservation, prompt_estimate  # noqa: E402
from judge.models.choices import CHOICE_TOP_LOGPROBS, option_logprobs, stored_scores  # noqa: E402
from judge.models.embedded import ModelUnavailable, model_unavailable  # noqa: E402
from judge.models.embedding import EmbeddingCalls  # noqa: E402
from judge.models.identity import same_model  # noqa: E402
from judge.models.prompts import RenderedPrompt  # noqa: E402
from judge.models.providers import ensure_registered, provider_for  # noqa: E402
from judge.models.ratelimit import RateLimiter  # noqa: E402
from judge.store import now  # noqa: E402
from judge.text import estimate_tokens  # noqa: E402

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class CallFailed(RuntimeError):
    """A model call that produced no valid output (after bounded retries)."""

    def __init__(self, message: str, call_id: str) -> None:
        super().__init__(message)
        self.call_id = call_id


class ReplayMiss(RuntimeError):
    """Replay needed a model output that is not in the store."""


class RunStopped(JudgeError, RuntimeError):
    """The run must stop now (the provider keeps failing, or a budget is spent). Raised out of
    the pipeline, never turned into a verdict: what was not finished is judged on resume.
    ``summary`` is the stopped run's summary and ``results`` what finished, once the runner
    has recorded them (:func:`judge.judge_answers` raises it so)."""

    def __init__(self, message: str, summary: Any = None, results: Any = None) -> None:
        super().__init__(message)
        self.summary = summary
        self.results = results


class CallStore(Protocol):
    """Where calls are kept: the store, or a run's write buffer in front of it."""

    def get_call(self, call_id: str) -> dict[str, Any] | None: ...

    def save_call(self, row: dict[str, Any], attempts: Any = ()) -> None: ...


@dataclass
class CallStats:
    made: int = 0
    cached: int = 0
    failed: int = 0
    #: HTTP requests sent (a call that was retried or re-asked counts each try)
    attempts: int = 0
    #: identical calls that waited for one already in flight instead of calling again
    merged: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    model_mismatch: set[str] = field(default_factory=set)


@cache
def response_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A response model's JSON schema (built once per model)."""
    return model.model_json_schema()


def _remember_checked_models() -> None:
    """instructor checks every response model for async validators on every call (walking all
    its members, several times per call); a class that passed once passes again, so the check
    runs once per class. Same result, applied process-wide, once."""
    from instructor.v2.validation import async_validators

    original = async_validators.reject_async_validators
    if getattr(original, "_claim_judge_memo", False):
        return
    passed: set[type] = set()

    def reject_async_validators(response_model: Any) -> None:
        if isinstance(response_model, type) and response_model in passed:
            return
        original(response_model)
        if isinstance(response_model, type):
            passed.add(response_model)

    reject_async_validators._claim_judge_memo = True  # type: ignore[attr-defined]
    async_validators.reject_async_validators = reject_async_validators


@cache
def instructor_model(model: type[T]) -> type[T]:
    """The response model as instructor uses it (its ``ResponseSchema`` subclass), made once:
    instructor would otherwise create that class, and its JSON schema, on every call."""
    from instructor.v2.core.function_calls import response_schema as wrap

    return wrap(model)


def ensure_provider(model: str) -> None:
    """Register lazily the in-process provider a model string needs
    (:mod:`judge.models.providers`); a model that cannot exist here (the embedded one without
    its extra) is :class:`ModelUnavailable`."""
    why = model_unavailable(model)  # the embedded default without its extra
    if why:
        raise ModelUnavailable(why)
    ensure_registered(model)


def _replay_failure(stored: dict[str, Any] | None, call_id: str, purpose: str) -> NoReturn:
    """Replaying, a call not answered from the store: its stored error, else a miss."""
    if stored and stored["error"]:
        raise CallFailed(stored["error"], call_id)
    raise ReplayMiss(f"no stored output for {purpose} call {call_id}")


class ModelClient(EmbeddingCalls):
    """Model calls with a store-backed cache. ``replay=True`` never calls a model."""

    def __init__(self, config: JudgeConfig, store: CallStore | None, replay: bool = False,
                 limits: Limits | None = None) -> None:
        self.config = config
        self.store = store
        self.replay = replay
        self.limits = limits or Limits()
        self.stats = CallStats()
        #: why the run stopped (every later call raises RunStopped), None while it runs
        self.stopped: str | None = None
        #: call ids to make again although their stored output parses (--retry-errors)
        self.refresh: set[str] = set()
        #: call id -> the model the provider said answered it (calls made or served here)
        self.answered_as: dict[str, str] = {}
        self._semaphore = asyncio.Semaphore(config.calls_in_flight())
        self._rate = RateLimiter(config.rpm, config.tpm)
        self._reserved: dict[str, int] = {}  # rate-limit tokens held by a call in flight
        self._budget = Budget(self.limits, self.stats, config.model)
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        self._consecutive_failures = 0
        self._instructor: Any = None
        if not replay:
            ensure_provider(config.model)

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
                self.stats.cached += 1
                self._note_model(call_id, stored.get("model_answered"))
                return parsed, call_id
            except ValidationError:
                log.warning("stored output of %s no longer parses; calling again", call_id)
        if self.replay:
            _replay_failure(stored, call_id, purpose)
        result: tuple[T, str] = await self._once(
            call_id, lambda held: self._structured_call(prompt, response_model, schema, call_id,
                                                        purpose, run_id, held.reasks),
            prompt, self.config.max_tokens, self.config.reasks)
        return result

    def _client(self) -> Any:
        if self._instructor is None:
            import instructor
            import litellm

            litellm.suppress_debug_info = True  # it prints provider lists to stdout otherwise
            # instructor logs each failed try as an error; every try is recorded here instead
            # (call_attempts), so its log would only repeat it on stderr
            logging.getLogger("instructor").setLevel(logging.CRITICAL)
            _remember_checked_models()
            # async_client=True is what instructor detects at run time for acompletion; said
            # explicitly so the type checker picks the AsyncInstructor overload.
            self._instructor = instructor.from_litellm(
                litellm.acompletion, mode=instructor.Mode.JSON_SCHEMA, async_client=True)
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
        result, error = await self._retrying(
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
            call_id, self._rate_tokens(prompt, self.config.max_tokens),
        )
        parsed: T | None = result[0] if result is not None else None
        latency = (time.perf_counter() - started) * 1000
        row.update(self._describe(attempts.responses))
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
            self.stats.cached += 1
            self._note_model(call_id, stored.get("model_answered") if stored else None)
            return scores, call_id
        if self.replay:
            _replay_failure(stored, call_id, purpose)
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
        response, error = await self._retrying(send, call_id, self._rate_tokens(prompt, 1))
        row.update(self._describe(attempts.responses))
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
            async with self._semaphore:
                held = self._check_limits(prompt, completion, reasks)
                try:
                    result = await make(held)
                finally:
                    self._budget.release(held)
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

    def _stop(self, reason: str) -> RunStopped:
        self.stopped = self.stopped or reason
        return RunStopped(self.stopped)
    def _rate_tokens(self, prompt: RenderedPrompt, completion: int) -> int:
        """What a request counts against ``tpm``: the prompt (estimated) and its output limit."""
        if self._rate.tokens is None:
            return 0
        return sum(estimate_tokens(m["content"]) for m in prompt.messages) + completion

    def _check_limits(self, prompt: RenderedPrompt | None = None, completion: int = 0,
                      reasks: int = 0) -> Reservation:
        """Reserve a call's share of the budgets (:class:`judge.models.budget.Budget`), or
        stop the run when it does not fit."""
        if self.stopped:
            raise RunStopped(self.stopped)
        try:
            return self._budget.reserve(prompt_estimate(prompt), completion, reasks)
        except BudgetSpent as exc:
            raise self._stop(str(exc)) from None

    def stop_reason(self) -> str | None:
        """Why the run stopped, with a budget's final numbers."""
        return self._budget.message() or self.stopped

    async def _retrying(
        self, call: Callable[[], Awaitable[R]], call_id: str = "", tokens: int = 0
    ) -> tuple[R | None, str | None]:
        """(result, None) or (None, error): transient provider errors are tried again after
        a backoff, up to ``retries`` times; every other failure is returned at once. Each try
        waits for the rate limits first."""
        error = None
        transient = False
        for attempt in range(1, self.config.retries + 2):
            if self._rate.active:
                reserved = await self._rate.acquire(tokens)
                self._reserved[call_id] = self._reserved.get(call_id, 0) + reserved
            try:
                result = await call()
            except Exception as exc:  # fail closed: every failure is recorded
                error = root_message(exc)
                transient = is_transient(exc)
                if transient and attempt <= self.config.retries:
                    await asyncio.sleep(backoff(attempt, retry_after(exc),
                                                self.config.backoff_s))
                    continue
                break
            self._consecutive_failures = 0
            return result, None
        if transient:
            self._consecutive_failures += 1
        return None, error

    def _finish(self, row: dict[str, Any], attempts: Attempts, latency_ms: float,
                parsed: dict[str, Any] | None, error: str | None) -> None:
        """Record a call made: its output (``None``: it gave none) or its error, latency and
        tries; account for it, and stop the run when the provider keeps failing."""
        row.update({"parsed": parsed, "error": error, "latency_ms": round(latency_ms, 1),
                    "attempts": max(1, len(attempts.rows)), "created_at": now()})
        self._account(row, attempts, ok=parsed is not None)
        used = (row.get("prompt_tokens") or 0) + (row.get("completion_tokens") or 0)
        self._rate.settle(self._reserved.pop(row["id"], 0), used)
        if self.store:
            self.store.save_call(row, attempts.rows)
        if self._consecutive_failures >= self.config.breaker_after:
            raise self._stop(
                f"the provider failed {self._consecutive_failures} calls in a row (last: "
                f"{row.get('error')}); stopped so as not to turn a whole batch into judge "
                "errors. Run the same command again to resume when it is back."
            )

    def _describe(self, responses: list[Any]) -> dict[str, Any]:
        """The last response's output and model; tokens and cost summed over every response
        (a re-asked call pays for each)."""
        if not responses:
            return {"raw_output": None, "model_answered": None, "finish_reason": None}
        response = responses[-1]
        choice = response.choices[0] if getattr(response, "choices", None) else None
        prompt_tokens = completion_tokens = 0
        costs: list[float | None] = []
        import litellm

        for each in responses:
            usage = getattr(each, "usage", None)
            prompt_tokens += getattr(usage, "prompt_tokens", None) or 0
            completion_tokens += getattr(usage, "completion_tokens", None) or 0
            # litellm prices every response it returns (in its hidden params): used as is
            known = (getattr(each, "_hidden_params", None) or {}).get("response_cost")
            if known is not None:
                costs.append(float(known))
                continue
            try:
                costs.append(float(litellm.completion_cost(completion_response=each)))
            except Exception:  # unknown models have no price; cost stays unknown
                costs.append(None)
        cost = None if None in costs else sum(c for c in costs if c is not None)
        return {
            "raw_output": getattr(getattr(choice, "message", None), "content", None),
            "model_answered": getattr(response, "model", None),
            "system_fingerprint": getattr(response, "system_fingerprint", None),
            "finish_reason": getattr(choice, "finish_reason", None),
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "cost": cost,
        }

    def _account(self, row: dict[str, Any], attempts: Attempts, ok: bool) -> None:
        self.stats.made += 1
        self.stats.attempts += max(1, len(attempts.rows))
        self.stats.failed += 0 if ok else 1
        self.stats.prompt_tokens += row.get("prompt_tokens") or 0
        self.stats.completion_tokens += row.get("completion_tokens") or 0
        self.stats.cost += row.get("cost") or 0.0
        self._note_model(row["id"], row.get("model_answered"))

    def _note_model(self, call_id: str, answered: str | None) -> None:
        if not answered:
            return
        self.answered_as[call_id] = answered
        if not same_model(answered, self.config.model):
            if answered not in self.stats.model_mismatch:
                log.warning(
                    "provider answered with model %r, pinned %r", answered, self.config.model
                )
            self.stats.model_mismatch.add(answered)

    def answered_by_other(self, call_ids: list[str]) -> list[str]:
        """The models other than the pinned one that answered any of these calls."""
        return sorted({self.answered_as[c] for c in call_ids if c in self.answered_as
                       and not same_model(self.answered_as[c], self.config.model)})
