"""Shared fixtures: a scripted fake litellm provider (the network edge) and a temp store."""

from __future__ import annotations

import json
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


def write_jsonl(path: Path, records: list[Any]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(rec if isinstance(rec, str) else json.dumps(rec, ensure_ascii=False))
            fh.write("\n")
    return path
