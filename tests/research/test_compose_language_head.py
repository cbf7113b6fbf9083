"""A head per language, composed from two packaged heads (research/compose_language_head.py):
the flag score of a claim read as Chinese follows its own head's point, so that at every
packaged recall and confidence the composed point flags each claim exactly as its own head's
point did; every other claim is scored as the outer point scores it."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from judge.review.score import ScoreSpecError, parse_spec

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "research"))

from compose_language_head import compose_head, compose_points  # noqa: E402

from judge.decide.probe_head import from_dict  # noqa: E402

NAME = "qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v{}.json"
ZH = {"claim": "東、中、西部地區發展存在不協調",
      "evidence": [{"quote": "東、中、西部地區要加強多種形式的合作，在協調發展中逐步實現共同富裕"}]}
EN = {"claim": "Python 3.11 added tomllib.",
      "evidence": [{"quote": "Python 3.11 added the tomllib module."}]}


def packaged(version: int) -> dict:
    return json.loads((ROOT / "judge" / "config" / "operating" / NAME.format(version))
                      .read_text(encoding="utf-8"))


def head(version: int):
    return from_dict(json.loads((ROOT / "judge" / "config" / "heads" / NAME.format(version))
                                .read_text(encoding="utf-8")))


def test_each_composed_point_flags_every_claim_as_its_own_heads_point() -> None:
    v6, v7 = packaged(6), packaged(7)
    both = compose_points(v6, v7, "zh", "builtin:test", "0" * 64)
    rng = np.random.default_rng(3)
    supports = np.concatenate([rng.uniform(0, 1, 400), [1e-9, 0.5, 1 - 1e-9]])
    strengths = rng.uniform(0, 1, len(supports))
    assert len(both["points"]) == len(v6["points"]) == 8
    for got, outer, inner in zip(both["points"], v6["points"], v7["points"], strict=True):
        spec = parse_spec(got["score"])
        own = {"zh": parse_spec(inner["score"]), "en": parse_spec(outer["score"])}
        threshold = {"zh": inner["threshold"], "en": outer["threshold"]}
        assert got["threshold"] == outer["threshold"]
        for lang, row in (("zh", ZH), ("en", EN)):
            for s, st in zip(supports, strengths, strict=True):
                r = dict(row, strength=float(st))
                flagged = spec.score_row(float(s), r) < got["threshold"]
                assert flagged == (own[lang].score_row(float(s), r) < threshold[lang])
        # English claims: the very score of the outer point
        assert spec.score_row(0.3, dict(EN, strength=0.4)) == \
            own["en"].score_row(0.3, dict(EN, strength=0.4))
        assert "claims read as 'zh'" in got["statement"]


def test_the_composed_head_decides_chinese_claims_with_the_inner_head() -> None:
    v6, v7 = head(6), head(7)
    both, sha = compose_head(v6, v7, "zh", "test-v8")
    assert both.about["name"] == "test-v8" and len(sha) == 64
    x = np.random.default_rng(0).normal(size=(2, v6.dim)) * v6.scale + v6.mean
    zh_text, en_text = ZH["claim"], EN["claim"]
    assert np.allclose(both.probabilities(x, [zh_text, zh_text]),
                       v7.probabilities(x, [zh_text, zh_text]))
    assert np.allclose(both.probabilities(x, [en_text, en_text]),
                       v6.probabilities(x, [en_text, en_text]))


def test_a_spec_with_weights_per_language_round_trips_and_is_checked() -> None:
    raw = {"kind": "stacked-v1",
           "weights": {"intercept": -1.0, "support_logit": 1.0, "strength": 2.0},
           "by_language": {"rule": "han-share-half/v1", "weights": {
               "zh": {"intercept": 0.5, "support_logit": 0.9, "strength": 0.1}}}}
    spec = parse_spec(raw)
    assert spec is not None and spec.as_dict() == raw and parse_spec(spec.as_dict()) == spec
    zh, en = dict(ZH, strength=0.4), dict(EN, strength=0.4)
    logit = math.log(0.3 / 0.7)
    assert spec.score_row(0.3, zh) == pytest.approx(1 / (1 + math.exp(-(0.5 + 0.9 * logit
                                                                         + 0.1 * 0.4))))
    assert spec.score_row(0.3, en) == pytest.approx(1 / (1 + math.exp(-(-1 + logit + 0.8))))
    assert spec.score_row(0.3, dict(ZH, strength=None)) == -math.inf  # still fails closed
    with pytest.raises(ScoreSpecError, match="needs the claim's text"):
        spec.score(0.3, 0.4)
    for bad in ({"rule": "nope", "weights": {"zh": raw["by_language"]["weights"]["zh"]}},
                {"rule": "han-share-half/v1", "weights": {"zh": {"intercept": 1.0}}},
                {"rule": "han-share-half/v1", "weights": {}}):
        with pytest.raises(ScoreSpecError, match="by_language"):
            parse_spec(dict(raw, by_language=bad))
