"""A stated recall for a judge that answers with labels (strategy ``batch``): with a provider
that returns log-probabilities every gold claim gets a support from its label's tokens and
`judge queue threshold --gold` sets a point that states its recall; with one that returns
none it sets and stores no point (never one at support 0) and says what the label rule's
flags catch on the gold, a lower bound, and how to get a support score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import scipy.stats as sps
from typer.testing import CliRunner

from judge.api import eval_gold
from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.store import Store
from tests.conftest import FAKE_MODEL, write_jsonl
from tests.fakes import FakeLLM, claim_texts, rule_responder, with_label_logprobs

WORDS = ("river", "bridge", "tower", "harbour", "market", "garden", "valley", "station")


def gold_items() -> tuple[list[dict[str, Any]], dict[str, float]]:
    """60 gold claims, ten to an answer, and the support the scripted provider gives each: 30
    supported ones it finds in their source (support 0.70 to 0.99), 24 problems it does not
    find (0.02 to 0.25, labelled not_in_source by the model) and 6 problems it finds and calls
    supported although people rejected them (0.40 to 0.60): the labels miss those 6."""
    rows, support = [], {}
    for k in range(60):
        word = f"{WORDS[k % len(WORDS)]} {chr(97 + k % 26)}{chr(97 + k // 26)}"
        if k < 30:
            claim, label, p, seen = f"The {word} is open.", "supported", 0.70 + k * 0.01, None
        elif k < 54:
            claim, label, p = f"The {word} is closed.", "not_in_source", 0.02 + (k - 30) * 0.01
            seen = f"The {word} is open."
        else:
            claim, label, p, seen = f"The {word} is new.", "contradicted", 0.40 + (k - 54) * 0.04, None
        rows.append((k, claim, label, seen or claim))
        support[claim] = round(p, 4)
    items = []
    for group in range(6):  # ten claims of one answer: judged in one verify call
        members = [r for r in rows if r[0] % 6 == group]
        source = {"id": "S1", "text": "Notes: " + " ".join(seen for *_, seen in members)}
        answer = " ".join(claim for _, claim, _, _ in members)
        items += [{"id": f"g{k}", "answer_id": f"a{group}", "answer": answer, "claim": claim,
                   "label": label, "annotator": "human:ana", "sources": [source]}
                  for k, claim, label, _ in members]
    return items, support


def judged(tmp_path: Path, fake: FakeLLM, logprobs: bool) -> tuple[Path, Path, dict[str, float]]:
    items, support = gold_items()
    if logprobs:
        fake.responder = with_label_logprobs(
            rule_responder, lambda user, label, i: support[claim_texts(user)[i][1]])
    gold = write_jsonl(tmp_path / "gold.jsonl", items)
    db = tmp_path / "j.db"
    config = JudgeConfig(model=FAKE_MODEL, label_logprobs=True,
                         prompts={"split_claims": "v2", "verify_claims": "v3"})
    eval_gold(gold, config=config, db=db)
    return gold, db, support


def threshold(db: Path, gold: Path) -> Any:
    _register()
    return CliRunner().invoke(app, ["queue", "threshold", "--db", str(db), "--gold", str(gold),
                                    "--json"])


def stored(db: Path, sql: str) -> list[dict[str, Any]]:
    store = Store.open(db)
    try:
        return list(store.rows(sql))
    finally:
        store.close()


def test_with_logprobs_every_gold_claim_has_a_support_and_the_point_states_its_recall(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    gold, db, support = judged(tmp_path, fake_llm, logprobs=True)
    rows = stored(db, "select c.text, v.support, v.label from verdicts v "
                      "join claims c on c.id = v.claim_id")
    assert len(rows) == 60
    assert {r["text"]: r["support"] for r in rows} == pytest.approx(support, abs=1e-4)
    result = threshold(db, gold)
    assert result.exit_code == 0, result.output
    (point,) = json.loads(result.output)["points"]
    # 30 problems, none may be missed for recall >= 0.9 with 90% confidence: the threshold
    # lies just above the highest problem's support (0.60), below the supported ones' 0.70
    assert point["sufficient"] and 0.60 < point["threshold"] <= 0.70
    assert point["statement"].startswith(f"support < {point['threshold']:.4g}, set on 60")
    assert "recall >= 0.90 with 90% confidence" in point["statement"]
    assert stored(db, "select threshold from operating_points") == [
        {"threshold": point["threshold"]}]


def test_without_logprobs_no_point_is_set_and_the_label_rule_s_catch_is_stated(
        tmp_path: Path, fake_llm: FakeLLM) -> None:
    gold, db, _ = judged(tmp_path, fake_llm, logprobs=False)
    assert all(r["support"] is None for r in stored(db, "select support from verdicts"))
    result = threshold(db, gold)
    assert result.exit_code == 3  # no threshold set, as with too little gold
    text = " ".join(result.output.split())
    assert "support < 0" not in text and "expected load" not in text
    assert "gives no support score on the gold" in text
    # the labels flag the 24 problems the model did not find, not the 6 it called supported
    bound = sps.beta.ppf(0.1, 24, 30 - 24 + 1)
    assert (f"its label rule flags 24 of 30 gold problem claims (60 gold claims): recall >= "
            f"{bound:.2f} with 90% confidence (a lower bound of what the labels catch, not a "
            "tunable point; 80% on the gold)") in text
    assert 'label_logprobs = "auto"' in text  # the fix
    assert stored(db, "select * from operating_points") == []
