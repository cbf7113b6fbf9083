"""run_sync: a call cancelled after its worker thread built the request's coroutine (litellm's
acompletion does that, then awaits it) leaves no ``coroutine ... was never awaited`` warning;
under plain ``asyncio.run`` the same call does."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import warnings
from collections.abc import Callable, Coroutine
from typing import Any

from judge.runs.loop import run_sync

sent: list[str] = []


async def _request() -> str:
    sent.append("request")
    return "answer"


def _build_request() -> Coroutine[Any, Any, str]:
    """What litellm's completion() does on the executor's thread for an async call."""
    time.sleep(0.3)
    return _request()


async def _call_cancelled_while_building() -> str:
    loop = asyncio.get_running_loop()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(loop.run_in_executor(None, _build_request), 0.05)
    return "cancelled"


def _unawaited(run: Callable[[Coroutine[Any, Any, str]], str]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run(_call_cancelled_while_building()) == "cancelled"
        gc.collect()
    return [str(w.message) for w in caught if "was never awaited" in str(w.message)]


def test_a_cancelled_call_leaves_no_unawaited_coroutine() -> None:
    sent.clear()
    assert _unawaited(asyncio.run) == ["coroutine '_request' was never awaited"]
    assert _unawaited(run_sync) == []
    assert sent == []  # closed, never sent


def test_run_sync_inside_a_running_loop_is_as_clean() -> None:
    async def inside() -> list[str]:
        return _unawaited(run_sync)

    assert asyncio.run(inside()) == []


def test_run_sync_returns_what_the_coroutine_awaited_from_the_executor() -> None:
    async def through_the_executor() -> str:
        built = await asyncio.get_running_loop().run_in_executor(None, _build_request)
        return await built

    sent.clear()
    assert run_sync(through_the_executor()) == "answer"
    assert sent == ["request"]
