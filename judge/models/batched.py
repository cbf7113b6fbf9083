"""A call answered through a batch (a provider's batch API, or a ``vllm run-batch`` file)
instead of online: the request's body, as the online call sends it, and the answer read back
and stored as the online call stores it (same call id, same row, same parsing), with the
batch price.

The client hands a call it would make online to a :class:`Deferral` (the run's batch queue,
:mod:`judge.runs.deferred`) with its body and a ``settle`` function; the queue sends the
bodies in a batch, and calls ``settle`` with each request's :class:`Outcome`: the call is
stored (its output, or its error: a ``judge_error`` for the claims that rest on it) and its
result returned. ``ONLINE`` instead of a result: the request failed in the batch and is to be
made online (``--batch-resend-online``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from judge.models.lazy_litellm import quiet_litellm
from judge.models.prompts import RenderedPrompt

#: What a deferral returns for a call to make online after all.
ONLINE = object()
#: The chat completions endpoint of a batch request.
CHAT_URL = "/v1/chat/completions"


@dataclass(frozen=True)
class Outcome:
    """One request's result in a batch: the response ``body`` (HTTP ``status`` 200), or an
    ``error``."""

    body: dict[str, Any] | None = None
    error: str | None = None
    status: int | None = None

    @property
    def ok(self) -> bool:
        return self.body is not None and self.error is None


class Deferral(Protocol):
    """Where a client in batch mode sends the calls it does not find stored."""

    async def send(self, call_id: str, body: dict[str, Any], prompt: RenderedPrompt,
                   completion: int, settle: Callable[[Outcome], Any]) -> Any: ...


class BatchRequestFailed(Exception):
    """A request that failed in a batch (its error line, an expiry, a failed batch)."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def sent_model(model: str) -> str:
    """The model name a request body carries (litellm's, without the provider prefix)."""
    litellm = quiet_litellm()

    try:
        return str(litellm.get_llm_provider(model)[0])
    except Exception:
        return model.partition("/")[2] or model


def provider_of(model: str) -> str:
    """litellm's provider of ``model`` (``openai``, ``azure``, ``hosted_vllm``, ...)."""
    litellm = quiet_litellm()

    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:
        return model.partition("/")[0]


def request_body(model: str, prompt: RenderedPrompt, params: dict[str, Any],
                 **extra: Any) -> dict[str, Any]:
    """The body of a chat completion request as the online call sends it: the model, the
    prompt's messages, the sampling parameters (``shared_prefix``, an in-process runtime's
    own, is not sent) and ``extra`` (the response format)."""
    sent = {k: v for k, v in params.items() if k != "shared_prefix"}
    return {"model": sent_model(model), "messages": prompt.messages, **sent, **extra}


def structured_format(response_model: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` instructor sends for ``response_model`` (JSON-schema mode)."""
    from judge.models.structured import instructor_model

    return {"type": "json_schema", "json_schema": {
        "name": response_model.__name__,
        "schema": instructor_model(response_model).model_json_schema()}}


def response_of(body: dict[str, Any]) -> Any:
    """A batch output's response body as litellm's response object."""
    litellm = quiet_litellm()

    return litellm.ModelResponse(**body)


def batch_cost(model: str, prompt_tokens: int, completion_tokens: int,
               online: float | None) -> float | None:
    """The price of a request answered in a batch: litellm's batch prices of the model when
    it has them, else half the online price (what the providers charge), None when unknown."""
    litellm = quiet_litellm()

    info: dict[str, Any] = {}
    with contextlib.suppress(Exception):  # a model litellm does not know: no batch prices
        info = dict(litellm.get_model_info(model))
    prompt_price = info.get("input_cost_per_token_batches")
    completion_price = info.get("output_cost_per_token_batches")
    if prompt_price is not None and completion_price is not None:
        return float(prompt_tokens * prompt_price + completion_tokens * completion_price)
    return None if online is None else online / 2


def request_line(call_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """One line of a batch input file (OpenAI's format, which ``vllm run-batch`` reads)."""
    return {"custom_id": call_id, "method": "POST", "url": CHAT_URL, "body": body}


def read_results(text: str) -> dict[str, Outcome]:
    """custom id -> :class:`Outcome`, from a batch output or error file (OpenAI's and
    ``vllm run-batch``'s format). A line that cannot be read is skipped: its request has no
    result (and fails as missing)."""
    import json

    out: dict[str, Outcome] = {}
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            custom_id = str(line["custom_id"])
        except (ValueError, KeyError, TypeError):
            continue
        response = line.get("response") or {}
        status = response.get("status_code") if isinstance(response, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        error = line.get("error")
        if error is None and status == 200 and isinstance(body, dict) and body.get("choices"):
            out[custom_id] = Outcome(body, None, 200)
            continue
        if isinstance(error, dict):
            message = f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip()
        elif error:
            message = str(error)
        else:
            detail = (body or {}).get("error") if isinstance(body, dict) else None
            message = (detail.get("message") if isinstance(detail, dict) else None) \
                or f"HTTP {status}"
        out[custom_id] = Outcome(None, f"batch request failed: {message}", status)
    return out
