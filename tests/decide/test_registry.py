"""The strategy registry: a strategy declared in one place (its class and its template) is one
config validation and the pipeline accept, with no other file touched."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge import version_of
from judge.api import judge_file
from judge.config import JudgeConfig
from judge.decide import Decision, PerClaim
from judge.decide.excerpts import excerpt_data, locate_excerpts
from judge.decide.registry import (
    StrategySpec,
    names,
    prompt_owners,
    register,
    spec_of,
    unregister,
)
from judge.models.prompts import prompts_dir, render
from judge.models.schemas import ClaimJudgement, ClaimLabel
from judge.records import AnswerRecord
from judge.store import Store
from judge.verdicts import Claim
from judge.version import pin
from tests.conftest import FAKE_MODEL, write_jsonl
from tests.fakes import FakeLLM

TEMPLATE = """{# toy_claim v1: a strategy declared by a test. #}
{% block system %}
TOY STRATEGY. Say whether the excerpts state the claim. Answer with JSON only.
{% endblock %}
{% block user %}
{% for e in excerpts %}
<<{{ boundary }} source_id={{ e.source_id | tojson_data }}
{{ e.text }}
{{ boundary }}>>
{% endfor %}
<<{{ boundary }}
{{ claim }}
{{ boundary }}>>
{% endblock %}
"""


class ToyStrategy(PerClaim):
    """One label per claim on the program's excerpts, asked with the toy's own template."""

    async def one(self, record: AnswerRecord, claim: Claim, run_id: str | None) -> Decision:
        located = locate_excerpts(claim.text, record)
        prompt = render("toy_claim", self.config.prompts["toy_claim"], self.root,
                        claim=claim.text, excerpts=excerpt_data(located))
        out, call = await self.client.structured(prompt, ClaimLabel, "label", run_id)
        subtype = None if out.label == "supported" else "unsupported_addition"
        judgement = ClaimJudgement(claim=1, label=out.label, subtype=subtype, rationale="toy")
        return Decision(claim, judgement, None, [call], located=located)


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StrategySpec]:
    root = tmp_path / "prompts"
    shutil.copytree(prompts_dir(), root)
    (root / "toy_claim").mkdir()
    (root / "toy_claim" / "v1.j2").write_text(TEMPLATE, encoding="utf-8")
    monkeypatch.setenv("CLAIM_JUDGE_PROMPTS", str(root))
    spec = register(StrategySpec("toy", ToyStrategy, "toy_claim", prompt_version="v1"))
    yield spec
    unregister("toy")


def test_the_builtin_strategies_are_declared_with_their_prompts() -> None:
    assert names() == ["batch", "per_claim", "scores", "probe"]
    assert prompt_owners() == {
        "split_claims": "all", "verify_claims": "batch", "judge_answer": "batch",
        "label_claim": "per_claim", "choose_label": "scores", "probe_claim": "probe"}
    assert spec_of("probe").rule_setting == "probe_head"


def test_an_unknown_strategy_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown strategy 'toy'; known: 'batch', 'per_claim'"):
        JudgeConfig(strategy="toy")


def test_a_declared_strategy_validates_and_pins_its_prompt(toy: StrategySpec) -> None:
    config = JudgeConfig(model=FAKE_MODEL, strategy="toy")
    assert config.prompts == {"split_claims": "v2", "verify_claims": "v2", "toy_claim": "v1"}
    assert config.rule_for("docs") == (None, config)  # no domain rules
    with pytest.raises(ValueError, match="score_model decides from option scores: it needs "
                                         "strategy 'scores', not 'toy'"):
        JudgeConfig(strategy="toy", score_model=_score_model())
    assert "toy_claim/v1" in pin(config).templates
    with pytest.raises(ValueError, match="names no version for prompt 'toy_claim'"):
        pin(config.model_copy(update={"prompts": {"split_claims": "v2"}}))


def test_a_declared_strategy_judges_through_the_pipeline(
    toy: StrategySpec, tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    source = {"id": "S1", "title": "auth", "text": "401 means the user is not authenticated."}
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "a1", "answer": "401 means the user is not authenticated [S1]. 404 is a "
                              "teapot [S1].", "sources": [source]}])
    config = JudgeConfig(model=FAKE_MODEL, retries=1, timeout_s=30, strategy="toy")
    results = judge_file(path, config=config, db=store)
    asked = [c for c in fake_llm.calls if "TOY STRATEGY" in c["messages"][0]["content"]]
    assert len(asked) == 2
    labels = {r["claim"].split()[0]: r["label"] for r in store.verdict_rows()}
    assert labels == {"401": "supported", "404": "not_in_source"}
    assert results.summary.judge_version == version_of(config)


def _score_model() -> dict[str, object]:
    from judge.config.score_model import FEATURES

    labels = ["supported", "contradicted", "not_in_source", "not_verifiable"]
    return {"intercept": dict.fromkeys(labels, 0.0),
            "weights": {label: dict.fromkeys(FEATURES, 0.0) for label in labels}}
