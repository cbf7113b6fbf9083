"""Structured output through instructor over litellm: the response models' JSON schemas and
instructor's wrappers of them, each made once, and the instructor client itself."""

from __future__ import annotations

import logging
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel

from judge.models.lazy_litellm import quiet_litellm

T = TypeVar("T", bound=BaseModel)


@cache
def response_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A response model's JSON schema (built once per model)."""
    return model.model_json_schema()


def _remember_checked_models() -> None:
    """instructor checks every response model for async validators on every call (walking all
    its members, several times per call); a class that passed once passes again, so the check
    runs once per class. Same result, applied process-wide, once: in its module and where
    instructor imported it by name (its async create wrapper, once per call)."""
    from instructor.v2.core import patch
    from instructor.v2.validation import async_validators

    original = async_validators.reject_async_validators
    if getattr(original, "_claim_judge_memo", False):
        return
    passed: set[type] = set()

    def reject_async_validators(response_model: Any) -> None:
        if isinstance(response_model, type) and response_model in passed:
            return
        original(response_model)
        if isinstance(response_model, type):
            passed.add(response_model)

    reject_async_validators._claim_judge_memo = True  # type: ignore[attr-defined]
    async_validators.reject_async_validators = reject_async_validators
    patch.reject_async_validators = reject_async_validators  # type: ignore[attr-defined]


@cache
def instructor_model(model: type[T]) -> type[T]:
    """The response model as instructor uses it (its ``ResponseSchema`` subclass), made once:
    instructor would otherwise create that class, and its JSON schema, on every call."""
    from instructor.v2.core.function_calls import response_schema as wrap

    return wrap(model)


def instructor_client() -> Any:
    """A new instructor client over litellm's ``acompletion`` (JSON-schema mode)."""
    import instructor

    litellm = quiet_litellm()
    # instructor logs each failed try as an error; every try is recorded here instead
    # (call_attempts), so its log would only repeat it on stderr
    logging.getLogger("instructor").setLevel(logging.CRITICAL)
    _remember_checked_models()
    # async_client=True is what instructor detects at run time for acompletion; said
    # explicitly so the type checker picks the AsyncInstructor overload.
    return instructor.from_litellm(
        litellm.acompletion, mode=instructor.Mode.JSON_SCHEMA, async_client=True)
