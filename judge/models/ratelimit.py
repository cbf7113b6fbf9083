"""Provider rate limits (``rpm`` / ``tpm`` in the config): token buckets that every HTTP attempt
of a model client waits on, whatever the concurrency.

Each bucket holds a minute's allowance and refills continuously. A request takes one from the
request bucket and its estimated tokens (prompt estimate + ``max_tokens``, what providers count
against the limit when the request arrives) from the token bucket; when the answer is in, the
difference between the reservation and the tokens really used goes back. Several processes
(Ray workers) share a global limit by each taking an equal share of it
(:meth:`judge.config.JudgeConfig.share`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class Bucket:
    """``per_minute`` units, refilled continuously; starts full. Waiters are served in order."""

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.capacity = float(per_minute)
        self.rate = self.capacity / 60.0
        self.clock, self.sleep = clock, sleep
        self.level = self.capacity
        self.stamp = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def take(self, amount: float) -> None:
        """Wait until ``amount`` (at most the capacity) is available and take it."""
        amount = min(amount, self.capacity)
        async with self._lock:
            self._refill()
            while self.level < amount:
                await self.sleep((amount - self.level) / self.rate)
                self._refill()
            self.level -= amount

    def give(self, amount: float) -> None:
        """Return (or, negative, charge more than was taken): the level stays at most full."""
        self._refill()
        self.level = min(self.capacity, self.level + amount)


class RateLimiter:
    """Requests per minute and tokens per minute (either may be None: no limit)."""

    def __init__(self, rpm: int | None, tpm: int | None) -> None:
        self.requests = Bucket(rpm) if rpm else None
        self.tokens = Bucket(tpm) if tpm else None

    @property
    def active(self) -> bool:
        return self.requests is not None or self.tokens is not None

    async def acquire(self, tokens: int) -> int:
        """Wait for one request and ``tokens``; return the tokens reserved."""
        if self.requests is not None:
            await self.requests.take(1)
        if self.tokens is not None:
            await self.tokens.take(tokens)
            return tokens
        return 0

    def settle(self, reserved: int, used: int) -> None:
        """The answer is in: give back what was reserved and not used (or charge the excess)."""
        if self.tokens is not None and reserved:
            self.tokens.give(reserved - used)
