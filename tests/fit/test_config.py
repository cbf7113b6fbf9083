"""The fitted config keeps everything of the version it was fitted from but the rule, and its
TOML reads back as the same judge version."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np

from judge.config import JudgeConfig
from judge.config.score_model import DomainRule
from judge.fitting.logistic import Fitted
from judge.fitting.run import candidate_config, rule_features, version_of
from judge.fitting.toml import config_toml
from tests.fit.synthetic import constant_rule


def fitted(label: str = "contradicted") -> Fitted:
    return Fitted(constant_rule(label), 10.0, 0.45, ("overlap",), 50, {}, {},
                  {"queue_recall": 0.9, "queue_load": 0.5, "target_reached": True})


def test_a_rule_fitted_on_another_models_calls_keeps_that_model_and_its_prompts(
    tmp_path: Path
) -> None:
    """A rule fitted on another model's stored answers must name that model and its prompt
    versions, never the embedded default's: the weights only fit the answers they read."""
    base = JudgeConfig(model="ollama/llama3.1:70b", strategy="scores", signals=True,
                       label_bias={"contradicted": 0.5}, abstention_check=False,
                       prompts={"choose_label": "v2", "split_claims": "v1"})
    new = candidate_config(base, fitted(), None)
    path = tmp_path / "fitted.toml"
    path.write_text(config_toml(new, ["a header", "on two lines"]), encoding="utf-8")
    assert path.read_text().startswith("# a header\n# on two lines\n[judge]\n")
    loaded = JudgeConfig.load(path)
    assert loaded.model == "ollama/llama3.1:70b"
    assert loaded.prompts == {"split_claims": "v1", "choose_label": "v2"}
    assert loaded.abstention_check is False and loaded.review_support_below == 0.45
    assert loaded.strategy == "scores" and loaded.score_model == constant_rule("contradicted")
    # the linear rule replaces the bias rule and the signal overrides
    assert loaded.label_bias == {} and loaded.signals is False
    assert tomllib.loads(path.read_text())["judge"]["signals"] is False
    assert version_of(loaded) == version_of(new) != version_of(base)
    assert rule_features(base, None)[0] == "lp_supported"  # no rule before: every feature


def test_a_domain_rule_is_added_and_the_rest_is_kept(tmp_path: Path) -> None:
    base = JudgeConfig(model="fake/m", strategy="scores", score_model=constant_rule("supported"),
                       review_support_below=0.3,
                       prompts={"split_claims": "v1", "choose_label": "v1"},
                       domain_rules={"review:q 1".replace(" ", "-"): DomainRule(
                           score_model=constant_rule("not_verifiable"))})
    new = candidate_config(base, fitted(), "support.tickets")
    assert new.score_model == base.score_model and new.review_support_below == 0.3
    assert set(new.domain_rules) == {"review:q-1", "support.tickets"}
    assert new.domain_rules["support.tickets"].review_support_below == 0.45
    text = config_toml(new)
    assert '[judge.domain_rules."review:q-1"]' in text
    assert '[judge.domain_rules."support.tickets".score_model.weights.supported]' in text
    loaded = JudgeConfig.model_validate(tomllib.loads(text)["judge"])
    assert loaded.versioned_fields() == new.versioned_fields()
    assert np.isclose(loaded.domain_rules["support.tickets"].review_support_below, 0.45)
