"""Shared fixtures: a scripted fake litellm provider (the network edge) and a temp store."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.config import JudgeConfig
from judge.store import Store
from tests.fakes import FakeLLM, install, rule_responder

FAKE_MODEL = "fake/judge-model"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    fake = install(FakeLLM(responder=rule_responder))
    yield fake


@pytest.fixture
def config() -> JudgeConfig:
    """The batch strategy without signals: the model's labels as given (core behaviour)."""
    return JudgeConfig(model=FAKE_MODEL, retries=1, timeout_s=30, strategy="batch", signals=False)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "judge.db")
    yield s
    s.close()


def skip_or_fail(missing: bool, reason: str, required_by: str) -> pytest.MarkDecorator:
    """Skip a test when something it needs is missing, unless ``$<required_by>`` is set (CI
    sets it): then the test fails with the reason, so a missing install step cannot pass
    unnoticed as a skip."""
    return pytest.mark.requires(missing=missing, reason=reason, required_by=required_by)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires"):
        if not mark.kwargs["missing"]:
            continue
        if os.environ.get(mark.kwargs["required_by"]):
            pytest.fail(f"{mark.kwargs['reason']}; ${mark.kwargs['required_by']} is set, so "
                        "this must run", pytrace=False)
        pytest.skip(mark.kwargs["reason"])


def write_jsonl(path: Path, records: list[Any]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(rec if isinstance(rec, str) else json.dumps(rec, ensure_ascii=False))
            fh.write("\n")
    return path
