"""Parallel slots with the real embedded model (issue 36, slow: about three minutes).

Answers judged two at a time on a runtime of two slots (``CLAIM_JUDGE_SLOTS=2``, the run's
``concurrency = 2``) are decoded together, and each gets its own claims: no cross-talk
between the slots. The calls say they came from a runtime of two slots, and one request at a
time on two slots gives what one slot gives.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_answers
from judge.config import JudgeConfig
from judge.models import embedded, runtime
from judge.store import Store
from tests.conftest import skip_or_fail

pytestmark = [
    pytest.mark.embedded,
    skip_or_fail(importlib.util.find_spec("xllamacpp") is None,
                 "the 'embedded' extra is not installed", "CLAIM_JUDGE_REQUIRE_EMBEDDED"),
]

#: answer id -> (answer, source, a word that is in this answer alone)
SUBJECTS = {
    "gouda": ("Gouda is a Dutch cheese, and it is named after a city in South Holland.",
              "Gouda is a mild Dutch cheese named after the city of Gouda in South Holland.",
              "gouda"),
    "kiwi": ("The kiwi is a flightless bird, and it lives only in New Zealand.",
             "The kiwi is a flightless bird found only in New Zealand.", "kiwi"),
    "violin": ("A violin has four strings, and it is usually played with a bow.",
               "The violin has four strings and is usually played with a bow.", "violin"),
    "tokyo": ("Tokyo hosted the Summer Olympics in 1964, and it hosted them again in 2021.",
              "Tokyo hosted the Summer Olympic Games in 1964 and in 2021.", "tokyo"),
}


def _answers(ids: list[str]) -> list[dict[str, Any]]:
    return [{"id": key, "answer": SUBJECTS[key][0],
             "sources": [{"id": "S1", "text": SUBJECTS[key][1]}]} for key in ids]


def _claims(store: Store) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in store.verdict_rows():
        out.setdefault(row["answer_id"], []).append(row["claim"])
    return out


@pytest.fixture
def slots(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """The embedded runtime reloaded with ``CLAIM_JUDGE_SLOTS`` (set by the test), and the
    most chat requests the runtime held at once; unloaded after, so later tests load the
    default of one slot."""
    seen = {"at_once": 0, "now": 0}
    lock = threading.Lock()
    call = runtime.Runtime._call

    def counted(self: Any, method: str, request: dict[str, Any]) -> dict[str, Any]:
        with lock:
            seen["now"] += 1
            seen["at_once"] = max(seen["at_once"], seen["now"])
        try:
            return call(self, method, request)
        finally:
            with lock:
                seen["now"] -= 1

    monkeypatch.setattr(runtime.Runtime, "_call", counted)
    embedded.unload()
    yield seen
    embedded.unload()


def test_answers_decoded_together_each_get_their_own_claims(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slots: dict[str, int]) -> None:
    monkeypatch.setenv(runtime.ENV_SLOTS, "2")
    config = JudgeConfig.load().model_copy(update={"concurrency": 2})
    store = Store.open(tmp_path / "two.db")
    judge_answers(_answers(list(SUBJECTS)), config=config, db=store)
    info = embedded.runtime_info()
    assert info is not None and info.slots == 2
    assert slots["at_once"] >= 2  # two requests were in the runtime at once
    splits = list(store.db["calls"].rows_where("purpose = 'split'"))
    assert len(splits) == len(SUBJECTS) and all(s["error"] is None for s in splits)
    assert all(s["system_fingerprint"].endswith("+slots2") for s in splits)
    claims = _claims(store)
    assert set(claims) == set(SUBJECTS)
    for key, texts in claims.items():
        joined = " ".join(texts).lower()
        assert SUBJECTS[key][2] in joined, (key, texts)  # its own subject
        others = [SUBJECTS[k][2] for k in SUBJECTS if k != key]
        assert not [w for w in others if w in joined], (key, texts)  # nobody else's


def test_one_request_at_a_time_on_two_slots_gives_what_one_slot_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slots: dict[str, int]) -> None:
    ids = ["gouda", "tokyo"]
    judge_answers(_answers(ids), config=JudgeConfig.load(), db=Store.open(tmp_path / "1.db"))
    info = embedded.runtime_info()
    assert info is not None and info.slots == 1
    one = _claims(Store.open(tmp_path / "1.db"))
    embedded.unload()
    monkeypatch.setenv(runtime.ENV_SLOTS, "2")
    store = Store.open(tmp_path / "2.db")
    judge_answers(_answers(ids), config=JudgeConfig.load(), db=store)  # concurrency 1
    info = embedded.runtime_info()
    assert info is not None and info.slots == 2
    assert slots["at_once"] == 1
    assert _claims(store) == one
