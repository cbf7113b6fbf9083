"""Running a coroutine from synchronous code, also where an event loop already runs (a
notebook, an async web app): then on a worker thread with a loop of its own.

The loop's default executor keeps the coroutines its calls return until they are started.
litellm's ``acompletion`` builds each request's coroutine on a worker thread and awaits it
after; a call cancelled in between (Ctrl-C, a timeout) leaves a request that was never sent,
and Python warns ``coroutine ... was never awaited`` when it is collected. When the loop has
ended, those still unstarted are closed: no request is lost that was ever made, and an
interrupted run ends without the warning.

The request of an attempt the model client marked (an OpenAI-compatible endpoint,
:mod:`judge.models.preparing`) is built at once on the loop's own thread instead, by the loop
itself (:class:`_Loop`): the future it hands back is already done, so the task that asked goes
on to send the request without a turn of the loop. Handing back a pending future instead (done
a turn later, through the loop's wake-up pipe) let every task with a response in hand take its
turn first: the answers whose responses came back together sent their next requests together,
and stayed in step (``bench/README.md``, throughput, fourth pass)."""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from judge.models.preparing import take

T = TypeVar("T")


class _KeepingExecutor(ThreadPoolExecutor):
    """A thread pool that holds the coroutines its calls return until they are started."""

    def __init__(self) -> None:
        super().__init__(thread_name_prefix="asyncio")
        self._lock = threading.Lock()
        self._unstarted: list[Coroutine[Any, Any, Any]] = []

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        return super().submit(self._keeping, fn, *args, **kwargs)

    def _keeping(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        result = fn(*args, **kwargs)
        if inspect.iscoroutine(result):
            with self._lock:  # the started ones are let go as new ones come
                self._unstarted = [c for c in self._unstarted if _unstarted(c)]
                self._unstarted.append(result)
        return result

    def close_unstarted(self) -> int:
        """Close the coroutines nobody started (call once the loop has ended); how many."""
        with self._lock:
            left, self._unstarted = [c for c in self._unstarted if _unstarted(c)], []
        for coro in left:
            coro.close()
        return len(left)


_BaseLoop: type[asyncio.AbstractEventLoop] = (
    asyncio.ProactorEventLoop if sys.platform == "win32"  # type: ignore[attr-defined]
    else asyncio.SelectorEventLoop)


class _Loop(_BaseLoop):  # type: ignore[valid-type,misc]
    """The run's loop: the function of an attempt the model client marked (:func:`take`) runs
    at once on this thread, through the keeping executor's bookkeeping, and its future is done
    before it is returned."""

    def run_in_executor(self, executor: Any, func: Callable[..., T], *args: Any
                        ) -> asyncio.Future[T]:
        default = self._default_executor
        if executor is None and isinstance(default, _KeepingExecutor) and take():
            self._check_closed()
            done: asyncio.Future[T] = self.create_future()
            try:
                done.set_result(default._keeping(func, *args))
            except Exception as exc:  # raised where the worker thread would have
                done.set_exception(exc)
            return done
        return super().run_in_executor(executor, func, *args)  # type: ignore[no-any-return]


def _unstarted(coro: Coroutine[Any, Any, Any]) -> bool:
    return inspect.getcoroutinestate(coro) == inspect.CORO_CREATED


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` (Ctrl-C cancels ``coro``, then raises KeyboardInterrupt) with the
    keeping executor as the loop's default one."""
    executor = _KeepingExecutor()
    try:
        with asyncio.Runner(loop_factory=_Loop) as runner:
            runner.get_loop().set_default_executor(executor)
            return runner.run(coro)
    finally:  # the runner has cancelled every task and waited for the executor's threads
        executor.close_unstarted()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end and return its result."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_run, coro).result()
