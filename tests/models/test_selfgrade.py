from __future__ import annotations

import pytest

from judge.models.identity import model_family, normalize_model, self_grading_reason


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ollama/qwen3.5:9b", "qwen3.5"),
        ("openai/gpt-4o-2024-08-06", "gpt-4o"),
        ("embedded/qwen2.5-coder-1.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b"),
        ("anthropic/claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
    ],
)
def test_normalize_model(raw: str, expected: str) -> None:
    assert normalize_model(raw) == expected


def test_same_model_and_same_family_are_refused_others_are_not() -> None:
    judge = "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert "is the judge model" in (self_grading_reason("qwen2.5-coder-1.5b-instruct", judge) or "")
    assert "same model family" in (self_grading_reason("ollama/qwen3.5:9b", judge) or "")
    assert self_grading_reason("openai/gpt-4o-mini", judge) is None
    assert self_grading_reason(None, judge) is None
    assert model_family("openai/o3-mini") == model_family("gpt-4o") == "gpt"
    assert model_family("mixtral-8x7b") == "mistral"
