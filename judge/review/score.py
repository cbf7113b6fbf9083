"""The flag score's form, carried by an operating point (issue 32, the stacked score).

An operating point may name how its flag score is formed (its ``score`` spec); without one the
score is the judge's P(supported), as every point set before specs existed. The one other form
is ``stacked-v1``: a logistic of the support logit and the program's evidence strength
(:mod:`judge.checks.strength`), with three weights fitted on human gold out of fold
(:mod:`judge.fitting.stack`)::

    {"kind": "stacked-v1",
     "weights": {"intercept": a, "support_logit": b, "strength": c}}

    score = sigmoid(a + b * logit(support) + c * strength)

It is a probability of "supported" like the support score, so a threshold reads the same way
(flag below it). A claim without a strength under a stacked spec fails closed: its score is
``-inf`` and it is flagged. :func:`judge.review.triage.flag_score` applies the spec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from judge.errors import JudgeError

#: the kinds of flag score a point may name
STACKED = "stacked-v1"
KINDS = (STACKED,)
WEIGHTS = ("intercept", "support_logit", "strength")
#: supports are clipped to [EPS, 1 - EPS] before the logit
EPS = 1e-6


class ScoreSpecError(JudgeError, ValueError):
    """A score spec that cannot be read."""


@dataclass(frozen=True)
class ScoreSpec:
    """How an operating point's flag score is formed (:data:`KINDS`)."""

    kind: str
    intercept: float
    support_logit: float
    strength: float

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "weights": {
            "intercept": self.intercept, "support_logit": self.support_logit,
            "strength": self.strength}}

    def score(self, support: float, strength: float | None) -> float:
        """The flag score of a claim with this support and evidence strength (``-inf``
        without a strength: fail closed)."""
        if strength is None or not math.isfinite(float(strength)):
            return -math.inf
        z = (self.intercept + self.support_logit * logit(support)
             + self.strength * float(strength))
        return sigmoid(z)

    def describe(self) -> str:
        return (f"stacked score: sigmoid({self.intercept:.4g} + {self.support_logit:.4g} "
                f"logit(support) + {self.strength:.4g} strength)")


def logit(p: float) -> float:
    q = min(max(float(p), EPS), 1.0 - EPS)
    return math.log(q / (1.0 - q))


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def parse_spec(raw: Any) -> ScoreSpec | None:
    """The spec of a point's ``score`` entry (a dict or its JSON; None or absent: the support
    score, as before specs)."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, ScoreSpec):
        return raw
    if isinstance(raw, str):
        import json

        raw = json.loads(raw)
    if not isinstance(raw, dict) or raw.get("kind") not in KINDS:
        raise ScoreSpecError(f"unknown flag score spec {raw!r}: the kinds are {KINDS}")
    weights = raw.get("weights") or {}
    missing = [w for w in WEIGHTS if not isinstance(weights.get(w), int | float)]
    if missing:
        raise ScoreSpecError(f"flag score spec {raw['kind']} lacks the weight(s) {missing}")
    return ScoreSpec(raw["kind"], *(float(weights[w]) for w in WEIGHTS))


def spec_label(spec: ScoreSpec | None) -> str:
    """What the threshold is on, for statements: ``support`` or ``stacked score``."""
    return "support" if spec is None else "stacked score"
