"""The embedded model as the litellm custom provider ``embedded/...``: requests become llama.cpp
chat requests on the in-process runtime (:mod:`judge.models.embedded`), results become litellm
responses. Registered lazily, on the first call to an ``embedded/`` model."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from judge.models.control_tokens import defuse, defuse_messages
from judge.models.embedded import (
    EMBEDDED_MODEL,
    ENV_GGUF,
    ENV_N_CTX,
    EXECUTOR,
    MODEL_NAME,
    PROVIDER,
    EmbeddedModelError,
    RuntimeInfo,
    RuntimeUnloaded,
    chat,
    embed,
    load,
    token_states,
)
from judge.models.readers import ReaderError, parse_readers, pool, prompt_spans, token_offsets

# litellm fetches its model cost map over the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
from litellm.llms.custom_llm import CustomLLM, CustomLLMError  # noqa: E402
from litellm.types.utils import EmbeddingResponse, ModelResponse, Usage  # noqa: E402

# Request keys passed through to llama.cpp's OpenAI-compatible chat endpoint.
_PASSTHROUGH = frozenset(
    {
        "temperature",
        "top_p",
        "stop",
        "seed",
        "response_format",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        # this project's own flag: the claims of one answer share a prompt prefix
        # (judge.models.shared_prefix)
        "shared_prefix",
    }
)
# Keys litellm may put into optional_params that carry no meaning for a local model. litellm
# turns the client's ``num_retries=0`` (the client is the one retry layer) into ``max_retries``.
_IGNORED = frozenset(
    {"user", "extra_headers", "stream_options", "metadata", "store", "max_retries", "num_retries"}
)



def _plain(value: Any) -> Any:
    """Messages may hold pydantic objects; the runtime wants plain JSON values."""
    return json.loads(json.dumps(value, default=_to_jsonable))


def _to_jsonable(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(exclude_none=True)
    if hasattr(obj, "dict"):
        return obj.dict()
    raise TypeError(f"cannot send {type(obj).__name__} to the embedded model")


def _build_request(messages: list[Any], optional_params: dict[str, Any]) -> dict[str, Any]:
    params = dict(optional_params)
    if params.pop("stream", False):
        raise CustomLLMError(400, "the embedded provider does not support stream=True")
    n = params.pop("n", None)
    if n not in (None, 1):
        raise CustomLLMError(400, f"the embedded provider supports n=1 only (got n={n})")
    request: dict[str, Any] = {"messages": defuse_messages(_plain(messages)), "stream": False}
    max_tokens = params.pop("max_tokens", None)
    max_completion_tokens = params.pop("max_completion_tokens", None)
    if max_tokens is None:
        max_tokens = max_completion_tokens
    if max_tokens is not None:
        request["max_tokens"] = int(max_tokens)
    for key, value in params.items():
        if value is None or key in _IGNORED:
            continue
        if key not in _PASSTHROUGH:
            raise CustomLLMError(400, f"the embedded provider does not support parameter {key!r}")
        request[key] = _plain(value)
    request.setdefault("temperature", 0.0)
    request.setdefault("seed", 0)
    return request


def _raise_runtime_error(result: dict[str, Any], model: str) -> None:
    """Turn an ``{"error": {...}}`` answer of llama.cpp into an exception litellm surfaces."""
    error = result.get("error")
    status, kind, message = 500, "", str(error)
    if isinstance(error, dict):
        code = error.get("code")
        status = code if isinstance(code, int) and 400 <= code < 600 else 500
        kind = str(error.get("type") or "")
        message = str(error.get("message") or error)
    if kind == "exceed_context_size_error":
        # A litellm exception type passes through litellm's exception mapping unchanged.
        raise litellm.ContextWindowExceededError(
            message=f"embedded model: {message} (set {ENV_N_CTX} to raise the context size)",
            model=model,
            llm_provider=PROVIDER,
        )
    raise CustomLLMError(status, f"embedded model error: {message}")


class EmbeddedProvider(CustomLLM):
    """litellm handler for ``embedded/<name>``: runs the request on the in-process model."""

    def _loaded(self, model: str, layers: int | None = None, tokens: bool = False) -> None:
        """Load the runtime for ``model`` (a known name), or raise what litellm surfaces."""
        if not os.environ.get(ENV_GGUF) and model not in (MODEL_NAME, EMBEDDED_MODEL):
            raise CustomLLMError(
                404,
                f"unknown embedded model {model!r}; the packaged model is {EMBEDDED_MODEL!r} "
                f"(set {ENV_GGUF} to serve your own GGUF under any name)",
            )
        try:
            load(layers=layers, token_states=tokens)
        except EmbeddedModelError as exc:
            # Permanent (missing packages, corrupt chunks): a plain APIError, which litellm passes
            # through unchanged and callers do not mistake for a transient server error.
            raise litellm.APIError(
                status_code=500,
                message=f"embedded model unavailable: {exc}",
                llm_provider=PROVIDER,
                model=model,
            ) from exc

    def _complete(
        self, model: str, messages: list[Any], optional_params: dict[str, Any]
    ) -> ModelResponse:
        request = _build_request(messages, optional_params)
        self._loaded(model)
        try:
            result, info = chat(request)
        except RuntimeUnloaded as exc:  # unload() raced with us
            raise CustomLLMError(503, str(exc)) from exc
        except ValueError as exc:  # llama.cpp rejects the request (bad schema, messages, ...)
            raise CustomLLMError(400, f"embedded model rejected the request: {exc}") from exc
        except Exception as exc:
            raise CustomLLMError(500, f"embedded model failed: {exc}") from exc
        if "error" in result:
            _raise_runtime_error(result, model)
        return _to_model_response(result, _reported_model(model), info)

    def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override,unused-ignore]
        return self._complete(
            kwargs["model"], kwargs["messages"], kwargs.get("optional_params") or {}
        )

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override,unused-ignore]
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            EXECUTOR,
            self._complete,
            kwargs["model"],
            kwargs["messages"],
            kwargs.get("optional_params") or {},
        )

    def _embed(self, model: str, inputs: list[Any], optional_params: dict[str, Any]
               ) -> EmbeddingResponse:
        """One hidden-state vector per input text (strategy "probe"), computed one by one:
        the last layer's, or with ``layers=N`` the one after the model's first N blocks."""
        if not all(isinstance(text, str) for text in inputs):
            raise CustomLLMError(400, "the embedded provider embeds text inputs only")
        layers = optional_params.get("layers")
        if layers is not None and (isinstance(layers, bool) or not isinstance(layers, int)
                                   or layers < 1):
            raise CustomLLMError(400, f"layers must be a positive integer, not {layers!r}")
        reader, claim = optional_params.get("reader"), optional_params.get("reader_claim")
        if reader is not None:
            return self._pooled(model, inputs, layers, reader, claim)
        self._loaded(model, layers)
        data: list[dict[str, Any]] = []
        prompt_tokens = 0
        info = None
        for index, text in enumerate(inputs):
            try:
                result, info = embed(defuse(text), layers)
            except RuntimeUnloaded as exc:
                raise CustomLLMError(503, str(exc)) from exc
            except ValueError as exc:
                raise CustomLLMError(400, f"embedded model rejected the input: {exc}") from exc
            except Exception as exc:
                raise CustomLLMError(500, f"embedded model failed: {exc}") from exc
            if "error" in result:
                _raise_runtime_error(result, model)
            rows = result.get("data")
            if not isinstance(rows, list) or not rows or "embedding" not in rows[0]:
                raise CustomLLMError(500, f"embedded model returned no vector: {str(result)[:300]}")
            data.append({"object": "embedding", "index": index, "embedding": rows[0]["embedding"]})
            prompt_tokens += int((result.get("usage") or {}).get("prompt_tokens") or 0)
        return _embedding_response(model, data, prompt_tokens, info)

    def _pooled(self, model: str, inputs: list[str], layers: int | None, reader: Any,
                claim: Any) -> EmbeddingResponse:
        """The readers' vector of each input (``probe_reader``: judge.models.readers), pooled
        from every token's hidden state; the claim (``reader_claim``) says which tokens are
        the claim's."""
        try:
            readers = parse_readers(reader) if isinstance(reader, str) else None
        except ReaderError as exc:
            raise CustomLLMError(400, str(exc)) from exc
        if readers is None or not isinstance(claim, str):
            raise CustomLLMError(400, "a reader needs its name and the claim (reader_claim)")
        self._loaded(model, layers, tokens=True)
        data: list[dict[str, Any]] = []
        prompt_tokens = 0
        info = None
        for index, raw in enumerate(inputs):
            text = defuse(raw)
            try:
                states, pieces, info = token_states(text, layers)
                vector = pool(states, token_offsets(pieces, text),
                              prompt_spans(text, defuse(claim)), readers)
            except RuntimeUnloaded as exc:
                raise CustomLLMError(503, str(exc)) from exc
            except ReaderError as exc:
                raise CustomLLMError(400, f"embedded model cannot read {reader!r}: {exc}"
                                     ) from exc
            except Exception as exc:
                raise CustomLLMError(500, f"embedded model failed: {exc}") from exc
            data.append({"object": "embedding", "index": index, "embedding": vector.tolist()})
            prompt_tokens += int(states.shape[0])
        return _embedding_response(model, data, prompt_tokens, info)

    def embedding(self, *args: Any, **kwargs: Any) -> EmbeddingResponse:  # type: ignore[override,unused-ignore]
        return self._embed(kwargs["model"], list(kwargs["input"]),
                           kwargs.get("optional_params") or {})

    async def aembedding(self, *args: Any, **kwargs: Any) -> EmbeddingResponse:  # type: ignore[override,unused-ignore]
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            EXECUTOR, self._embed, kwargs["model"], list(kwargs["input"]),
            kwargs.get("optional_params") or {})

    def streaming(self, *args: Any, **kwargs: Any) -> Iterator[Any]:  # type: ignore[override,unused-ignore]
        raise CustomLLMError(400, "the embedded provider does not support stream=True")

    async def astreaming(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override,unused-ignore]
        raise CustomLLMError(400, "the embedded provider does not support stream=True")


