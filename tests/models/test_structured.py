"""instructor's check for async validators, remembered per class (judge.models.structured):
the same verdict on every path that calls it, once per class."""

from __future__ import annotations

import asyncio

import pytest
from instructor.v2.core import patch
from instructor.v2.validation import async_validators
from instructor.v2.validation.async_validators import async_field_validator
from pydantic import BaseModel

from judge.models.structured import instructor_client
from tests.conftest import FAKE_MODEL
from tests.fakes import FakeLLM


class Plain(BaseModel):
    label: str


class WithAsyncValidator(BaseModel):
    label: str

    @async_field_validator("label")
    async def check(self, value: str) -> str:
        return value


def test_every_path_of_instructor_uses_the_remembered_check() -> None:
    instructor_client()
    # instructor's async create imports the check by name: it must be the remembered one too
    assert patch.reject_async_validators is async_validators.reject_async_validators
    assert getattr(patch.reject_async_validators, "_claim_judge_memo", False)


def test_the_remembered_check_still_rejects_async_validators_every_time() -> None:
    instructor_client()
    patch.reject_async_validators(Plain)
    patch.reject_async_validators(Plain)  # remembered: passes again
    for _ in range(2):  # a class that failed is never remembered as passed
        with pytest.raises(ValueError, match="async validators"):
            patch.reject_async_validators(WithAsyncValidator)


def test_a_structured_call_with_an_async_validator_fails_before_any_request(
        fake_llm: FakeLLM) -> None:
    client = instructor_client()

    async def call() -> object:
        return await client.create_with_completion(
            model=FAKE_MODEL, messages=[{"role": "user", "content": "x"}],
            response_model=WithAsyncValidator, max_retries=0)

    with pytest.raises(Exception, match="async validators"):
        asyncio.run(call())
    assert fake_llm.calls == []
