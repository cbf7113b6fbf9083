"""``judge fit`` for strategy ``probe``: a head learnt from the stored hidden-state vectors
with zero model calls, written beside the candidate config (content-addressed, pinned by
sha256), measured on held-out claims, and a domain's head shrunk toward the default one."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from judge.api import eval_gold, fit
from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.decide.probe_head import LanguageHeads, ProbeHead, load_head
from judge.fitting.probe import PRIOR_HEAD_LAMBDAS, fit_head, fit_probe_rule
from judge.language import LANGUAGE_RULE
from judge.store import Store
from judge.verdicts import LABELS
from tests.fakes import FakeLLM, install
from tests.fit.synthetic import gold_items, write_gold

DIM = 12


def signal_vectors(items: list[dict[str, Any]], seed: int = 0, flip_every: int = 5
                   ) -> dict[str, list[float]]:
    """Claim -> a vector whose first four numbers point at the gold label (every
    ``flip_every``-th claim points at the wrong one), plus noise: a head can learn it."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, item in enumerate(items):
        label = LABELS.index(item["label"])
        if flip_every and k % flip_every == 0:
            label = (label + 2) % 4
        v = rng.normal(0, 0.5, DIM)
        v[label] += 2.0
        out[item["claim"]] = [float(x) for x in v]
    return out


def install_vectors(table: dict[str, list[float]]) -> FakeLLM:
    def embed(text: str) -> list[float]:
        claim = text.split("Claim: ", 1)[-1].split("\n", 1)[0]
        return table.get(claim, [0.0] * DIM)

    return install(FakeLLM(embedder=embed))


def head_file(folder: Path, head: ProbeHead, name: str) -> dict[str, str]:
    path = folder / name
    path.write_text(head.dumps(), encoding="utf-8")
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def says_supported(dim: int = DIM) -> ProbeHead:
    """The current head of the synthetic team: every claim supported."""
    intercept = np.array([1.0 if label == "supported" else 0.0 for label in LABELS])
    return ProbeHead(tuple(LABELS), np.zeros(dim), np.ones(dim), np.zeros((4, dim)), intercept,
                     {"prompt": "probe_claim/v1"})


def probe_toml(folder: Path, ref: dict[str, str]) -> Path:
    path = folder / "current.toml"
    path.write_text('[judge]\nmodel = "fake/judge-model"\nstrategy = "probe"\n'
                    'prompts = { split_claims = "v1", probe_claim = "v1" }\n'
                    f'probe_head = {{ file = "{ref["file"]}", sha256 = "{ref["sha256"]}" }}\n',
                    encoding="utf-8")
    return path


def test_a_fitted_head_reads_the_signal_and_shrinks_toward_a_prior() -> None:
    rng = np.random.default_rng(1)
    y = np.arange(200) % 4
    x = rng.normal(0, 0.5, (200, DIM))
    x[np.arange(200), y] += 2.0
    head = fit_head(x, y, 10.0)
    probs = head.probabilities(x)
    pred = np.array([LABELS.index(head.labels[i]) for i in probs.argmax(1)])
    assert (pred == y).mean() > 0.9
    # a very strong penalty toward a prior keeps the prior's weights
    prior = fit_head(x, y, 10.0)
    flipped = (y + 1) % 4
    kept = fit_head(x[:40], flipped[:40], 1e7, prior)
    assert np.allclose(kept.coef, prior.coef, atol=1e-3)
    learnt = fit_head(x[:40], flipped[:40], 1.0, prior)
    assert not np.allclose(learnt.coef, prior.coef, atol=1e-2)
    fitted = fit_probe_rule(x[:40], flipped[:40], [k % 5 for k in range(40)], prior=prior)
    assert fitted.shrunk_toward_current and set(fitted.cv_balanced_log_loss) == set(
        PRIOR_HEAD_LAMBDAS)


@pytest.fixture
def judged(tmp_path: Path) -> dict[str, Any]:
    items = gold_items(100)
    fake = install_vectors(signal_vectors(items))
    gold = write_gold(tmp_path / "gold.jsonl", items)
    config = probe_toml(tmp_path, head_file(tmp_path, says_supported(), "current-head.json"))
    result = eval_gold(gold, config=config, db=tmp_path / "judge.db")
    assert result.summary.model_calls == 100
    fake.calls.clear()
    return {"gold": gold, "config": config, "fake": fake, "db": tmp_path / "judge.db",
            "version": result.summary.judge_version, "items": items}


