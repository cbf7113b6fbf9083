"""Where litellm prepares the request of an async call: on the event loop's own thread for an
OpenAI-compatible endpoint, on a worker thread otherwise.

litellm's ``acompletion`` (and ``aembedding``) runs its synchronous ``completion()`` in the
event loop's default executor, a worker thread, then awaits the request it returns. For the
``openai`` provider (OpenAI itself and every OpenAI-compatible server: vLLM, llama.cpp, the
benchmark's mock) that step only builds the request from the parameters and litellm's cached
client: work under the GIL, which a worker thread cannot do beside the loop, only after it. At
concurrency 32 the worker threads got the GIL when the loop let it go, so requests left late
and in bursts, and came back in bursts (``bench/README.md``, throughput, third pass).

For those providers the model client marks each attempt (:func:`on_loop`), and the run's event
loop (:mod:`judge.runs.loop`) runs the next function submitted to its default executor from
that attempt (:func:`take`: litellm's ``completion()``) at once on its own thread. Only the
first: anything else the attempt submits (a DNS lookup) still goes to a worker thread. Other
providers keep the worker thread: their step may read credentials or fetch a token over the
network. A loop whose default executor is not the run's (a caller's own loop) ignores the mark.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

from judge.models.lazy_litellm import quiet_litellm

#: litellm's providers whose request is built without I/O
ON_LOOP_PROVIDERS = frozenset({"openai"})

_MARK: ContextVar[bool] = ContextVar("claim_judge_prepare_on_loop", default=False)


@lru_cache(maxsize=64)
def prepares_on_loop(model: str, api_base: str | None = None) -> bool:
    """Whether litellm builds ``model``'s requests without I/O (its provider is one of
    :data:`ON_LOOP_PROVIDERS`); False for a model litellm cannot place."""
    litellm = quiet_litellm()
    try:
        provider = litellm.get_llm_provider(model, api_base=api_base)[1]
    except Exception:  # an unknown provider: leave it on the worker thread
        return False
    return provider in ON_LOOP_PROVIDERS


@contextmanager
def on_loop(enabled: bool = True) -> Iterator[None]:
    """Mark the attempt made inside: its request is prepared on the loop's thread."""
    if not enabled:
        yield
        return
    token = _MARK.set(True)
    try:
        yield
    finally:
        _MARK.reset(token)


def take() -> bool:
    """Whether the function being submitted to the loop's default executor from this context
    runs at once on the loop's thread; the mark is used up (the next submission goes to a
    worker thread)."""
    if not _MARK.get():
        return False
    _MARK.set(False)
    return True
