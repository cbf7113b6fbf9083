"""The public surface of issue 28: the judge version without a pipeline, one answer view, the
review loop, one error root, one options type, keyword-only stores, the one version number."""

from __future__ import annotations

import builtins
import importlib
import importlib.metadata
import inspect
import io
import json
from pathlib import Path

import pytest

import judge
from judge.config import JudgeConfig
from judge.models.client import ModelClient
from judge.pipeline import Pipeline
from judge.store import opened
from tests.api.test_api import GOOD
from tests.fakes import FakeLLM

PUBLIC_FUNCTIONS = ("judge_answers", "judge_file", "eval_gold", "calibrate", "drift", "fit",
                    "answer", "build_queue", "record_review", "adjudicate", "export_gold",
                    "load_config", "version_of", "read_dataset", "export", "import_reviews")


def test_version_of_is_the_pipelines_version_and_keeps_published_ids(config: JudgeConfig) -> None:
    for cfg in (config, judge.load_config(None), config.model_copy(update={"concurrency": 9})):
        assert judge.version_of(cfg) == Pipeline(cfg, ModelClient(cfg, None, replay=True)
                                                 ).judge_version
    published = JudgeConfig(strategy="per_claim", signals=True,
                            prompts={"split_claims": "v1", "label_claim": "v1"})
    assert judge.version_of(published) == "qwen2.5-coder-1.5b-instruct-q4_k_m@acf471ac53bc"
    with pytest.raises(ValueError, match="no version for prompt"):
        judge.version_of(config.model_copy(update={"prompts": {"split_claims": "v1"}}))


def test_a_run_records_the_version_of_its_config(config: JudgeConfig, fake_llm: FakeLLM) -> None:
    results = judge.judge_answers(GOOD[:1], config=config)
    assert results.summary.judge_version == judge.version_of(config)


def test_answer_is_the_one_view_of_a_stored_answer(config: JudgeConfig, fake_llm: FakeLLM) -> None:
    with opened(None) as store:
        results = judge.judge_answers(GOOD, config=config, db=store)
        view = judge.answer("a2", db=store)
        assert isinstance(view, judge.AnswerView)
        assert view.answer_id == "a2" and view.answer == GOOD[1]["answer"]
        assert [v.verdict() for v in view.verdicts] == results[1].verdicts
        assert view.verdicts[0].citations[0].source == "S1"
        assert view.statuses == ["answered"] and view.refused is None
        refused = judge.answer("a3", db=store, judge_version=results.summary.judge_version)
        assert refused.refused and refused.verdicts == []
        with pytest.raises(judge.NotFound):
            judge.answer("nope", db=store)


def test_the_review_loop_runs_through_the_public_api(
    config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    with opened(None) as store:
        judge.judge_answers(GOOD, config=config, db=store)
        queue = judge.build_queue(db=store, options=judge.QueueOptions(sample_rate=1.0))
        assert isinstance(queue, judge.QueueSummary) and queue.items >= 2
        claim = judge.answer("a2", db=store).verdicts[0].claim_id
        judge.record_review(claim, "not_in_source", subtype="unsupported_addition",
                            annotator="alice", db=store)
        judge.record_review(claim, "supported", annotator="bob", db=store)
        with pytest.raises(judge.ReviewError):  # a reviewer does not adjudicate
            judge.adjudicate(claim, "supported", adjudicator="bob", reason="mine", db=store)
        decided = judge.adjudicate(claim, "not_in_source", subtype="unsupported_addition",
                                   adjudicator="carol", reason="S1 says nothing of it", db=store)
        assert decided["adjudicator"] == "human:carol"
        out = io.StringIO()
        summary = judge.export_gold(out, db=store)
        items = [json.loads(line) for line in out.getvalue().splitlines()]
        assert summary.exported == len(items) >= 1
        gold = next(i for i in items if i["claim_id"] == claim)
        assert gold["label"] == "not_in_source" and gold["adjudication"]["reason"]
        with pytest.raises(judge.JudgeError):
            judge.build_queue(["no-such-run"], db=store)


def test_errors_share_one_root_and_keep_their_old_bases() -> None:
    for name in ("RecordsError", "EvaluationError", "CalibrationRefused", "GoldRejected",
                 "FitError", "FitRefused", "QueueError", "ReviewError", "PeerFormatError",
                 "PromptError", "NotFound"):
        assert issubclass(getattr(judge, name), judge.JudgeError), name
    assert issubclass(judge.RunStopped, judge.JudgeError)
    assert issubclass(judge.RunStopped, RuntimeError)
    for name in ("RecordsError", "EvaluationError", "QueueError", "ReviewError", "GoldRejected"):
        assert issubclass(getattr(judge, name), ValueError), name


def test_judge_answers_and_judge_file_share_one_options_type() -> None:
    answers = inspect.signature(judge.judge_answers).parameters
    from_file = inspect.signature(judge.judge_file).parameters
    for params in (answers, from_file):
        assert "purpose" not in params
        assert params["options"].kind is inspect.Parameter.VAR_KEYWORD
    assert set(judge.JudgeOptions.__annotations__) >= {
        "concurrency", "on_error", "progress", "retry_errors", "max_calls", "max_tokens",
        "max_cost", "executor", "ray_address", "workers"}


def test_an_unknown_option_is_refused(config: JudgeConfig) -> None:
    with pytest.raises(TypeError, match="purpose"):
        judge.judge_answers(GOOD, config=config, purpose="api")  # type: ignore[call-arg]


def test_db_is_keyword_only_and_no_parameter_shadows_a_builtin() -> None:
    shadowing = set(dir(builtins))
    for name in PUBLIC_FUNCTIONS:
        params = inspect.signature(getattr(judge, name)).parameters
        assert not set(params) & shadowing, name
        if "db" in params:
            assert params["db"].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_version_is_the_installed_distributions() -> None:
    assert judge.__version__ == importlib.metadata.version("claim-judge")
    assert "__version__" in judge.__all__


def test_the_packages_are_typed() -> None:
    for package in ("judge", "calibration"):
        root = Path(importlib.import_module(package).__file__ or "").parent
        assert (root / "py.typed").is_file(), package


def test_import_reviews_is_typed() -> None:
    from judge.review.exchange import ImportResult

    assert inspect.signature(judge.import_reviews).return_annotation in (
        ImportResult, "ImportResult")
    assert judge.ImportResult is ImportResult