def test_fit_learns_a_head_from_stored_vectors_with_zero_calls(
    judged: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "fitted" / "new.toml"
    result = fit(judged["gold"], db=judged["db"], output=out)
    data = result.to_dict()
    assert judged["fake"].calls == [] and data["model_calls"] == 0
    assert data["baseline_version"] == judged["version"] != data["judge_version"]
    h = data["holdout"]
    assert h["balanced_accuracy"]["baseline"]["value"] == 0.25
    assert h["balanced_accuracy"]["candidate"]["value"] >= 0.7
    assert data["recommend_adopt"] is True
    assert data["fit"]["probe_head"]["dim"] == DIM
    # the head file lies beside the config, named by its content, pinned by its sha256
    config = JudgeConfig.load(out)
    assert config.probe_head is not None
    path = Path(config.probe_head.file)
    assert path.parent == out.parent and path.is_file()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == config.probe_head.sha256
    assert load_head(str(path), config.probe_head.sha256).dim == DIM
    # the fitted config judges the same claims from the stored vectors
    again = eval_gold(judged["gold"], config=out, db=judged["db"])
    assert judged["fake"].calls == [] and again.summary.model_calls == 0
    assert again.summary.judge_version == data["judge_version"]
    assert again.outcome.report.balanced_accuracy.value >= 0.7


def test_a_domain_head_moves_that_domain_and_keeps_the_rest(
    judged: dict[str, Any], tmp_path: Path
) -> None:
    # the default head first, fitted on every claim
    base = tmp_path / "base.toml"
    fit(judged["gold"], db=judged["db"], output=base, holdout=0.0)
    # a team whose domain reads the vectors differently: 100 reviewed claims of its own
    team = gold_items(100, "legal", start=100)
    table = signal_vectors(team, seed=3, flip_every=0)
    for item in team:  # the domain's signal sits on other numbers
        table[item["claim"]] = list(np.roll(table[item["claim"]], 4))
    install_vectors({**signal_vectors(judged["items"]), **table})
    gold = write_gold(tmp_path / "team.jsonl", team)
    before = eval_gold(gold, config=base, db=judged["db"])
    result = fit(gold, db=judged["db"], output=tmp_path / "team.toml", domain="legal")
    data = result.to_dict()
    assert data["fit"]["shrunk_toward_current"] is True and data["model_calls"] == 0
    h = data["holdout"]
    assert h["balanced_accuracy"]["candidate"]["value"] > h["balanced_accuracy"][
        "baseline"]["value"] + 0.2
    config = JudgeConfig.load(tmp_path / "team.toml")
    assert set(config.domain_rules) == {"legal"}
    assert config.probe_head == JudgeConfig.load(base).probe_head  # the default head kept
    after = eval_gold(gold, config=tmp_path / "team.toml", db=judged["db"])
    assert after.summary.model_calls == 0
    assert after.outcome.report.balanced_accuracy.value > \
        before.outcome.report.balanced_accuracy.value
    rules = {r["rule"] for r in Store.open(judged["db"]).verdict_rows(
        judge_version=after.summary.judge_version)}
    assert rules == {"legal"}
    json.dumps(data)  # the report is JSON
    # the domain's queue threshold is re-set on the domain's gold, out of fold
    from judge.config.review import ReviewSettings
    from judge.review.triage import active_point

    store = Store.open(judged["db"])
    try:
        point = active_point(store, data["judge_version"], "legal", ReviewSettings())
    finally:
        store.close()
    assert point.source == "gold" and point.domain == "legal" and point.n_gold == 100


def test_a_written_head_brings_its_queue_threshold_set_out_of_fold(
    judged: dict[str, Any], tmp_path: Path
) -> None:
    from calibration.operating_point import set_operating_point
    from judge.config.review import ReviewSettings
    from judge.fitting.probe import predict_head
    from judge.review.triage import active_point

    out = tmp_path / "fitted" / "new.toml"
    result = fit(judged["gold"], db=judged["db"], output=out)
    gold = result.point_gold
    assert gold is not None and len(result.points_stored) == 8  # 4 targets x 2 confidences
    data = result.to_dict()
    assert data["operating_points"]["n"] == 100 and data["operating_points"]["stored"]
    assert "Review queue:" in out.read_text(encoding="utf-8")
    # the fitted claims' scores come from heads that never saw them, not the fitted head's
    head = result.fitted.model
    assert isinstance(head, ProbeHead)
    store = Store.open(judged["db"])
    try:
        point = active_point(store, result.candidate_version, "", ReviewSettings())
        assert point.source == "gold" and point.threshold is not None
        expected = set_operating_point(gold.scores, gold.problems, target_recall=0.9,
                                       confidence=0.9)
        assert point.threshold == expected.threshold
        # the baseline head's packaged point names no score spec: the points stay on support
        assert gold.spec is None and point.spec is None
        assert point.statement.startswith("support <")
        # in-sample support would differ: the point is not set on the fitted head's own scores
        vectors = np.array([signal_vectors(judged["items"])[i["claim"]]
                            for i in judged["items"]])
        in_sample = predict_head(vectors, head)[1][:, 0]
        assert sorted(np.round(in_sample, 6)) != sorted(np.round(gold.scores, 6))
        # the same fit without an output stores nothing
        before = len(store.operating_point_rows())
    finally:
        store.close()
    again = fit(judged["gold"], db=judged["db"])
    assert again.point_gold is not None and again.points_stored == []
    store = Store.open(judged["db"])
    try:
        assert len(store.operating_point_rows()) == before
    finally:
        store.close()


def test_under_a_stacked_default_a_fit_sets_its_points_on_the_stacked_score_out_of_fold(
    judged: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the baseline head's packaged point is on the stacked score, the fit's points are
    too: the weights fitted on the fit's out-of-fold supports, each fitted claim's stacked
    score from weights fitted without its fold, the spec stored with the points."""
    from calibration.operating_point import set_operating_point
    from judge.config.review import ReviewSettings
    from judge.fitting import run
    from judge.review.score import parse_spec
    from judge.review.triage import active_point

    stacked = parse_spec({"kind": "stacked-v1", "weights": {
        "intercept": 0.0, "support_logit": 1.0, "strength": 0.0}})
    monkeypatch.setattr(run, "packaged_spec", lambda sha: stacked)
    result = fit(judged["gold"], db=judged["db"], output=tmp_path / "new.toml")
    gold = result.point_gold
    assert gold is not None and gold.spec is not None and gold.spec != stacked
    assert result.to_dict()["operating_points"]["score"] == gold.spec.as_dict()
    store = Store.open(judged["db"])
    try:
        point = active_point(store, result.candidate_version, "", ReviewSettings())
    finally:
        store.close()
    assert point.source == "gold" and point.spec == gold.spec
    assert point.statement.startswith("stacked score <")
    assert point.threshold == set_operating_point(gold.scores, gold.problems,
                                                  target_recall=0.9,
                                                  confidence=0.9).threshold
    assert judged["fake"].calls == []  # replayed from the stored vectors


def test_a_fit_keeps_the_language_shift_of_the_head_deciding_now(tmp_path: Path) -> None:
    """The current head subtracts a Chinese offset; ``judge fit`` fits on the shifted vectors
    of the Chinese claims and the head it writes carries the same offset."""
    from judge.decide.probe_head import LanguageShift
    items = gold_items(100)
    for k, item in enumerate(items):  # Chinese claims and sources
        item["claim"] = f"第 {k} 號橋於 {1900 + k} 年啟用。"
        item["sources"] = [{"id": "S1", "text": f"紀錄：第 {k} 號橋於 {1900 + k} 年啟用，"
                                                f"歷時 {k % 7 + 2} 年。"}]
    pull = np.zeros(DIM)
    pull[4:] = 3.0  # what reading Chinese adds to every vector
    clean = signal_vectors(items)
    install_vectors({c: list(np.asarray(v) + pull) for c, v in clean.items()})
    current = says_supported()
    shift = LanguageShift(LANGUAGE_RULE, {"zh": pull}, {"from": "test"})
    shifted = ProbeHead(current.labels, current.mean, current.scale, current.coef,
                        current.intercept, current.about, shift)
    gold = write_gold(tmp_path / "gold.jsonl", items)
    config = probe_toml(tmp_path, head_file(tmp_path, shifted, "current-head.json"))
    eval_gold(gold, config=config, db=tmp_path / "judge.db")
    out = tmp_path / "fitted.toml"
    result = fit(gold, db=tmp_path / "judge.db", output=out, holdout=0.0)
    assert result.model_calls == 0
    fitted = JudgeConfig.load(out).probe_head
    assert fitted is not None
    head = load_head(fitted.file, fitted.sha256)
    assert head.shift is not None and np.array_equal(head.shift.offsets["zh"], pull)
    # standardised on the shifted vectors: the pull (3 on numbers 4 to 11) is gone
    x = np.array(list(clean.values()))
    assert np.allclose(head.mean, x.mean(0), atol=0.01)  # float16 vectors


def test_claims_a_kept_language_head_decides_are_not_fitted_on(tmp_path: Path) -> None:
    """Under a head with a head for Chinese, a fit of the outer head learns from the claims the
    outer head decides only: the Chinese minority (here with vectors pointing at the wrong
    label) leaves the fitted outer head exactly as a fit without it, is counted apart, and
    its head is kept as it was."""
    from judge.language import LANGUAGE_RULE

    english = gold_items(100)
    chinese = gold_items(40, "zh", start=100)
    for k, item in enumerate(chinese):
        item["claim"] = f"第 {k} 號橋於 {1900 + k} 年啟用。"
        item["sources"] = [{"id": "S1", "text": f"紀錄：第 {k} 號橋於 {1900 + k} 年啟用。"}]
    misleading = {c: list(-np.asarray(v)) for c, v in signal_vectors(chinese, seed=3).items()}
    install_vectors({**signal_vectors(english), **misleading})
    own = ProbeHead(tuple(LABELS), np.zeros(DIM), np.ones(DIM), np.zeros((4, DIM)),
                    np.array([0.0, 2.0, 0.0, 0.0]), {"prompt": "probe_claim/v1", "name": "zh"})
    current = replace(says_supported(), languages=LanguageHeads(LANGUAGE_RULE, {"zh": own}))
    config = probe_toml(tmp_path, head_file(tmp_path, current, "current-head.json"))
    heads = {}
    for name, items in (("mixed", english + chinese), ("english", english)):
        gold = write_gold(tmp_path / f"{name}.jsonl", items)
        eval_gold(gold, config=config, db=tmp_path / f"{name}.db")
        result = fit(gold, db=tmp_path / f"{name}.db", output=tmp_path / name / "fitted.toml",
                     holdout=0.0)
        assert result.model_calls == 0
        fitted = JudgeConfig.load(tmp_path / name / "fitted.toml").probe_head
        assert fitted is not None
        heads[name] = (load_head(fitted.file, fitted.sha256), result.to_dict())
    (mixed, data), (alone, alone_data) = heads["mixed"], heads["english"]
    assert data["fit"]["left_to_language_heads"] == {"zh": 40}
    assert alone_data["fit"]["left_to_language_heads"] == {}
    assert sum(data["fit"]["labels"].values()) == 100 == data["fit"]["n"]
    assert np.array_equal(mixed.coef, alone.coef) and np.array_equal(mixed.mean, alone.mean)
    assert mixed.languages is not None and mixed.languages.heads["zh"].dumps() == own.dumps()
    # the Chinese claims' scores by their own head count toward the review queue's points
    assert data["operating_points"]["n"] == 140 and alone_data["operating_points"]["n"] == 100
    # and `judge fit` says so
    _register()
    shown = CliRunner().invoke(app, ["fit", "--db", str(tmp_path / "mixed.db"), "--gold",
                                     str(tmp_path / "mixed.jsonl"), "--holdout", "0", "-o",
                                     str(tmp_path / "cli" / "fitted.toml")])
    text = " ".join(shown.output.split())
    assert "left to the kept head of their language" in text
    assert "40 claims read as zh" in text
