"""Synthetic gold and a scripted judge whose option letters make a rule learnable.

Every gold item is its own answer with one given claim and one source. The fake judge
answers the ``choose_label`` question with the gold label's letter (confidence 0.7), except
for every fifth item, where it is misled: a rejected claim gets ``A`` (supported), a
supported one ``C``. So a rule that reads the letters' log-probabilities reaches about 80%
balanced accuracy, and calls about a fifth of the rejected claims supported (lenient).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.config import JudgeConfig
from judge.config.score_model import FEATURES, ScoreModel
from judge.verdicts import LABELS
from tests.fakes import CHOICE, FakeLLM, choice_reply, rule_responder

FAKE_MODEL = "fake/judge-model"
LETTER = {"supported": "A", "contradicted": "B", "not_in_source": "C", "not_verifiable": "D"}
WORDS = ("river", "bridge", "tower", "harbour", "market", "garden", "valley", "station")


def claim_text(dataset: str, k: int) -> str:
    return f"The {WORDS[k % len(WORDS)]} of {dataset} number {k} opened in {1900 + k}."


def gold_items(n: int, dataset: str = "synthetic", *, annotator: str = "human:ana",
               generator: str | None = None, labels: tuple[str, ...] = LABELS,
               start: int = 0) -> list[dict[str, Any]]:
    items = []
    for k in range(start, start + n):
        label = labels[k % len(labels)]
        source = (f"Records of {dataset}: the {WORDS[k % len(WORDS)]} number {k} opened in "
                  f"{1900 + k} after {k % 7 + 2} years of work.")
        item: dict[str, Any] = {
            "id": f"{dataset}:g{k}:e0", "dataset": dataset,
            "sources": [{"id": "S1", "text": source}], "claim": claim_text(dataset, k),
            "label": label, "subtype": None, "annotator": annotator}
        if generator:
            item["generator"] = generator
        items.append(item)
    return items


def letters_for(items: list[dict[str, Any]]) -> dict[str, tuple[str, float]]:
    """Claim -> (letter, confidence) of the scripted judge (see the module docstring)."""
    out = {}
    for k, item in enumerate(items):
        label = item["label"]
        if k % 5 == 0:
            out[item["claim"]] = ("C" if label == "supported" else "A", 0.7)
        else:
            out[item["claim"]] = (LETTER[label], 0.7)
    return out


def install_letters(fake: FakeLLM, table: dict[str, tuple[str, float]]) -> None:
    def respond(schema: str, messages: list[dict[str, Any]]) -> Any:
        if schema != CHOICE:
            return rule_responder(schema, messages)
        frames = re.findall(r"<<DATA-[0-9a-f]{16}[^\n]*\n(.*?)\nDATA-[0-9a-f]{16}>>",
                            messages[-1]["content"], re.S)
        claim = frames[-1].strip() if frames else ""
        letter, confidence = table.get(claim, ("D", 0.4))
        return choice_reply(letter, confidence)

    fake.responder = respond


def constant_rule(label: str, margin: float = 1.0) -> ScoreModel:
    """A rule that decides ``label`` for every claim (it weighs every feature by 0, so a
    rule fitted to replace it may weigh them all)."""
    return ScoreModel(weights={lab: dict.fromkeys(FEATURES, 0.0) for lab in LABELS},
                      intercept={lab: (margin if lab == label else 0.0) for lab in LABELS})


def scores_config(score_model: ScoreModel | None = None, **extra: Any) -> JudgeConfig:
    return JudgeConfig(model=FAKE_MODEL, strategy="scores", signals=False,
                       prompts={"split_claims": "v1", "choose_label": "v1"},
                       score_model=score_model or constant_rule("supported"), **extra)


def write_gold(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    return path


def write_config(path: Path, config: JudgeConfig) -> Path:
    from judge.fitting.toml import config_toml

    path.write_text(config_toml(config), encoding="utf-8")
    return path


def label_embedder(items: list[dict[str, Any]]) -> Callable[[str], list[float]]:
    """A stand-in hidden state for gold ``items``: the probe prompt's claim gets a one-hot
    vector of its gold label (4 numbers), so a head fitted on them can learn the labels."""
    labels = {i["claim"]: i["label"] for i in items}
    order = ["supported", "not_in_source", "not_verifiable", "contradicted"]

    def embed(text: str) -> list[float]:
        claim = text.split("Claim: ", 1)[-1].split("\n", 1)[0]
        vector = [0.0] * 4
        vector[order.index(labels.get(claim, "supported"))] = 1.0
        return vector

    return embed
