"""Rate limits (``rpm`` / ``tpm``): a minute's allowance, refilled continuously, honoured by
every call in flight, with unused reserved tokens given back; split over Ray workers."""

from __future__ import annotations

import asyncio
from typing import Any

from judge.api import judge_answers
from judge.config import JudgeConfig, OperationalSettings
from judge.models.ratelimit import Bucket, RateLimiter
from tests.fakes import FakeLLM


class Clock:
    """A virtual clock: sleeping advances it, nothing waits for real."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def test_a_bucket_lets_a_minute_through_then_paces() -> None:
    clock = Clock()
    bucket = Bucket(60, clock=clock, sleep=clock.sleep)  # 60 per minute: one per second

    async def take(n: int) -> list[float]:
        stamps = []
        for _ in range(n):
            await bucket.take(1)
            stamps.append(clock.now)
        return stamps

    stamps = asyncio.run(take(70))
    assert stamps[59] == 0.0  # the first minute's allowance at once
    assert abs(stamps[69] - 10.0) < 1e-6  # then one per second
    assert all(b - a >= 1.0 - 1e-6 for a, b in zip(stamps[60:], stamps[61:], strict=False))


def test_concurrent_takers_share_the_limit() -> None:
    clock = Clock()
    bucket = Bucket(120, clock=clock, sleep=clock.sleep)  # two per second

    async def main() -> float:
        await asyncio.gather(*(bucket.take(1) for _ in range(140)))
        return clock.now

    assert abs(asyncio.run(main()) - 10.0) < 1e-6  # 120 at once, 20 more at 2 per second


def test_tokens_not_used_are_given_back() -> None:
    clock = Clock()
    limiter = RateLimiter(None, 1000)
    limiter.tokens = Bucket(1000, clock=clock, sleep=clock.sleep)

    async def main() -> None:
        reserved = await limiter.acquire(900)
        assert reserved == 900 and limiter.tokens is not None
        limiter.settle(reserved, 100)  # the call used 100: 800 come back
        await limiter.acquire(900)

    asyncio.run(main())
    assert clock.now == 0.0  # no wait: the unused reservation came back


def test_a_config_splits_its_limits_over_workers() -> None:
    config = JudgeConfig(model="fake/x", rpm=100, tpm=90_000)
    share = config.share(3)
    assert (share.rpm, share.tpm) == (33, 30_000)
    assert config.share(1) is config
    assert JudgeConfig(model="fake/x").share(4).rpm is None


def test_a_run_with_limits_waits_for_them(fake_llm: FakeLLM, config: JudgeConfig) -> None:
    records = [{"id": f"a{i}", "answer": f"Code {i} means unauthenticated.",
                "sources": [{"id": "S1", "text": f"Code {i} means unauthenticated."}],
                "claims": [{"text": f"Code {i} means unauthenticated.", "citations": ["S1"]}]}
               for i in range(3)]
    limited = config.model_copy(update={"rpm": 6000, "tpm": 10_000_000, "concurrency": 3})
    results = judge_answers(records, config=limited)
    assert results.summary.model_calls == 3
    assert [r.verdicts[0].label for r in results] == ["supported"] * 3


def test_calls_in_flight_default_to_four_per_answer_in_flight() -> None:
    assert JudgeConfig(model="fake/x").calls_in_flight() == 4
    assert JudgeConfig(model="fake/x", concurrency=8).calls_in_flight() == 32
    assert JudgeConfig(model="fake/x", call_concurrency=3).calls_in_flight() == 3
    fields: dict[str, Any] = {"rpm": 1, "tpm": 1, "call_concurrency": 1}
    assert set(fields) <= set(OperationalSettings.model_fields)
