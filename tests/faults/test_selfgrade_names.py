"""Self-grading evasions are refused; other families are judged; a missing generator is counted,
and refused under ``require_generator``."""

from __future__ import annotations

import pytest

from judge.api import judge_answers
from judge.config import JudgeConfig
from judge.models.identity import model_family, normalize_model, self_grading_reason
from tests.fakes import FakeLLM
from tests.faults.selfgrade_names import ALLOWED, REFUSED

REC = {"answer": "Paris is the capital of France [S1].",
       "sources": [{"id": "S1", "text": "Paris is the capital of France."}]}


@pytest.mark.parametrize(("generator", "judge"), REFUSED)
def test_evasive_spellings_are_refused(generator: str, judge: str) -> None:
    assert self_grading_reason(generator, judge), (normalize_model(generator),
                                                   model_family(generator), model_family(judge))


@pytest.mark.parametrize(("generator", "judge"), ALLOWED)
def test_other_families_are_judged(generator: str, judge: str) -> None:
    assert self_grading_reason(generator, judge) is None


def test_the_table_is_large_enough() -> None:
    assert len(REFUSED) >= 40 and len(ALLOWED) >= 5


@pytest.mark.parametrize(("raw", "expected"), [
    ("ft:gpt-4o-mini-2024-07-18:acme::x", "gpt-4o-mini"),
    ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
    ("bedrock/openai.gpt-oss-120b-1:0", "gpt-oss-120b"),
    ("ｇｐｔ－４ｏ", "gpt-4o"),
    ("openai/ gpt-4o\u200b", "gpt-4o"),
])
def test_normalised_names(raw: str, expected: str) -> None:
    assert normalize_model(raw) == expected


def test_the_pipeline_refuses_evasions_counts_missing_generators_and_can_require_them(
    fake_llm: FakeLLM, config: JudgeConfig
) -> None:
    records = [{**REC, "id": "g1", "generator": "ｆａｋｅ／judge\u200b-model"},
               {**REC, "id": "g2", "generator": "fake/ft:judge-model:acme::1"},
               {**REC, "id": "g3", "generator": "\u200b"},
               {**REC, "id": "g4"},
               {**REC, "id": "g5", "generator": "openai/gpt-4o"}]
    results = judge_answers(records, config=config)
    assert [r.status for r in results] == ["refused", "refused", "judged", "judged", "judged"]
    assert results.summary.missing_generator == 2
    strict = config.model_copy(update={"require_generator": True})
    results = judge_answers(records, config=strict)
    assert [r.status for r in results] == ["refused"] * 4 + ["judged"]
    assert "require_generator" in (results[3].refused_reason or "")
    # a neutral default: configs that do not set it keep their judge version
    assert "require_generator" not in config.versioned_fields()
    assert strict.versioned_fields()["require_generator"] is True
