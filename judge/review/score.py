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

The strength weight is learnt from the claims the weights were fitted on, and lexical overlap
means something else in another language (a paraphrased Chinese claim overlaps its source
little even when supported). A spec may therefore **hold** the strength for claims read in a
language its weights were not fitted on::

    {"kind": "stacked-v1", "weights": {...},
     "held_strength": {"rule": "han-share-half/v1", "by_language": {"zh": 0.7183}}}

A claim that the rule (:data:`judge.language.LANGUAGE_RULES`, on the claim and its evidence,
what the probe reads) reads as a held language is scored with that strength (the mean
strength of the gold the weights were fitted on) instead of its own: its flag score is then a
monotone function of its support alone.

A spec may also give the claims read as a language **weights of their own** (the points of a
head with a head per language, :class:`judge.decide.probe_head.LanguageHeads`: a claim read
as Chinese is scored as the Chinese head's point scores it)::

    {"kind": "stacked-v1", "weights": {...}, "held_strength": {...},
     "by_language": {"rule": "han-share-half/v1",
                     "weights": {"zh": {"intercept": a2, "support_logit": b2, "strength": c2}}}}

A claim read as such a language is scored with its language's weights (its strength held as
above when the spec holds one for that language), every other claim with ``weights``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from judge.errors import JudgeError
from judge.language import LANGUAGE_RULES, read_text

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
    #: the language rule and the strength held per language it reads (module docstring)
    held_rule: str | None = None
    held: tuple[tuple[str, float], ...] = ()
    #: the language rule and the weights (intercept, support_logit, strength) per language
    #: it reads, for claims read as one of them (module docstring)
    weights_rule: str | None = None
    by_language: tuple[tuple[str, tuple[float, float, float]], ...] = ()

    @property
    def reads_language(self) -> bool:
        """Whether a claim's score depends on the language its text reads as."""
        return bool(self.held or self.by_language)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "weights": {
            "intercept": self.intercept, "support_logit": self.support_logit,
            "strength": self.strength}}
        if self.held:
            out["held_strength"] = {"rule": self.held_rule, "by_language": dict(self.held)}
        if self.by_language:
            out["by_language"] = {"rule": self.weights_rule, "weights": {
                lang: dict(zip(WEIGHTS, w, strict=True)) for lang, w in self.by_language}}
        return out

    def holding(self, rule: str, by_language: dict[str, float]) -> ScoreSpec:
        """This spec with the strength held for the languages ``rule`` reads as given."""
        return replace(self, held_rule=rule,
                       held=tuple(sorted((k, float(v)) for k, v in by_language.items())))

    def weighing(self, rule: str, by_language: dict[str, tuple[float, float, float]]
                 ) -> ScoreSpec:
        """This spec with weights (intercept, support_logit, strength) of their own for the
        claims ``rule`` reads as the languages given."""
        return replace(self, weights_rule=rule, by_language=tuple(sorted(
            (k, tuple(float(x) for x in w)) for k, w in by_language.items())))  # type: ignore[misc]

    def score(self, support: float, strength: float | None, text: str | None = None
              ) -> float:
        """The flag score of a claim with this support and evidence strength (``-inf``
        without a strength: fail closed). ``text``: what the probe read of the claim (the
        claim and its evidence, :func:`row_text`), needed when the spec reads the language
        (:attr:`reads_language`)."""
        if strength is None or not math.isfinite(float(strength)):
            return -math.inf
        if self.reads_language and text is None:
            languages = sorted({k for k, _ in self.held} | {k for k, _ in self.by_language})
            raise ScoreSpecError(f"this stacked score reads claims read in {languages} "
                                 "otherwise: it needs the claim's text")
        if self.held:
            held = dict(self.held).get(LANGUAGE_RULES[str(self.held_rule)](str(text)) or "")
            strength = held if held is not None else strength
        a, b, c = self.intercept, self.support_logit, self.strength
        if self.by_language:
            own = dict(self.by_language).get(
                LANGUAGE_RULES[str(self.weights_rule)](str(text)) or "")
            a, b, c = own if own is not None else (a, b, c)
        return sigmoid(a + b * logit(support) + c * float(strength))

    def score_row(self, support: float, row: dict[str, Any]) -> float:
        """:meth:`score` of a stored verdict row given its support: the row's strength, and
        its text (:func:`row_text`) only when the score depends on the language read."""
        return self.score(support, row.get("strength"),
                          row_text(row) if self.reads_language else None)

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
    spec = ScoreSpec(raw["kind"], float(weights["intercept"]), float(weights["support_logit"]),
                     float(weights["strength"]))
    held = raw.get("held_strength")
    if held is not None:
        by_language = held.get("by_language") if isinstance(held, dict) else None
        if (not isinstance(by_language, dict) or held.get("rule") not in LANGUAGE_RULES
                or not all(isinstance(v, int | float) and math.isfinite(v)
                           for v in by_language.values())):
            raise ScoreSpecError(f"flag score spec {raw['kind']}: held_strength {held!r} needs "
                                 f"a known language rule {sorted(LANGUAGE_RULES)} and a finite "
                                 "strength per language")
        spec = spec.holding(held["rule"], by_language)
    own = raw.get("by_language")
    if own is not None:
        table = own.get("weights") if isinstance(own, dict) else None
        if (not isinstance(table, dict) or not table or own.get("rule") not in LANGUAGE_RULES
                or not all(isinstance(w, dict) and all(
                    isinstance(w.get(k), int | float) and math.isfinite(w[k]) for k in WEIGHTS)
                    for w in table.values())):
            raise ScoreSpecError(f"flag score spec {raw['kind']}: by_language {own!r} needs a "
                                 f"known language rule {sorted(LANGUAGE_RULES)} and, per "
                                 f"language, the finite weights {list(WEIGHTS)}")
        spec = spec.weighing(own["rule"], {k: tuple(float(w[x]) for x in WEIGHTS)  # type: ignore[misc]
                                           for k, w in table.items()})
    return spec


def row_text(row: dict[str, Any]) -> str:
    """What the probe read of a stored verdict's claim, for telling its language: the claim
    and its evidence quotes (:func:`judge.language.read_text`, as the probe reads them)."""
    evidence = row.get("evidence") or []
    if isinstance(evidence, str):
        import json

        evidence = json.loads(evidence)
    return read_text(str(row.get("claim") or ""),
                     (e.get("quote") or "" for e in evidence if isinstance(e, dict)))


def spec_label(spec: ScoreSpec | None) -> str:
    """What the threshold is on, for statements: ``support`` or ``stacked score``."""
    return "support" if spec is None else "stacked score"
