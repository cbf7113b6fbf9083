"""The retry layer's pieces: which provider errors are transient, what a provider asked to wait
(``Retry-After``), the backoff, and the record of every HTTP attempt of a call."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import random  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from typing import Any  # noqa: E402

from judge.masking import mask  # noqa: E402
from judge.store import now  # noqa: E402

#: Provider errors worth a backoff and another try (litellm / openai exception names).
_TRANSIENT = (
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "ServiceUnavailableError",
    "InternalServerError",
    "APITimeoutError",
    "BadGatewayError",
)
#: The longest wait between two tries, whatever ``Retry-After`` asks.
MAX_BACKOFF_S = 60.0



def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and all(cur is not s for s in seen):
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def is_transient(exc: BaseException) -> bool:
    for cur in _chain(exc):
        if type(cur).__name__ in _TRANSIENT:
            return True
        status = _status(cur)
        if status is not None and (status == 429 or status >= 500):
            return True
    return False


#: Provider errors of the setup, not of the call: the exit code each deserves (64: the config
#: or the environment, 1: the endpoint unreachable).
_SETUP = {"AuthenticationError": 64, "PermissionDeniedError": 64, "NotFoundError": 64,
          "APIConnectionError": 1}
#: what litellm's message says when no connection could be made
_UNREACHABLE = re.compile(r"Connection (?:error|refused)|Name or service not known|"
                          r"nodename nor servname|Temporary failure in name resolution")


def setup_failure(exc: BaseException) -> int | None:
    """The exit code of a failure trying again will not mend when it comes first (the key
    refused, the model or endpoint path unknown, nothing answering), else None."""
    for cur in _chain(exc):
        code = _SETUP.get(type(cur).__name__)
        if code is None and _status(cur) in (401, 403, 404):
            code = 64
        # litellm reports a connection that could not be made as an InternalServerError
        if code is None and _UNREACHABLE.search(str(cur)):
            code = 1
        if code is not None:
            return code
    return None


def provider_refusal(exc: BaseException, model: str = "") -> str | None:
    """A provider's refusal of the setup in words, with the fix: a refused key ("the provider
    refused OPENAI_API_KEY (401): ..."), a model it does not know (404); None for any other
    failure. The key variable is the one litellm reads for the provider that refused."""
    for cur in _chain(exc):
        name, status = type(cur).__name__, _status(cur)
        if name in ("AuthenticationError", "PermissionDeniedError") or status in (401, 403):
            status = status or (401 if name == "AuthenticationError" else 403)
            provider = str(getattr(cur, "llm_provider", "") or model.partition("/")[0])
            key = f"{provider.upper()}_API_KEY" if provider else "the API key"
            fix = (f"set {key} to a valid key ({provider}'s console makes one)"
                   if status == 401 else f"use a key of {key} that may call this model")
            return (f"the provider refused {key} ({status}): {fix}; `judge doctor --online` "
                    "checks it")
        if name == "NotFoundError" or status == 404:
            what = f"model {model!r}" if model else "the model"
            return (f"the provider does not know {what} (404): correct the model string "
                    "(`judge models` shows the one in use)")
    return None


def _status(exc: BaseException) -> int | None:
    for name in ("status_code", "http_status"):
        value = getattr(exc, name, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def retry_after(exc: BaseException) -> float | None:
    """Seconds a provider asked to wait (``Retry-After`` / ``retry-after-ms``), if it did."""
    for cur in _chain(exc):
        headers: Any = getattr(cur, "litellm_response_headers", None)
        if headers is None:
            headers = getattr(getattr(cur, "response", None), "headers", None)
        if not headers:
            continue
        try:
            if headers.get("retry-after-ms") is not None:
                return max(0.0, float(headers.get("retry-after-ms")) / 1000)
            if headers.get("retry-after") is not None:
                return max(0.0, float(headers.get("retry-after")))
        except (TypeError, ValueError):
            continue
    return None


def backoff(attempt: int, asked: float | None, base: float = 1.0) -> float:
    """Seconds to wait before try ``attempt + 1``: what the provider asked, else capped
    exponential backoff with full jitter."""
    if asked is not None:
        return min(MAX_BACKOFF_S, asked)
    return random.uniform(0, min(MAX_BACKOFF_S, base * 2 ** (attempt - 1)))


def root_message(exc: BaseException) -> str:
    """What a failed call says, with the secrets masked (a provider may echo the key)."""
    text = mask(f"{type(exc).__name__}: {exc}")
    return text if len(text) < 2000 else text[:2000] + "…"



class Attempts:
    """The HTTP attempts of one logical call, as instructor's hooks and the retry loop see
    them."""

    def __init__(self, call_id: str, run_id: str | None) -> None:
        self.call_id, self.run_id = call_id, run_id
        self.rows: list[dict[str, Any]] = []
        self.responses: list[Any] = []
        self.parse_errors: list[str] = []
        self._started = 0.0
        self._started_at: str | None = None

    def start(self, *_: Any, **__: Any) -> None:
        """The attempt leaves now: its wall-clock start and the clock its latency runs on."""
        self._started = time.perf_counter()
        self._started_at = now()

    def _add(self, status: str, http_status: int | None, error: str | None) -> None:
        self.rows.append({
            "call_id": self.call_id, "attempt": len(self.rows) + 1, "run_id": self.run_id,
            "started_at": self._started_at or now(), "status": status, "http_status": http_status,
            "latency_ms": round((time.perf_counter() - self._started) * 1000, 1),
            "error": error,
        })
        self._started_at = None  # a next attempt without a start hook is stamped as it ends

    async def send(self, request: Callable[[], Awaitable[Any]]) -> Any:
        """One HTTP attempt: ``request()``, with its start, its response or its error
        recorded (the error re-raised for the retry layer)."""
        self.start()
        try:
            response = await request()
        except Exception as exc:
            self.error(exc)
            raise
        self.response(response)
        return response

    def response(self, response: Any) -> None:
        self.responses.append(response)
        self._add("ok", 200, None)

    def error(self, exc: BaseException, **_: Any) -> None:
        self._add("error", _status(exc), root_message(exc))

    def parse_error(self, exc: BaseException, **_: Any) -> None:
        message = root_message(exc)
        self.parse_errors.append(message)
        if self.rows:  # the response arrived; it did not parse
            self.rows[-1].update({"status": "parse_error", "error": message})
