"""research/review_ceiling.py: how far a domain's own reviews can take the ranking. On
synthetic vectors a domain whose labels the vectors encode ranks well under every arm, one
whose vectors say nothing of its labels stays near the false alarms of a coin whatever it is
fitted on, and the per-label summary reads the threshold that flags exactly 90%."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from judge.verdicts import LABELS
from research.review_ceiling import by_label, dataset_part
from research.triage import Data, cv_fit, folds_of


def synthetic(n_per: int = 160, dim: int = 6, seed: int = 3) -> Data:
    """Two datasets: in ``clear`` the label shifts the vector; in ``noise`` it does not."""
    rng = np.random.default_rng(seed)
    items, xs, ys, names = [], [], [], []
    for dataset in ("clear", "noise"):
        for k in range(n_per):
            y = k % 2 * (1 + k % 3 % 2)  # supported, or contradicted / not_in_source
            x = rng.normal(size=dim)
            if dataset == "clear":
                x[y] += 3.0
            items.append(SimpleNamespace(gold_id=f"{dataset}:{k}", label=LABELS[y],
                                         group=f"{dataset}:{k // 2}", dataset=dataset,
                                         row={"label": "supported"}))
            xs.append(x)
            ys.append(y)
            names.append(dataset)
    return Data(items=items, x=np.array(xs), y=np.array(ys), fold=folds_of(items),  # type: ignore[arg-type]
                datasets=np.array(names), split=np.array(["tuning"] * len(items)),
                program_reasons=[[] for _ in items], strength=np.ones(len(items)),
                stored_review=np.zeros(len(items), dtype=bool), strength_below=0.0,
                support_below=0.5, version="v@test", about={})


@pytest.fixture(scope="module")
def parts() -> dict[str, dict]:
    data = synthetic()
    wide = cv_fit(data.x, data.y, data.fold)
    return {d: dataset_part(data, d, wide, [40], 1, 0, {}) for d in ("clear", "noise")}


def false_alarm(arm: dict) -> float:
    return arm["at_90"]["false_alarm"]["value"]


def test_a_domain_the_vectors_encode_ranks_well_under_every_arm(parts: dict) -> None:
    clear = parts["clear"]
    for arm in ("version-wide", "domain only", "domain, shrunk"):
        assert clear[arm]["auc"]["value"] > 0.9
        assert false_alarm(clear[arm]) < 0.25
        assert clear[arm]["at_90"]["recall"]["value"] >= 0.9
    assert clear["sizes"][0]["size"] == 40
    assert clear["sizes"][0]["false_alarm_at_90"]["mean"] < 0.4


def test_a_domain_whose_vectors_say_nothing_gains_nothing_from_its_own_claims(
        parts: dict) -> None:
    noise = parts["noise"]
    for arm in ("version-wide", "domain only", "domain, shrunk"):
        assert 0.3 < noise[arm]["auc"]["value"] < 0.7
        assert false_alarm(noise[arm]) > 0.6
    assert noise["sizes"][0]["false_alarm_at_90"]["mean"] > 0.6
    assert noise["n"] == 160 and noise["problems"] == 80


def test_by_label_reads_the_threshold_that_flags_exactly_90_percent() -> None:
    data = synthetic(n_per=20)
    idx = np.flatnonzero(data.datasets == "clear")
    # the ten problems score 0.005 .. 0.095, the ten supported claims 0.0 .. 0.9
    support = np.where(data.problems[idx], np.arange(20) / 200, np.arange(20) / 20)
    kinds = {data.items[int(k)].gold_id: "not_in_source/partial_support"
             for k in idx if data.items[int(k)].label == "not_in_source"}
    out = by_label(data, idx, support, kinds)
    assert set(out) == {"supported", "contradicted", "not_in_source/partial_support"}
    assert sum(v["n"] for v in out.values()) == 20
    # 9 of the 10 problems flagged: the highest problem (0.095) passes
    passed_problems = sum(round(v["passed"] * v["n"]) for k, v in out.items()
                          if k != "supported")
    assert passed_problems == 1
    # supported claims at or above the threshold (just above 0.085) pass: 0.1 and up, 9 of 10
    assert out["supported"]["passed"] == pytest.approx(0.9)
