"""Model access: every call goes through litellm, structured output through instructor.

Each logical call is keyed by a hash of everything that determines it (model, messages,
sampling parameters, output schema). A successful call is stored whole and served from
the store the next time, so re-running a batch with the same judge version makes zero
model calls, and ``replay`` re-derives verdicts from stored outputs alone.
Failures are stored too (with the error) and surface as ``CallFailed``: the pipeline
turns them into ``judge_error`` verdicts. Nothing fails open.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any, TypeVar  # noqa: E402

from pydantic import BaseModel, ValidationError  # noqa: E402

from judge.config import JudgeConfig, short_model_name  # noqa: E402
from judge.hashing import content_hash
from judge.models.prompts import RenderedPrompt
from judge.store import Store
from judge.store.base import now

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

#: Transient provider errors worth a backoff and another try.
_TRANSIENT = (
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "ServiceUnavailableError",
    "InternalServerError",
    "APITimeoutError",
)


#: How many alternatives a choice call asks for (OpenAI's maximum).
CHOICE_TOP_LOGPROBS = 20
#: A choice answer must put at least this much probability on the option letters.
CHOICE_MIN_MASS = 0.5


def _get(obj: Any, name: str) -> Any:
    """A field of a provider response part: litellm objects, or plain dicts."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def option_logprobs(response: Any, options: dict[str, str]) -> dict[str, float]:
    """Log-probabilities of the option letters in the first generated token's top
    alternatives (leading spaces ignored; the best spelling of a letter counts). A letter
    missing from the top list gets the smallest listed log-probability (an upper bound)."""
    choices = _get(response, "choices") or []
    logprobs = _get(choices[0], "logprobs") if choices else None
    content = _get(logprobs, "content") if logprobs is not None else None
    if not content:
        raise ValueError(
            "the provider returned no log-probabilities; the 'scores' strategy needs a model "
            "that reports top_logprobs (use strategy 'batch' or 'per_claim' otherwise)"
        )
    top = [(str(_get(alt, "token") or ""), _get(alt, "logprob"))
           for alt in _get(content[0], "top_logprobs") or []]
    top = [(token, float(value)) for token, value in top if value is not None]
    seen: dict[str, float] = {}
    for token, value in top:
        key = token.strip().upper()
        if key in options:
            seen[key] = max(seen.get(key, -math.inf), value)
    if not seen:
        raise ValueError(f"the model answered none of the options {sorted(options)}")
    floor = min(value for _, value in top)
    mass = sum(math.exp(v) for v in seen.values())
    if mass < CHOICE_MIN_MASS:
        raise ValueError(
            f"the model put only {mass:.2f} of its probability on the option letters"
        )
    return {value: round(seen.get(letter, floor), 6) for letter, value in options.items()}


def _stored_scores(
    stored: dict[str, Any] | None, options: dict[str, str]
) -> dict[str, float] | None:
    if not stored or stored["error"] is not None or not stored.get("parsed"):
        return None
    parsed = stored["parsed"]
    try:
        scores = (json.loads(parsed) if isinstance(parsed, str) else parsed).get("logprobs")
    except (ValueError, AttributeError):
        return None
    if not isinstance(scores, dict) or set(scores) != set(options.values()):
        return None
    return {k: float(v) for k, v in scores.items()}


class CallFailed(RuntimeError):
    """A model call that produced no valid structured output (after bounded retries)."""

    def __init__(self, message: str, call_id: str) -> None:
        super().__init__(message)
        self.call_id = call_id


class ReplayMiss(RuntimeError):
    """Replay needed a model output that is not in the store."""


@dataclass
class CallStats:
    made: int = 0
    cached: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    model_mismatch: set[str] = field(default_factory=set)


