"""A known store for the queue, review and service tests, judged by the scripted fake provider.

Composition (``KNOWN``): 64 claims that pass (supported, every check passed), 6 claims the
fake judge labels ``not_in_source``, 2 claims citing a source that does not exist
(``citation_exists`` fails; the program derives ``misattribution``), 1 ``judge_error`` and 1
answer refused for self-grading. Judged once per test session; each test gets a copy.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.runs.summary import RunSummary
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, Reply, install, rule_responder

KNOWN = {"passed": 64, "not_in_source": 6, "failed_check": 2, "judge_error": 1, "refused": 1}
RATIONALE_SENTINEL = "RATIONALE-SENTINEL-7Q"


def word(i: int) -> str:
    """A digit-free token per number (numbers would trigger numbers_match)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i // 26 % 26] + letters[i % 26] + "x"


def passed_text(i: int) -> str:
    return f"Item {word(i)} is listed in the register."


def known_records() -> list[dict[str, Any]]:
    source_text = " ".join(passed_text(i) for i in range(64)) + " Renewals close in spring."
    source = {"id": "S1", "title": "Register", "text": source_text}
    records: list[dict[str, Any]] = []
    for a in range(16):  # 16 answers x 4 passing claims
        sentences = " ".join(f"{passed_text(a * 4 + k)} [S1]" for k in range(4))
        records.append({"id": f"pass-{a:02d}", "answer": sentences, "sources": [source]})
    for k in range(6):  # not in the source
        records.append({"id": f"nis-{k}", "sources": [source],
                        "answer": f"Item {word(100 + k)} was removed last winter [S1]."})
    for k in range(2):  # supported, but cites a source that does not exist
        records.append({"id": f"badcite-{k}", "sources": [source],
                        "answer": f"{passed_text(k)} [S9]"})
    records.append({"id": "broken", "sources": [source],
                    "answer": "BROKEN renewals close in spring [S1]."})
    records.append({"id": "selfmade", "sources": [source], "generator": "other/judge-model",
                    "answer": f"{passed_text(5)} [S1]"})
    return records


def known_responder(schema: str, messages: list[dict[str, Any]]) -> str | Reply:
    """The rule responder, with a sentinel rationale, and garbage for 'BROKEN' claims."""
    text = messages[-1]["content"]
    if "Split" in schema:
        return rule_responder(schema, messages)
    if "BROKEN" in text.split("Claim 1", 1)[-1]:
        return "not json"
    out = json.loads(rule_responder(schema, messages))
    for j in out["judgements"]:
        j["rationale"] = f"{RATIONALE_SENTINEL} {j['label']}"
    return json.dumps(out)


def build_known_store(tmp: Path, store: Store, config: JudgeConfig, fake: FakeLLM) -> RunSummary:
    fake.responder = known_responder
    path = write_jsonl(tmp / "known.jsonl", known_records())
    return judge_file(path, config=config, db=store).summary


@cache
def _known_db() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="judge-known-"))
    store = Store.open(folder / "known.db")
    try:
        build_known_store(folder, store, JudgeConfig(model="fake/judge-model", retries=1),
                          install(FakeLLM()))
    finally:
        store.close()
    return folder / "known.db"


def known_store(folder: Path) -> Store:
    """A fresh copy of the known store in ``folder``."""
    target = folder / "known.db"
    shutil.copyfile(_known_db(), target)
    return Store.open(target)
