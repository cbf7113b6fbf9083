"""Embedding calls of the model client (strategy ``probe``): one forward pass, the last
token's hidden state, stored with the call as float16 (:mod:`judge.models.vectors`). A part of
:class:`judge.models.client.ModelClient`, kept apart so each module holds one kind of call."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from judge.models.attempts import Attempts
from judge.models.failures import CallFailed, replay_failure
from judge.models.prompts import RenderedPrompt
from judge.models.vectors import encode, raw_vector, response_vector, stored_vector

if TYPE_CHECKING:
    from judge.models.client import ModelClient


class _Zero(int):
    """0 that is true: litellm's OpenAI embedding path takes ``max_retries or its default``,
    so a plain 0 would let the SDK retry twice behind this client's back."""

    def __bool__(self) -> bool:
        return True


#: ``max_retries`` for litellm's embedding calls: no retry by the provider SDK.
NO_SDK_RETRIES = _Zero(0)


#: what an embedding call asks for (part of its identity)
EMBED_SCHEMA: dict[str, Any] = {"embedding": "last_token_hidden_state", "dtype": "float16"}


class EmbeddingCalls:
    """``ModelClient.embed`` and what it needs of its own."""

    async def embed(
        self, prompt: RenderedPrompt, purpose: str, run_id: str | None
    ) -> tuple[Any, str]:
        """The hidden state of the prompt's last token (``prompt.as_text()``, no chat
        template) as a float16 vector, and the call id. Stored with the call, so replay and
        ``judge fit`` read it with no model call. A provider that returns no vector, or an
        impossible one, fails closed (``CallFailed``)."""
        client = cast("ModelClient", self)
        schema = EMBED_SCHEMA
        # an earlier layer's hidden state (the embedded provider's ``layers``): another vector,
        # so another call; absent when the model's last layer is read, as before it existed
        layers = client.config.probe_layers
        params: dict[str, Any] = {} if layers is None else {"layers": layers}
        call_id = client._call_id(prompt, schema, params)
        stored = client.store.get_call(call_id) if client.store else None
        vector = None if call_id in client.refresh else stored_vector(stored)
        if vector is not None:
            client.accounting.served(call_id, stored.get("model_answered") if stored else None)
            return vector, call_id
        if client.replay:
            replay_failure(stored, call_id, purpose)
        result: tuple[Any, str] = await client._once(
            call_id, lambda _: client._embed_call(prompt, schema, call_id, purpose, run_id, params),
            prompt, 0)
        return result

    async def _embed_call(
        self, prompt: RenderedPrompt, schema: dict[str, Any], call_id: str, purpose: str,
        run_id: str | None, params: dict[str, Any],
    ) -> tuple[Any, str]:
        import litellm

        client = cast("ModelClient", self)
        litellm.suppress_debug_info = True
        attempts = Attempts(call_id, run_id)
        row = client._row(prompt, schema, call_id, purpose, run_id, params)
        started = time.perf_counter()
        text = prompt.as_text()

        async def send() -> Any:
            # the provider SDK must not retry on its own: this client is the one retry layer
            # (see NO_SDK_RETRIES)
            return await attempts.send(lambda: litellm.aembedding(
                model=client.config.model, input=[text], timeout=client.config.timeout_s,
                max_retries=NO_SDK_RETRIES, **params, **client.endpoint()))

        vector = None
        response, error = await client.flow.retrying(send, call_id,
                                                      client.flow.rate_tokens(prompt, 0))
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
            except ValueError as exc:
                error = str(exc)
                attempts.parse_error(exc)
        client._finish(row, attempts, (time.perf_counter() - started) * 1000,
                     encode(vector) if vector is not None else None, error)
        if vector is None:
            raise CallFailed(error or "no output", call_id)
        return vector, call_id