def _embedding_response(model: str, data: list[dict[str, Any]], prompt_tokens: int,
                        info: RuntimeInfo | None) -> EmbeddingResponse:
    """The litellm answer of an embedding request: its vectors, the tokens read and the
    runtime's identity."""
    response = EmbeddingResponse(
        model=_reported_model(model), data=data,
        usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=0,
                    total_tokens=prompt_tokens),
    )
    if info is not None:
        response._hidden_params["system_fingerprint"] = info.fingerprint
    return response


def _reported_model(model: str) -> str:
    """The requested model string, ``embedded/<name>`` (litellm hands us ``<name>``)."""
    return model if model.startswith(f"{PROVIDER}/") else f"{PROVIDER}/{model}"


def _to_model_response(result: dict[str, Any], model: str, info: RuntimeInfo) -> ModelResponse:
    choices = result.get("choices")
    if not isinstance(choices, list) or not choices:
        raise CustomLLMError(500, f"embedded model returned no choices: {str(result)[:300]}")
    clean: list[dict[str, Any]] = []
    for index, choice in enumerate(choices):
        message = dict(choice.get("message") or {})
        message.setdefault("role", "assistant")
        if message.get("content") is None and not message.get("tool_calls"):
            message["content"] = ""
        entry: dict[str, Any] = {
            "index": choice.get("index", index),
            "message": message,
            "finish_reason": choice.get("finish_reason") or "stop",
        }
        if choice.get("logprobs") is not None:
            entry["logprobs"] = choice["logprobs"]
        clean.append(entry)
    usage = result.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    return ModelResponse(
        id=str(result.get("id") or f"chatcmpl-{uuid.uuid4().hex}"),
        created=int(result.get("created") or time.time()),
        model=model,
        object="chat.completion",
        system_fingerprint=info.fingerprint,
        choices=clean,
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": int(usage.get("total_tokens") or prompt_tokens + completion_tokens),
        },
    )


_HANDLER = EmbeddedProvider()
_REGISTER_LOCK = threading.Lock()


def register() -> None:
    """Register the ``embedded`` provider with litellm. Idempotent and thread-safe."""
    with _REGISTER_LOCK:
        entries = [e for e in litellm.custom_provider_map if e.get("provider") == PROVIDER]
        if not any(e.get("custom_handler") is _HANDLER for e in entries):
            litellm.custom_provider_map = [
                e for e in litellm.custom_provider_map if e.get("provider") != PROVIDER
            ] + [{"provider": PROVIDER, "custom_handler": _HANDLER}]
        # litellm runs this on every call too; doing it now makes the provider known to helpers
        # (get_llm_provider, supported params) that instructor may call before the first request.
        litellm.utils.custom_llm_setup()
