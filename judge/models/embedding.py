"""Embedding calls of the model client (strategy ``probe``): one forward pass, the last
token's hidden state, stored with the call as float16 (:mod:`judge.models.vectors`). A part of
:class:`judge.models.client.ModelClient` (which builds on it), kept apart so each module holds
one kind of call; like the client it builds on :class:`judge.models.calls.CallCore`.

The vectors come from the config's model, or from a served model's embeddings endpoint
(``probe_endpoint``): then the call is that model's (its id, pooling and normalisation are
part of the call's identity), it goes to the endpoint's ``api_base``, and what the endpoint
answers is checked (:mod:`judge.models.served`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from judge.config import JudgeConfig
from judge.models.attempts import Attempts
from judge.models.budget import Limits
from judge.models.calls import CallCore, CallStore
from judge.models.control_tokens import defuse
from judge.models.failures import CallFailed, replay_failure
from judge.models.lazy_litellm import quiet_litellm
from judge.models.prompts import RenderedPrompt
from judge.models.served import UNLISTED, answer_problem, listing_problem, request
from judge.models.vectors import encode, raw_vector, response_vector, stored_vector


class _Zero(int):
    """0 that is true: litellm's OpenAI embedding path takes ``max_retries or its default``,
    so a plain 0 would let the SDK retry twice behind this client's back."""

    def __bool__(self) -> bool:
        return True


#: ``max_retries`` for litellm's embedding calls: no retry by the provider SDK.
NO_SDK_RETRIES = _Zero(0)


#: what an embedding call asks for (part of its identity)
EMBED_SCHEMA: dict[str, Any] = {"embedding": "last_token_hidden_state", "dtype": "float16"}


class EmbeddingCalls(CallCore):
    """``ModelClient.embed`` and what it needs of its own."""

    def __init__(self, config: JudgeConfig, store: CallStore | None, replay: bool = False,
                 limits: Limits | None = None) -> None:
        super().__init__(config, store, replay, limits)
        #: why the probe endpoint cannot be read as the pinned model ("": it can), once asked
        self._listing: asyncio.Future[str | None] | None = None

    def embed_target(self) -> tuple[str, dict[str, Any]]:
        """(the model asked for vectors, the parameters that identify its vectors): the
        config's model (with ``probe_layers``, the layer read), or the probe endpoint's model
        with its pooling and normalisation."""
        served = self.config.probe_endpoint
        if served is not None:
            return served.model, {"pooling": served.pooling, "normalized": served.normalized}
        # an earlier layer's hidden state (the embedded provider's ``layers``): another vector,
        # so another call; absent when the model's last layer is read, as before it existed
        layers, reader = self.config.probe_layers, self.config.probe_reader
        params: dict[str, Any] = {} if layers is None else {"layers": layers}
        if reader != "last":  # pooled tokens (judge.models.readers): another vector
            params["reader"] = reader
        return self.config.model, params

    async def _listing_problem(self) -> str:
        """Asked once per client, before its first vector from an endpoint; a failure to list
        is asked again next time (a server that is still starting)."""
        served = self.config.probe_endpoint
        if served is None:
            return ""
        if self._listing is None:
            self._listing = asyncio.ensure_future(listing_problem(served))
        problem = await asyncio.shield(self._listing) or ""
        if problem.startswith(UNLISTED):
            self._listing = None
        return problem

    async def embed(
        self, prompt: RenderedPrompt, purpose: str, run_id: str | None, claim: str | None = None
    ) -> tuple[Any, str]:
        """The hidden state of the prompt's last token (``prompt.as_text()``, no chat
        template) as a float16 vector, and the call id. Stored with the call, so replay and
        ``judge fit`` read it with no model call. A provider that returns no vector, or an
        impossible one, fails closed (``CallFailed``)."""
        schema = EMBED_SCHEMA
        model, params = self.embed_target()
        call_id = self._call_id(prompt, schema, params, model)
        stored = self.store.get_call(call_id) if self.store else None
        vector = None if call_id in self.refresh else stored_vector(stored)
        if vector is not None:
            self.accounting.served(call_id, stored.get("model_answered") if stored else None)
            return vector, call_id
        if self.replay:
            replay_failure(stored, call_id, purpose)
        result: tuple[Any, str] = await self._once(
            call_id, lambda _: self._embed_call(prompt, schema, call_id, purpose, run_id, params,
                                                model, claim),
            prompt, 0)
        return result

    async def _embed_call(
        self, prompt: RenderedPrompt, schema: dict[str, Any], call_id: str, purpose: str,
        run_id: str | None, params: dict[str, Any], model: str, claim: str | None = None,
    ) -> tuple[Any, str]:
        litellm = quiet_litellm()
        attempts = Attempts(call_id, run_id)
        row = self._row(prompt, schema, call_id, purpose, run_id, params, model)
        started = time.perf_counter()
        served = self.config.probe_endpoint
        text = prompt.as_text()
        if served is None:
            # the embedded provider reads ``layers``, and with a ``reader`` the claim whose
            # tokens it pools (the claim is in the prompt, so in the call's identity already)
            where = {**params, **self.endpoint(),
                     **({"reader_claim": claim} if "reader" in params else {})}
        else:
            # a served model reads control tokens in its input as the embedded one would,
            # had its provider not broken them (judge.models.control_tokens)
            text = defuse(text)
            where = {"num_retries": 0, **request(served)}

        async def send() -> Any:
            # the provider SDK must not retry on its own: this client is the one retry layer
            # (see NO_SDK_RETRIES); rpm / tpm apply to these calls as to every other
            return await attempts.send(lambda: litellm.aembedding(
                model=model, input=[text], timeout=self.config.timeout_s,
                max_retries=NO_SDK_RETRIES, **where))

        vector = None
        listing = await self._listing_problem()
        response, error = (None, listing) if listing else await self.flow.retrying(
            send, call_id, self.flow.rate_tokens(prompt, 0))
        if response is not None:
            usage = getattr(response, "usage", None)
            row.update({
                "raw_output": raw_vector(response),
                "model_answered": getattr(response, "model", None),
                "system_fingerprint": (getattr(response, "_hidden_params", None) or {}).get(
                    "system_fingerprint"),
                "finish_reason": None,
                "prompt_tokens": getattr(usage, "prompt_tokens", None) or 0,
                "completion_tokens": 0,
                "cost": (getattr(response, "_hidden_params", None) or {}).get("response_cost"),
            })
            try:
                vector = response_vector(response)
                problem = served and answer_problem(served, row["model_answered"], vector)
                if problem:
                    raise ValueError(problem)
            except ValueError as exc:
                vector, error = None, str(exc)
                attempts.parse_error(exc)
        self._finish(row, attempts, (time.perf_counter() - started) * 1000,
                     encode(vector) if vector is not None else None, error)
        if vector is None:
            raise CallFailed(error or "no output", call_id)
        return vector, call_id
