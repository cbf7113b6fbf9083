"""``judge fit`` on a synthetic store judged by the scripted fake provider: the rule is learnt
from stored scores with zero model calls, measured on held-out claims against the current
version, written (with ``--adopt`` only when the adoption rule holds), and the fitted config
judges the same gold claims with zero model calls."""

from __future__ import annotations

import json
import math
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from calibration.stats import wilson_bounds
from judge.api import eval_gold, fit
from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.config.score_model import CORE_FEATURES
from judge.fitting import logistic
from judge.fitting.split import MIN_PER_LABEL
from judge.store import Store
from judge.verdicts import LABELS
from tests.fakes import FakeLLM, install
from tests.fit.synthetic import (
    constant_rule,
    gold_items,
    install_letters,
    letters_for,
    scores_config,
    write_config,
    write_gold,
)

N = 100  # 25 of each label: enough for a fit and its holdout


def _no_nan(token: str) -> float:
    raise AssertionError(f"{token} is not JSON")


def invoke(*args: str) -> Any:
    _register()
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A store whose gold claims were judged by a 'scores' version that calls every claim
    supported (the current version a team would improve on)."""
    folder = tmp_path_factory.mktemp("fit")
    items = gold_items(N)
    fake = install(FakeLLM())
    install_letters(fake, letters_for(items))
    gold = write_gold(folder / "gold.jsonl", items)
    config = write_config(folder / "current.toml", scores_config())
    result = eval_gold(gold, config=config, db=folder / "master.db")
    assert result.summary.model_calls == N
    yield {"folder": folder, "gold": gold, "config": config, "items": items, "fake": fake,
           "version": result.summary.judge_version}


@pytest.fixture
def db(judged: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "judge.db"
    shutil.copy(judged["folder"] / "master.db", path)
    return path


@pytest.fixture
def fake(judged: dict[str, Any]) -> FakeLLM:
    fake = install(judged["fake"])
    fake.calls.clear()
    return fake


def test_the_fit_recovers_a_rule_that_one_feature_decides() -> None:
    rng = np.random.default_rng(0)
    values = []
    y = np.array([k % 4 for k in range(80)])
    for gold in y:
        row = {name: float(rng.normal(0, 0.1)) for name in CORE_FEATURES}
        row["overlap"] = [0.9, 0.6, 0.3, 0.0][gold] + float(rng.normal(0, 0.03))
        values.append(row)
    rule = logistic.fit(logistic.matrix(values, CORE_FEATURES), y, 1.0, CORE_FEATURES)
    pred, probs = logistic.predict(values, rule)
    assert logistic.balanced_log_loss(probs, y) < math.log(4)  # better than knowing nothing
    assert logistic.balanced_accuracy(pred, y) >= 0.9
    assert rule.weights["supported"]["overlap"] > rule.weights["not_verifiable"]["overlap"]
    p_s = probs[:, 0]
    assert p_s[y == 0].mean() > p_s[y != 0].mean()
    # the queue threshold reaches the recall target with 95% confidence, not just reaches it
    q = logistic.queue_threshold(pred, p_s, y, 0.9)
    caught = ((pred != 0) | (p_s < q["review_support_below"]))[y != 0].mean()
    assert caught == pytest.approx(q["queue_recall"], abs=1e-3)
    assert wilson_bounds(float(caught), int((y != 0).sum()))[0] >= 0.9
    # the whole fit, folds by group: the same rule family, and the penalty from the grid
    fitted = logistic.fit_rule(values, y, [k % 10 for k in range(80)], CORE_FEATURES)
    assert fitted.l2 in logistic.LAMBDAS and fitted.n == 80
    assert logistic.balanced_accuracy(logistic.predict(values, fitted.model)[0], y) >= 0.9


def _one_feature_data(n: int, seed: int, flip: bool = False
                      ) -> tuple[list[dict[str, float]], np.ndarray]:
    """Claims whose overlap decides the label (in reverse order with ``flip``)."""
    rng = np.random.default_rng(seed)
    y = np.array([k % 4 for k in range(n)])
    values = []
    for gold in y:
        row = {name: float(rng.normal(0, 0.1)) for name in CORE_FEATURES}
        levels = [0.0, 0.3, 0.6, 0.9] if flip else [0.9, 0.6, 0.3, 0.0]
        row["overlap"] = levels[gold] + float(rng.normal(0, 0.03))
        values.append(row)
    return values, y


def test_shrinking_toward_the_current_rule_adjusts_it_instead_of_replacing_it() -> None:
    """With a prior rule the penalty pulls toward its weights: at a very strong penalty the
    fit keeps them; at a weak one the gold decides; the grid gains stronger penalties."""
    names = CORE_FEATURES
    big, y_big = _one_feature_data(200, 1)
    prior = logistic.fit(logistic.matrix(big, names), y_big, 1.0, names)
    small, y_small = _one_feature_data(24, 2, flip=True)  # a domain where overlap reads reversed
    x = logistic.matrix(small, names)
    kept = logistic.fit(x, y_small, 1e6, names, prior)
    for label in LABELS:
        for name in names:
            assert kept.weights[label][name] == pytest.approx(
                prior.weights[label][name], abs=0.02 + 0.02 * abs(prior.weights[label][name]))
    toward_zero = logistic.fit(x, y_small, 1e6, names)
    assert all(abs(w) < 0.05 for row in toward_zero.weights.values() for w in row.values())
    learnt = logistic.fit(x, y_small, 0.1, names, prior)
    assert learnt.weights["supported"]["overlap"] < learnt.weights["not_verifiable"]["overlap"]
    assert prior.weights["supported"]["overlap"] > prior.weights["not_verifiable"]["overlap"]
    fitted = logistic.fit_rule(small, y_small, [k % 6 for k in range(24)], names, prior=prior)
    assert fitted.shrunk_toward_current and set(fitted.cv_balanced_log_loss) == set(
        logistic.PRIOR_LAMBDAS)
    assert fitted.as_dict()["lambdas"] == list(logistic.PRIOR_LAMBDAS)


def test_fit_json_contract_zero_calls_and_the_config_judges_with_zero_calls(
    judged: dict[str, Any], db: Path, fake: FakeLLM, tmp_path: Path
) -> None:
    out = tmp_path / "new.toml"
    result = invoke("fit", "--db", db, "--gold", judged["gold"], "--output", out, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout, parse_constant=_no_nan)
    assert fake.calls == [] and data["model_calls"] == 0
    assert data["baseline_version"] == judged["version"]
    assert data["judge_version"] != judged["version"]
    assert data["rule"].startswith("adopt the candidate only if")
    h = data["holdout"]
    assert h["n"] == 4 * MIN_PER_LABEL and h["labels"] == dict.fromkeys(LABELS, MIN_PER_LABEL)
    for key in ("balanced_accuracy", "contradicted_recall", "lenient_rate", "queue_recall",
                "queue_load"):
        for who in ("candidate", "baseline"):
            e = h[key][who]
            assert e["ci_low"] <= e["value"] <= e["ci_high"], (key, who)
    # the scripted judge names the right letter for 4 claims in 5: the rule reads it
    assert h["balanced_accuracy"]["candidate"]["value"] >= 0.7
    assert h["balanced_accuracy"]["baseline"]["value"] == 0.25  # it says supported to all
    assert h["lenient_rate"]["baseline"]["value"] == 1.0
    assert data["drift"]["toward_gold"] > data["drift"]["away_from_gold"]
    assert data["drift"]["n"] == h["n"]
    assert data["recommend_adopt"] is True and all(c["holds"] for c in data["checks"])
    assert data["fit"]["n"] == N - h["n"] and data["curve"] is None
    # the written config pins the candidate's version
    config = JudgeConfig.load(out)
    assert config.score_model is not None and config.score_model != constant_rule("supported")
    assert tomllib.loads(out.read_text())["judge"]["strategy"] == "scores"
    # the same claims under the fitted config: the choose_label calls are the stored ones
    again = eval_gold(judged["gold"], config=out, db=db)
    assert fake.calls == [] and again.summary.model_calls == 0
    assert again.summary.judge_version == data["judge_version"]
    assert again.outcome.report.balanced_accuracy.value > 0.25
    assert {r["rule"] for r in Store.open(db).verdict_rows(
        judge_version=data["judge_version"])} == {"default"}


def test_adopt_writes_the_config_only_when_the_rule_holds(
    judged: dict[str, Any], db: Path, fake: FakeLLM, tmp_path: Path
) -> None:
    out = tmp_path / "adopted.toml"
    result = invoke("fit", "--db", db, "--gold", judged["gold"], "-o", out, "--adopt")
    assert result.exit_code == 0, result.output
    assert out.exists() and "recommendation: adopt" in result.stdout
    # a current version that never says supported is never lenient: the fitted rule, which
    # the scripted judge misleads on a fifth of the rejected claims, breaks condition (3)
    strict = write_config(tmp_path / "strict.toml",
                          scores_config(constant_rule("not_in_source")))
    version = eval_gold(judged["gold"], config=strict, db=db).summary.judge_version
    assert fake.calls == []  # the same choose_label calls: all stored
    refused = tmp_path / "refused.toml"
    result = invoke("fit", "--db", db, "--gold", judged["gold"], "-o", refused, "--adopt",
                    "--judge-version", version, "--json")
    assert result.exit_code == 3, result.output
    assert not refused.exists()
    data = json.loads(result.stdout)
    assert data["recommend_adopt"] is False and data["output"] is None
    failed = [c["name"] for c in data["checks"] if not c["holds"]]
    assert failed == ["lenient_rate_within_2_points"]
    assert "lenient_rate_within_2_points fails" in data["not_written"]
    # without --adopt the candidate is written all the same, with the recommendation
    result = invoke("fit", "--db", db, "--gold", judged["gold"], "-o", refused,
                    "--judge-version", version)
    assert result.exit_code == 0 and refused.exists()
    assert "Recommendation: do not adopt" in refused.read_text()
    # nothing held out: nothing measured, never adopted
    result = invoke("fit", "--db", db, "--gold", judged["gold"], "-o", tmp_path / "x.toml",
                    "--adopt", "--holdout", "0", "--judge-version", judged["version"])
    assert result.exit_code == 3 and not (tmp_path / "x.toml").exists()
    assert "nothing held out" in result.output


def test_too_little_gold_says_which_labels_are_short_and_by_how_much(
    judged: dict[str, Any], db: Path, tmp_path: Path
) -> None:
    # 25 supported, 25 contradicted, but only 12 not_in_source and 5 not_verifiable
    items = [i for k, i in enumerate(judged["items"])
             if i["label"] in ("supported", "contradicted")
             or (i["label"] == "not_in_source" and k < 48) or (i["label"] == "not_verifiable"
                                                                and k < 20)]
    gold = write_gold(tmp_path / "few.jsonl", items)
    result = invoke("fit", "--db", db, "--gold", gold, "-o", tmp_path / "x.toml")
    assert result.exit_code == 1
    message = " ".join(result.output.split())
    assert "too little gold" in message
    assert "not_in_source has 12 (needs 8 more)" in message
    assert "not_verifiable has 5 (needs 15 more)" in message
    assert "supported has" not in message.replace("not_supported", "")
    assert not (tmp_path / "x.toml").exists()
    # without a holdout a fit needs half as much
    result = invoke("fit", "--db", db, "--gold", gold, "-o", tmp_path / "x.toml",
                    "--holdout", "0")
    message = " ".join(result.output.split())
    assert result.exit_code == 1 and "not_verifiable has 5 (needs 5 more)" in message
    assert "not_in_source" not in message


def test_gold_labelled_by_a_model_is_refused(judged: dict[str, Any], db: Path,
                                             tmp_path: Path) -> None:
    items = [dict(i) for i in judged["items"]]
    items[3]["annotator"] = "model:gpt-4o"
    gold = write_gold(tmp_path / "model.jsonl", items)
    result = invoke("fit", "--db", db, "--gold", gold, "-o", tmp_path / "x.toml")
    assert result.exit_code == 1
    assert "not a person" in " ".join(result.output.split())


def test_answers_the_judge_family_generated_are_refused(judged: dict[str, Any], db: Path,
                                                        tmp_path: Path) -> None:
    # the same claims, said to be generated by the judge's own model family
    items = [{**i, "generator": "fake/judge-model-v2"} for i in judged["items"]]
    gold = write_gold(tmp_path / "self.jsonl", items)
    with pytest.raises(Exception, match="own model family|self-grading"):
        fit(gold, db=db)
    result = invoke("fit", "--db", db, "--gold", gold, "-o", tmp_path / "x.toml")
    assert result.exit_code == 1 and "family" in result.output


def test_a_version_that_is_not_scores_is_refused(judged: dict[str, Any], db: Path,
                                                 fake: FakeLLM, tmp_path: Path) -> None:
    gold = write_gold(tmp_path / "some.jsonl", judged["items"][:8])
    batch = JudgeConfig(model="fake/judge-model", strategy="batch", signals=False)
    version = eval_gold(gold, config=batch, db=db).summary.judge_version
    result = invoke("fit", "--db", db, "--gold", gold, "-o", tmp_path / "x.toml",
                    "--judge-version", version)
    assert result.exit_code == 1
    assert "strategy 'batch'" in " ".join(result.output.split())


def test_the_learning_curve_reports_quality_against_reviewed_claims(
    judged: dict[str, Any], db: Path, tmp_path: Path
) -> None:
    result = fit(judged["gold"], db=db, curve=True)
    curve = result.to_dict()["curve"]
    assert [p["size"] for p in curve] == [25, 50, 60]  # capped by the 60 fitting claims
    assert [p["draws"] for p in curve] == [3, 3, 1]
    assert curve[0]["below_minimum"] is True and curve[-1]["below_minimum"] is False
    for point in curve:
        for key in ("balanced_accuracy", "queue_recall", "queue_load"):
            e = point[key]
            assert e["ci_low"] <= e["value"] <= e["ci_high"]
            assert e["min"] <= e["value"] <= e["max"]
    # the last point is the rule the fit wrote
    assert curve[-1]["balanced_accuracy"]["value"] == pytest.approx(
        result.holdout["balanced_accuracy"]["candidate"]["value"])  # type: ignore[index]


def test_answers_the_judge_refused_to_grade_are_refused_too(
    judged: dict[str, Any], db: Path, fake: FakeLLM, tmp_path: Path
) -> None:
    mine = gold_items(4, "mine", generator="fake/judge-model")
    gold = write_gold(tmp_path / "mine.jsonl", judged["items"] + mine)
    eval_gold(gold, config=judged["config"], db=db)  # the pipeline refuses to judge them
    assert fake.calls == []
    result = invoke("fit", "--db", db, "--gold", gold, "-o", tmp_path / "x.toml")
    assert result.exit_code == 1
    assert "own family generated" in " ".join(result.output.split())


def test_a_version_without_stored_score_calls_is_refused(
    judged: dict[str, Any], db: Path, tmp_path: Path
) -> None:
    store = Store.open(db)
    store.db.execute("delete from calls where purpose = 'score'")
    store.db.conn.commit()
    store.close()
    result = invoke("fit", "--db", db, "--gold", judged["gold"], "-o", tmp_path / "x.toml")
    assert result.exit_code == 1
    assert "no stored score call" in " ".join(result.output.split())
