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

import json  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402
from typing import Any, TypeVar  # noqa: E402

from pydantic import BaseModel, ValidationError  # noqa: E402

from judge.config import JudgeConfig  # noqa: E402
from judge.models.accounting import CallStats, describe  # noqa: E402
from judge.models.attempts import Attempts, root_message  # noqa: E402
from judge.models.batched import (  # noqa: E402
    ONLINE,
    BatchRequestFailed,
    Deferral,
    Outcome,
    batch_cost,
    request_body,
    response_of,
    structured_format,
)
from judge.models.budget import Limits  # noqa: E402
from judge.models.calls import CallStore  # noqa: E402
from judge.models.choices import CHOICE_TOP_LOGPROBS, option_logprobs, stored_scores  # noqa: E402
from judge.models.embedded import ModelUnavailable, model_unavailable  # noqa: E402
from judge.models.embedding import EmbeddingCalls  # noqa: E402
from judge.models.failures import CallFailed, ReplayMiss, RunStopped, replay_failure  # noqa: E402
from judge.models.label_tokens import LABEL_TOP_LOGPROBS  # noqa: E402
from judge.models.lazy_litellm import quiet_litellm  # noqa: E402
from judge.models.prompts import RenderedPrompt  # noqa: E402
from judge.models.providers import ensure_registered, provider_for  # noqa: E402
from judge.models.structured import instructor_client, instructor_model, response_schema  # noqa: E402