def _is_transient(exc: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if type(cur).__name__ in _TRANSIENT:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _root_message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 2000 else text[:2000] + "…"


def ensure_provider(model: str) -> None:
    """Register lazily the local providers a model string needs."""
    if model.startswith("embedded/"):
        from judge.models.embedded import register

        register()


class ModelClient:
    """Structured model calls with a store-backed cache. ``replay=True`` never calls a model."""

    def __init__(self, config: JudgeConfig, store: Store | None, replay: bool = False) -> None:
        self.config = config
        self.store = store
        self.replay = replay
        self.stats = CallStats()
        self._semaphore = asyncio.Semaphore(config.concurrency)
        if not replay:
            ensure_provider(config.model)

    def params(self) -> dict[str, Any]:
        return {
            "temperature": self.config.temperature,
            "seed": self.config.seed,
            "max_tokens": self.config.max_tokens,
        }

    def endpoint(self) -> dict[str, Any]:
        """Where calls go (operational: not part of a call's identity)."""
        return {"api_base": self.config.api_base} if self.config.api_base else {}

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

    async def structured(
        self, prompt: RenderedPrompt, response_model: type[T], purpose: str, run_id: str | None
    ) -> tuple[T, str]:
        """Return (parsed output, call id); raise CallFailed when no valid output exists."""
        schema = response_model.model_json_schema()
        call_id = self.call_id(prompt, schema)
        stored = self.store.get_call(call_id) if self.store else None
        if stored and stored["error"] is None and stored["raw_output"] is not None:
            try:
                parsed = response_model.model_validate_json(stored["raw_output"])
                self.stats.cached += 1
                return parsed, call_id
            except ValidationError:
                log.warning("stored output of %s no longer parses; calling again", call_id)
        if self.replay:
            if stored and stored["error"]:
                raise CallFailed(stored["error"], call_id)
            raise ReplayMiss(f"no stored output for {purpose} call {call_id}")
        async with self._semaphore:
            return await self._call(prompt, response_model, schema, call_id, purpose, run_id)

    async def _call(
        self,
        prompt: RenderedPrompt,
        response_model: type[T],
        schema: dict[str, Any],
        call_id: str,
        purpose: str,
        run_id: str | None,
    ) -> tuple[T, str]:
        import instructor
        import litellm

        litellm.suppress_debug_info = True  # it prints provider lists to stdout otherwise
        attempts: list[dict[str, Any]] = []
        # async_client=True is what instructor detects at run time for acompletion; said
        # explicitly so the type checker picks the AsyncInstructor overload.
        client = instructor.from_litellm(
            litellm.acompletion, mode=instructor.Mode.JSON_SCHEMA, async_client=True
        )
        client.on("completion:response", lambda resp: attempts.append({"response": resp}))
        client.on(
            "parse:error", lambda err, **_: attempts.append({"parse_error": _root_message(err)})
        )
        row = self._row(prompt, schema, call_id, purpose, run_id, self.params())
        started = time.perf_counter()
        result, error = await self._retrying(
            lambda: client.create_with_completion(
                model=self.config.model,
                # plain {"role", "content"} dicts: what OpenAI's message TypedDicts are at run time
                messages=prompt.messages,  # type: ignore[arg-type]
                response_model=response_model,
                max_retries=self.config.retries + 1,
                timeout=self.config.timeout_s,
                **self.params(),
                **self.endpoint(),
            )
        )
        parsed: T | None = result[0] if result is not None else None
        latency = (time.perf_counter() - started) * 1000
        responses = [a["response"] for a in attempts if "response" in a]
        parse_errors = [a["parse_error"] for a in attempts if "parse_error" in a]
        row.update(self._describe(responses[-1] if responses else None))
        if row.get("finish_reason") == "length":
            parsed = None
            error = "truncated output (finish_reason=length); raise max_tokens or shorten input"
        if error and parse_errors:
            error = f"{error} | parse errors: {json.dumps(parse_errors, ensure_ascii=False)}"
        row.update(
            {
                "parsed": parsed.model_dump(mode="json") if parsed is not None else None,
                "error": error,
                "latency_ms": round(latency, 1),
                "attempts": max(1, len(responses)),
                "created_at": now(),
            }
        )
        self._account(row, ok=parsed is not None)
        if self.store:
            self.store.save_call(row)
        if parsed is None:
            raise CallFailed(error or "no output", call_id)
        return parsed, call_id

    # -- choice calls: one forward pass, the option letters' log-probabilities -------------

    def choice_params(self) -> dict[str, Any]:
        return {
            "temperature": self.config.temperature,
            "seed": self.config.seed,
            "max_tokens": 1,
            "logprobs": True,
            "top_logprobs": CHOICE_TOP_LOGPROBS,
        }

    async def choice(
        self, prompt: RenderedPrompt, options: dict[str, str], purpose: str, run_id: str | None
    ) -> tuple[dict[str, float], str]:
        """Ask for one option letter and return (option value → log-probability, call id).

        ``options`` maps letters to values (``{"A": "supported", ...}``). The model writes
        one token; its top log-probabilities are the scores, so the program (not the
        model's argmax) decides. A provider without log-probabilities, or an answer that
        puts almost no probability on the letters, fails closed (``CallFailed``)."""
        schema = {"choice": options, "top_logprobs": CHOICE_TOP_LOGPROBS}
        call_id = self._call_id(prompt, schema, self.choice_params())
        stored = self.store.get_call(call_id) if self.store else None
        scores = _stored_scores(stored, options)
        if scores is not None:
            self.stats.cached += 1
            return scores, call_id
        if self.replay:
            if stored and stored["error"]:
                raise CallFailed(stored["error"], call_id)
            raise ReplayMiss(f"no stored output for {purpose} call {call_id}")
        async with self._semaphore:
            return await self._choice_call(prompt, options, schema, call_id, purpose, run_id)

    async def _choice_call(
        self,
        prompt: RenderedPrompt,
        options: dict[str, str],
        schema: dict[str, Any],
        call_id: str,
        purpose: str,
        run_id: str | None,
    ) -> tuple[dict[str, float], str]:
        import litellm

        litellm.suppress_debug_info = True
        row = self._row(prompt, schema, call_id, purpose, run_id, self.choice_params())
        started = time.perf_counter()
        scores = None
        response, error = await self._retrying(
            lambda: litellm.acompletion(
                model=self.config.model,
                messages=prompt.messages,
                timeout=self.config.timeout_s,
                **self.choice_params(),
                **self.endpoint(),
            )
        )
        row.update(self._describe(response))
        if response is not None:
            try:
                scores = option_logprobs(response, options)
            except ValueError as exc:
                error = str(exc)
        row.update(
            {
                "parsed": {"logprobs": scores} if scores is not None else None,
                "error": error,
                "latency_ms": round((time.perf_counter() - started) * 1000, 1),
                "attempts": 1,
                "created_at": now(),
            }
        )
        self._account(row, ok=scores is not None)
        if self.store:
            self.store.save_call(row)
        if scores is None:
            raise CallFailed(error or "no output", call_id)
        return scores, call_id

    async def _retrying(self, call: Callable[[], Awaitable[R]]) -> tuple[R | None, str | None]:
        """(result, None) or (None, error): transient provider errors are retried with
        backoff, up to ``retries`` times; every other failure is returned at once."""
        error = None
        for network_try in range(self.config.retries + 1):
            try:
                return await call(), None
            except Exception as exc:  # fail closed: every failure is recorded
                error = _root_message(exc)
                if _is_transient(exc) and network_try < self.config.retries:
                    await asyncio.sleep(min(30.0, 2.0 * 2**network_try))
                    continue
                break
        return None, error

    def _describe(self, response: Any) -> dict[str, Any]:
        if response is None:
            return {"raw_output": None, "model_answered": None, "finish_reason": None}
        choice = response.choices[0] if getattr(response, "choices", None) else None
        usage = getattr(response, "usage", None)
        cost = None
        try:
            import litellm

            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unknown models have no price; cost stays unknown
            cost = None
        return {
            "raw_output": getattr(getattr(choice, "message", None), "content", None),
            "model_answered": getattr(response, "model", None),
            "system_fingerprint": getattr(response, "system_fingerprint", None),
            "finish_reason": getattr(choice, "finish_reason", None),
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
            "cost": cost,
        }

    def _account(self, row: dict[str, Any], ok: bool) -> None:
        self.stats.made += 1
        self.stats.failed += 0 if ok else 1
        self.stats.prompt_tokens += row.get("prompt_tokens") or 0
        self.stats.completion_tokens += row.get("completion_tokens") or 0
        self.stats.cost += row.get("cost") or 0.0
        answered = row.get("model_answered")
        if answered and short_model_name(answered) != short_model_name(self.config.model):
            if answered not in self.stats.model_mismatch:
                log.warning(
                    "provider answered with model %r, pinned %r", answered, self.config.model
                )
            self.stats.model_mismatch.add(answered)
