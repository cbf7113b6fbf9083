"""The structured outputs' JSON schemas (judge.models.schemas): built once per class, and each
caller given a copy of its own."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from judge.models.schemas import CompactVerifyOutput, SplitOutput, SplitOutputV2


@pytest.mark.parametrize("model", [SplitOutput, SplitOutputV2, CompactVerifyOutput])
def test_each_caller_gets_its_own_copy_of_the_schema(model: type[BaseModel]) -> None:
    first = model.model_json_schema()
    first["properties"].clear()
    first.setdefault("$defs", {}).clear()
    first["added"] = [1]
    again = model.model_json_schema()
    assert again != first
    assert again["properties"]
    assert "added" not in again
    assert again is not model.model_json_schema()


def test_the_schema_is_what_pydantic_builds_without_titles_when_bare() -> None:
    plain = BaseModel.model_json_schema.__func__(SplitOutput)  # type: ignore[attr-defined]
    assert SplitOutput.model_json_schema() == plain
    assert CompactVerifyOutput.bare
    bare = CompactVerifyOutput.model_json_schema()
    assert "title" not in bare and bare["properties"]
    assert "title" in BaseModel.model_json_schema.__func__(CompactVerifyOutput)  # type: ignore[attr-defined]