__all__ = [
    "CallFailed", "CallStats", "CallStore", "Limits", "ModelClient", "ModelUnavailable",
    "ReplayMiss", "RunStopped", "ensure_provider", "instructor_model", "response_schema",
]

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
#: A structured call's error when the output was cut at ``max_tokens``.
TRUNCATED = "truncated output (finish_reason=length); raise max_tokens or shorten input"


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
    instructor client (:mod:`judge.models.structured`). What every kind of call shares is
    :class:`~judge.models.calls.CallCore`'s; the embedding calls are
    :class:`~judge.models.embedding.EmbeddingCalls`'."""

    def __init__(self, config: JudgeConfig, store: CallStore | None, replay: bool = False,
                 limits: Limits | None = None) -> None:
        super().__init__(config, store, replay, limits)
        self._instructor: Any = None
        #: batch mode (``judge run --batch-api`` / ``--batch-file``): calls not stored go to
        #: this queue instead of online (:mod:`judge.models.batched`)
        self.deferred: Deferral | None = None
        if not replay:
            ensure_provider(config.model)

    # -- identity -----------------------------------------------------------------------

    def params(self, logprobs: bool = False) -> dict[str, Any]:
        """A structured call's parameters, part of its identity. ``reuse_instructions`` with
        a provider that keeps a KV cache adds ``shared_prefix = "instructions"``: the runtime
        evaluates the call on top of its prompt's fixed instructions
        (judge.models.shared_prefix), which can change the numbers slightly. ``logprobs``:
        the output tokens' log-probabilities and their top alternatives are asked for (a
        verification call whose labels' probabilities are read, judge.models.label_tokens)."""
        params: dict[str, Any] = {
            "temperature": self.config.temperature,
            "seed": self.config.seed,
            "max_tokens": self.config.max_tokens,
        }
        provider = provider_for(self.config.model)
        if self.config.reuse_instructions and provider is not None and provider.shared_prefix:
            params["shared_prefix"] = "instructions"
        if logprobs:
            params.update(logprobs=True, top_logprobs=LABEL_TOP_LOGPROBS)
        return params

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

    def call_id(self, prompt: RenderedPrompt, schema: dict[str, Any],
                logprobs: bool = False) -> str:
        return self._call_id(prompt, schema, self.params(logprobs))

    # -- structured calls ---------------------------------------------------------------

    async def structured(
        self, prompt: RenderedPrompt, response_model: type[T], purpose: str, run_id: str | None,
        logprobs: bool = False,
    ) -> tuple[T, str]:
        """Return (parsed output, call id); raise CallFailed when no valid output exists.
        ``logprobs``: ask for the output tokens' log-probabilities (:meth:`params`); the
        tokens that spell the labels are stored with the call (``label_tokens``)."""
        schema = response_schema(response_model)
        call_id = self.call_id(prompt, schema, logprobs)
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
        if self.deferred is not None:
            body = request_body(self.config.model, prompt, self.params(),
                                response_format=structured_format(response_model))
            batched = await self.deferred.send(
                call_id, body, prompt, self.config.max_tokens,
                lambda outcome: self._settle(outcome, prompt, schema, call_id, purpose, run_id,
                                             self.params(), self._parse_as(response_model)))
            if batched is not ONLINE:
                return batched  # type: ignore[no-any-return]
        result: tuple[T, str] = await self._once(
            call_id, lambda held: self._structured_call(prompt, response_model, schema, call_id,
                                                        purpose, run_id, held.reasks, logprobs),
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
        logprobs: bool = False,
    ) -> tuple[T, str]:
        from instructor.core.hooks import Hooks

        client = self._client()
        attempts = Attempts(call_id, run_id)
        hooks = Hooks()
        hooks.on("completion:kwargs", attempts.start)
        hooks.on("completion:response", attempts.response)
        hooks.on("completion:error", attempts.error)
        hooks.on("parse:error", attempts.parse_error)
        params = self.params(logprobs)
        row = self._row(prompt, schema, call_id, purpose, run_id, params)
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
                **params,
                **self.endpoint(),
            ),
            call_id, self.flow.rate_tokens(prompt, self.config.max_tokens),
        )
        parsed: T | None = result[0] if result is not None else None
        latency = (time.perf_counter() - started) * 1000
        row.update(describe(attempts.responses))
        if row.get("finish_reason") == "length":
            parsed = None
            error = TRUNCATED
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
        if self.deferred is not None:
            batched = await self.deferred.send(
                call_id, request_body(self.config.model, prompt, params), prompt, 1,
                lambda outcome: self._settle(outcome, prompt, schema, call_id, purpose, run_id,
                                             params, self._scores_of(options)))
            if batched is not ONLINE:
                return batched  # type: ignore[no-any-return]
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
        litellm = quiet_litellm()
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

    # -- calls answered in a batch (judge.models.batched) ----------------------------------

    @staticmethod
    def _parse_as(response_model: type[T]) -> Any:
        def parse(response: Any) -> tuple[T | None, dict[str, Any] | None, str | None]:
            choice = response.choices[0]
            if getattr(choice, "finish_reason", None) == "length":
                return None, None, TRUNCATED
            try:
                parsed = response_model.model_validate_json(choice.message.content or "")
            except ValidationError as exc:
                return None, None, f"output does not parse: {root_message(exc)}"
            return parsed, parsed.model_dump(mode="json"), None
        return parse

    @staticmethod
    def _scores_of(options: dict[str, str]) -> Any:
        def parse(response: Any) -> tuple[Any, dict[str, Any] | None, str | None]:
            try:
                scores = option_logprobs(response, options)
            except ValueError as exc:
                return None, None, str(exc)
            return scores, {"logprobs": scores}, None
        return parse

    def _settle(self, outcome: Outcome, prompt: RenderedPrompt, schema: dict[str, Any],
                call_id: str, purpose: str, run_id: str | None, params: dict[str, Any],
                parse: Any) -> tuple[Any, str]:
        """Store a call answered in a batch as the online call is stored (its row, one HTTP
        attempt, its tokens; the batch price) and return (result, call id), or raise
        :class:`CallFailed` (its error stored) when the batch gave no usable answer."""
        attempts = Attempts(call_id, run_id)
        attempts.start()
        row = self._row(prompt, schema, call_id, purpose, run_id, params)
        result, dumped, error = None, None, outcome.error
        if outcome.ok and outcome.body is not None:
            response = response_of(outcome.body)
            attempts.response(response)
            row.update(describe([response]))
            row["cost"] = batch_cost(self.config.model, row.get("prompt_tokens") or 0,
                                     row.get("completion_tokens") or 0, row.get("cost"))
            result, dumped, error = parse(response)
            if error:
                attempts.parse_error(ValueError(error))
        else:
            attempts.error(BatchRequestFailed(error or "no result", outcome.status))
            row.update(describe([]))
        self._finish(row, attempts, 0.0, dumped, error)
        if result is None:
            raise CallFailed(error or "no output", call_id)
        return result, call_id
