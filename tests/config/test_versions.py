"""The judge version ids of existing configs (the compatibility contract: computed at e3687f2,
before the versioned and operational settings became two types), and which settings make the
version: the fields of :class:`VersionedSettings`, never those of :class:`OperationalSettings`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judge import version_of
from judge.config import (
    JudgeConfig,
    OperationalSettings,
    VersionedSettings,
    judge_version,
    load_config,
)
from judge.config.versioned import neutral_values
from judge.verdicts import LABELS

ROOT = Path(__file__).resolve().parents[2]
QWEN = "qwen2.5-coder-1.5b-instruct-q4_k_m"

FILES = {
    "judge/config/profiles/embedded.toml": f"{QWEN}@d51d4f893722",
    # read alone it names no model (the embedded default's); a hosted model takes it, below
    "judge/config/profiles/hosted.toml": f"{QWEN}@580dd6e1ec9d",
    "research/configs/batch_v1.toml": f"{QWEN}@eb567fa62d40",
    "research/configs/fit_per_domain.toml": f"{QWEN}@ed6e7fa4c5d8",
    "research/configs/fit_per_domain_first244_preliminary.toml": f"{QWEN}@2fc1035b2655",
    "research/configs/per_claim.toml": f"{QWEN}@acf471ac53bc",
    "research/configs/probe_first21.toml": f"{QWEN}@c9a43dd3a8cd",
    "research/configs/probe_first21_context.toml": f"{QWEN}@2f54a94d6f11",
    "research/configs/probe_first21_context_1500.toml": f"{QWEN}@c1a3010d78ac",
    "research/configs/probe_first21_context_all.toml": f"{QWEN}@42706893ca0c",
    "research/configs/probe_first21_context_all_zh_shift.toml": f"{QWEN}@fb584ae0a396",
    "research/configs/probe_v1.toml": f"{QWEN}@326cd9733150",
    "research/configs/probe_v5_fast.toml": f"{QWEN}@e9558d3c5f06",
    "research/configs/probe_v5_fast_atomic2.toml": f"{QWEN}@6e342490b805",
    "research/configs/probe_v5_sentences.toml": f"{QWEN}@961afdd0c736",
    "research/configs/probe_v6.toml": f"{QWEN}@7d4226c6bd2b",
    "research/configs/probe_v7.toml": f"{QWEN}@c479fbff30a3",
    "research/configs/probe_v8.toml": f"{QWEN}@d51d4f893722",
    "research/configs/scores_raw.toml": f"{QWEN}@6089f4693b35",
    "research/configs/scores_v1.toml": f"{QWEN}@d063cdfc9af4",
    "research/configs/scores_v1_abstention.toml": f"{QWEN}@a938768a2d7b",
    "research/configs/scores_v1_bias_only.toml": f"{QWEN}@9aab8b30bf83",
    "research/configs/scores_v1_linear.toml": f"{QWEN}@30b89ca9b24a",
    "research/configs/scores_v1_linear_t244.toml": f"{QWEN}@adc0208a17f4",
    "research/configs/scores_v1_linear_t244_text.toml": f"{QWEN}@d5cd53d81137",
    "research/configs/scores_v1_linear_t374.toml": f"{QWEN}@7fbea14a94e7",
    "research/configs/scores_v1_linear_t868_text.toml": f"{QWEN}@932b237955e6",
    "research/configs/scores_v2_raw.toml": f"{QWEN}@8909dc6c5ff4",
}

#: the tests' config (tests/conftest.py) and its id
BASE: dict[str, Any] = {"model": "fake/x", "retries": 1, "timeout_s": 30, "strategy": "batch",
                        "signals": False}
BASE_ID = "x@963af5d2e43b"

#: one versioned setting changed from BASE, and the id it gives
CHANGED: dict[str, tuple[Any, str]] = {
    "temperature": (0.5, "x@4e1f536e634d"),
    "seed": (3, "x@3626a613f36a"),
    "max_tokens": (2000, "x@fe870224ead2"),
    "prompts": ({"split_claims": "v1", "verify_claims": "v1"}, "x@e5d66821217f"),
    "schema_version": ("2", "x@7729bdc0e9fe"),
    "signals": (True, "x@e788b4b54aff"),
    "support_overlap_min": (0.4, "x@65f8ba57a543"),
    "opinion_overlap_max": (0.2, "x@6b0b7da79356"),
    "numbers_overlap_min": (0.3, "x@77a746cf50e1"),
    "contradiction_overlap_min": (0.5, "x@fddb77ec2fa0"),
    "abstention_check": (True, "x@29b5feedeef8"),
    "abstention_covered_min": (0.7, "x@c1ef99b442f7"),
    "abstention_silent_max": (0.2, "x@d8b002312cee"),
    "review_strength_below": (0.1, "x@e7600427efc3"),
    "label_bias": ({"supported": -1.0}, "x@4edcf7b50f88"),
    "review_support_below": (0.3, "x@9e21a84a1c82"),
    "verify_batch_size": (7, "x@1b98d881b4d8"),
    "max_claims_per_answer": (12, "x@07e8aa885546"),
    "require_generator": (True, "x@cbafd6182bc8"),
    "context_tokens": (32000, "x@7061b8516ceb"),
    "one_call": (True, "x@1f4b02f01fca"),
    "split_atomic": (True, "x@f1930573beeb"),
    "reuse_instructions": (True, "x@6977d3d999d7"),
    "label_logprobs": ("auto", "x@df0be4b6d3ce"),
}

#: one operational setting changed from BASE: the id stays BASE_ID
OPERATIONAL_CHANGES: dict[str, Any] = {
    "api_base": "http://x", "timeout_s": 9.0, "retries": 4, "reasks": 2, "backoff_s": 2.0,
    "breaker_after": 9, "concurrency": 3, "call_concurrency": 5, "rpm": 10, "tpm": 1000,
    "review": {"target_recall": 0.8, "confidence": 0.95, "informative_share": 0.2},
    # how a run reads an answer that cites nothing: written into the stored record instead
    "uncited": "missing_citation",
}

SCORE_MODEL = {"weights": {label: {"overlap": 1.0} for label in LABELS},
               "intercept": {label: 0.0 for label in LABELS}}
SCORES: dict[str, Any] = {**BASE, "strategy": "scores",
                          "prompts": {"split_claims": "v2", "choose_label": "v1"}}
PROBE: dict[str, Any] = {**BASE, "strategy": "probe", "prompts": {"split_claims": "v2"},
                         "probe_head": {"file": "builtin:uniform.json", "sha256": "ab" * 32}}

#: configs of the other strategies and their rules, and their ids
OTHERS: dict[str, tuple[dict[str, Any], str]] = {
    "per_claim": ({**BASE, "strategy": "per_claim", "signals": True,
                   "prompts": {"split_claims": "v1", "label_claim": "v1"}}, "x@b77ccd93921b"),
    "scores": (SCORES, "x@4b3478c39161"),
    "scores+excerpts": ({**SCORES, "excerpts": "answer"}, "x@caa61b90b9c8"),
    "scores+score_model": ({**SCORES, "score_model": SCORE_MODEL}, "x@8392d3263471"),
    "scores+domain_rules": ({**SCORES, "domain_rules": {"legal": {
        "score_model": SCORE_MODEL, "review_support_below": 0.4}}}, "x@cee819b73242"),
    "probe": (PROBE, "x@b1c2e5b38d72"),
    "probe+embedded": ({**PROBE, "model": "embedded/x"}, "x@b903f004bbe1"),
    "probe+layers": ({**PROBE, "model": "embedded/x", "probe_layers": 21}, "x@00ba2ed14cf7"),
    "probe+excerpt_chars": ({**PROBE, "probe_excerpt_chars": 1500}, "x@7cfe2534012f"),
    "probe+endpoint": ({**PROBE, "probe_endpoint": {"model": "openai/served-7b",
                                                     "api_base": "http://127.0.0.1:1/v1"}},
                       "x@5cb700ad51d3"),
    "probe+endpoint+normalized": ({**PROBE, "probe_endpoint": {
        "model": "openai/served-7b", "api_base": "http://127.0.0.1:1/v1", "normalized": True}},
        "x@8f541370ef47"),
    "probe+domain": ({**PROBE, "domain_rules": {"legal": {
        "probe_head": {"file": "/x/h.json", "sha256": "cd" * 32},
        "review_support_below": 0.2}}}, "x@14925656d3d6"),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_configs_in_the_repository_keep_their_version_ids(name: str) -> None:
    assert version_of(JudgeConfig.load(ROOT / name)) == FILES[name]


def test_every_config_file_is_pinned() -> None:
    found = {str(p.relative_to(ROOT)) for p in [*ROOT.glob("judge/config/profiles/*.toml"),
                                                 *ROOT.glob("research/configs/*.toml")]}
    assert found == set(FILES)


def test_the_defaults_keep_their_version_ids() -> None:
    assert version_of(JudgeConfig()) == f"{QWEN}@7046a89609f7"
    assert version_of(load_config(None)) == f"{QWEN}@d51d4f893722"
    assert version_of(JudgeConfig.model_validate(BASE)) == BASE_ID


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_each_versioned_setting_keeps_its_part_in_the_id(name: str) -> None:
    value, expected = CHANGED[name]
    assert version_of(JudgeConfig.model_validate({**BASE, name: value})) == expected


def test_each_atomic_rule_has_its_id_and_the_first_keeps_true_s() -> None:
    ids = {rule: version_of(JudgeConfig.model_validate({**BASE, "split_atomic": rule}))
           for rule in ("atomic/v1", "atomic/v2")}
    assert ids == {"atomic/v1": CHANGED["split_atomic"][1], "atomic/v2": "x@41c22b8a54c1"}


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_the_other_strategies_keep_their_version_ids(name: str) -> None:
    data, expected = OTHERS[name]
    assert version_of(JudgeConfig.model_validate(data)) == expected


def test_a_domain_rule_keeps_its_version_id() -> None:
    config = JudgeConfig.model_validate({**SCORES, "score_model": SCORE_MODEL, "domain_rules": {
        "legal": {"score_model": SCORE_MODEL, "review_support_below": 0.4}}})
    assert version_of(config.rule_for("legal")[1]) == "x@2b58ddf98e85"


def test_operational_settings_leave_the_id_alone() -> None:
    assert set(OPERATIONAL_CHANGES) == set(OperationalSettings.model_fields)
    for name, value in OPERATIONAL_CHANGES.items():
        assert version_of(JudgeConfig.model_validate({**BASE, name: value})) == BASE_ID, name


def test_a_probe_endpoints_address_is_not_part_of_the_id_what_it_serves_is() -> None:
    endpoint = {"model": "openai/served-7b", "api_base": "http://127.0.0.1:1/v1"}
    first = version_of(JudgeConfig.model_validate({**PROBE, "probe_endpoint": endpoint}))
    moved = {**endpoint, "api_base": "http://gpu-box:8000/v1"}
    assert version_of(JudgeConfig.model_validate({**PROBE, "probe_endpoint": moved})) == first
    other = {**endpoint, "model": "openai/served-70b"}
    assert version_of(JudgeConfig.model_validate({**PROBE, "probe_endpoint": other})) != first


def test_every_field_is_in_exactly_one_of_the_two_types() -> None:
    versioned, operational = set(VersionedSettings.model_fields), set(OperationalSettings.model_fields)
    assert not versioned & operational
    assert set(JudgeConfig.model_fields) == versioned | operational
    # every versioned field changes the id when it leaves its default
    exercised = {"model"} | set(CHANGED) | {"strategy", "excerpts", "score_model",
                                            "domain_rules", "probe_head", "probe_layers",
                                            "probe_endpoint", "probe_excerpt_chars", "probe_reader"}
    assert exercised == versioned


def test_the_version_is_a_function_of_the_versioned_part_alone() -> None:
    hashes = {"split_claims/v2": "aa", "verify_claims/v2": "bb"}
    config = JudgeConfig.model_validate({**BASE, "concurrency": 7, "signals": True})
    assert judge_version(config.versioned, hashes) == judge_version(config, hashes)
    assert config.versioned.versioned_fields() == config.versioned_fields()
    assert config.operations.concurrency == 7
    again = JudgeConfig(**config.versioned.model_dump(), **config.operations.model_dump())
    assert again == config


def test_neutral_values_are_the_defaults() -> None:
    # a field at its neutral value is left out of the hash (it was added after the first
    # versions were published); the neutral value is the behaviour from before it existed
    neutral = neutral_values()
    assert neutral == JudgeConfig.NEUTRAL
    assert set(neutral) == {"contradiction_overlap_min", "abstention_check",
                            "abstention_covered_min", "abstention_silent_max", "label_bias",
                            "review_support_below", "score_model", "domain_rules",
                            "require_generator", "context_tokens", "excerpts", "one_call",
                            "probe_head", "probe_layers", "probe_endpoint", "split_atomic",
                            "reuse_instructions", "probe_excerpt_chars", "probe_reader",
                            "label_logprobs"}
    for name, value in neutral.items():
        assert VersionedSettings.model_fields[name].get_default(call_default_factory=True) \
            == value
        assert name not in JudgeConfig.model_validate(BASE).versioned_fields()


def test_a_hosted_model_that_names_no_strategy_runs_the_hosted_default(tmp_path: Path) -> None:
    from judge.config import HOSTED_PROFILE

    bare = tmp_path / "judge.toml"  # what `judge init` writes
    bare.write_text('[judge]\nmodel = "openai/gpt-4.1-mini"\n', encoding="utf-8")
    config = JudgeConfig.load(bare)
    assert (config.strategy, config.one_call, config.label_logprobs) == ("batch", True, "auto")
    assert config.prompts == {"split_claims": "v2", "verify_claims": "v3",
                              "judge_answer": "v2"} == HOSTED_PROFILE["prompts"]
    assert version_of(config) == "gpt-4.1-mini@fb0b3668c635"
    assert load_config(None, model="openai/gpt-4.1-mini") == config  # the CLI's --model
    own = tmp_path / "own.toml"  # what the config sets wins
    own.write_text('[judge]\nmodel = "openai/gpt-4.1-mini"\none_call = false\n',
                   encoding="utf-8")
    assert (JudgeConfig.load(own).one_call, JudgeConfig.load(own).label_logprobs) == \
        (False, "auto")
    named = tmp_path / "named.toml"  # a config that names its strategy: the library defaults
    named.write_text('[judge]\nmodel = "openai/gpt-4.1-mini"\nstrategy = "batch"\n',
                     encoding="utf-8")
    library = JudgeConfig.load(named)
    assert (library.one_call, library.label_logprobs) == (False, False)
    assert library.prompts == {"split_claims": "v2", "verify_claims": "v2"}
    assert library == JudgeConfig(model="openai/gpt-4.1-mini")
    # an embedded model keeps its own: the default profile, or the library defaults
    assert JudgeConfig.load(None).strategy == "probe"
    other = load_config(None, model="embedded/other-model")
    assert (other.strategy, other.one_call) == ("batch", False)


def test_a_bare_probe_strategy_with_the_embedded_model_uses_its_pinned_head(
        tmp_path: Path) -> None:
    from judge.config import EMBEDDED_PROFILE, JudgeConfig

    bare = tmp_path / "judge.toml"
    bare.write_text('[judge]\nstrategy = "probe"\n', encoding="utf-8")
    config = JudgeConfig.load(bare)
    assert config == JudgeConfig.load(None)  # the same judge as no config at all
    assert config.probe_head is not None
    assert config.probe_head.file == EMBEDDED_PROFILE["probe_head"]["file"]
    own = tmp_path / "own.toml"  # what the config sets wins
    own.write_text('[judge]\nstrategy = "probe"\nreview_support_below = 0.4\n',
                   encoding="utf-8")
    assert JudgeConfig.load(own).review_support_below == 0.4
    assert JudgeConfig.load(own).probe_layers == EMBEDDED_PROFILE["probe_layers"]
