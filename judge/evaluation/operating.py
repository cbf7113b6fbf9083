"""Setting the review queue's operating point from human gold: the gold items matched to a
judge version's stored verdicts, their flag scores (:func:`judge.review.triage.flag_score`),
and the point (:func:`calibration.operating_point.set_operating_point`) stored with the gold's
hash, size and bound. Which point decides a queue is :mod:`judge.review.triage`'s business.

A judge that gives no support score on the gold (it answers with labels: a provider without
log-probabilities) has no threshold to set: the only scored claims would be those the queue
takes whatever their score, and a point on them would read "support < 0 ... recall >= 0.90 ...
load 100%". No point is set or stored for it; :class:`NoSupportScore` says instead what its
label rule flags catch on the gold (:func:`calibration.operating_point.rule_recall`: a lower
bound, not a tunable point) and how to get a support score."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from calibration.operating_point import (
    OperatingPoint,
    RuleRecall,
    rule_recall,
    set_operating_point,
)
from judge.evaluation.calibrate import gold_summary, matched_gold
from judge.evaluation.gold import GoldFile
from judge.hashing import content_hash
from judge.labels import Label
from judge.review.score import ScoreSpec
from judge.review.triage import TriageError, domains_of, flag_score
from judge.store import Store


class NoSupportScore(TriageError):
    """The judge version gives no support score on the gold: no threshold can be set. The
    message states what its label rule flags catch on the gold and the fix."""

    def __init__(self, judge_version: str, rule: RuleRecall, domain: str = "") -> None:
        self.rule = rule
        where = f" of domain {domain!r}" if domain else ""
        super().__init__(
            f"{judge_version} gives no support score on the gold{where} (it answers with "
            "labels: its verification calls returned no log-probabilities), so no operating "
            f"point can be set and none is stored; {rule.statement()}. For a stated recall, "
            "judge with log-probabilities: label_logprobs = \"auto\" (the hosted default) or "
            "true with a provider that returns them (OpenAI's GPT models, vLLM, llama.cpp), "
            "or a strategy that scores (probe, scores); judge the gold again (`judge "
            "eval-gold`) and run this again")


@dataclass
class RuleClaim:
    """A matched gold claim as the queue's label rule sees it (every matched claim, scored
    or not)."""

    flagged: bool
    problem: bool
    weight: float
    domain: str
    #: the judge gave it a flag score (a support, or -inf: taken whatever its score)
    scored: bool


@dataclass
class GoldScores:
    """Gold claims of one judge version with their flag scores."""

    judge_version: str
    gold: dict[str, Any]
    scores: list[float]
    problems: list[bool]
    weights: list[float]
    domains: list[str]
    #: gold claims the version gives no support score (a strategy without one)
    unscored: int = 0
    #: how the scores were formed (:mod:`judge.review.score`; None: the support score)
    spec: ScoreSpec | None = None
    #: every matched claim as the label rule flags it (the statement without a score)
    rule: list[RuleClaim] = field(default_factory=list)


def gold_scores(store: Store, gold: GoldFile, judge_version: str | None = None,
                spec: ScoreSpec | None = None) -> GoldScores:
    """The gold items matched to the stored verdicts of ``judge_version`` (default: the one
    that judged them), with each claim's flag score (under the score ``spec``; None: the
    support score), whether people rejected it, its design weight and its domain (the
    answer's tag, else the gold item's dataset)."""
    matching = matched_gold(store, gold, judge_version)
    rows = matching.matched
    domains = domains_of(store, (m.row["answer_id"] for m in rows))
    out = GoldScores(matching.judge_version, gold_summary(gold, len(gold.entries), matching),
                     [], [], [], [], spec=spec)
    for m in rows:
        score = flag_score(m.row, spec=spec)
        item = m.entry.item
        domain = domains.get(m.row["answer_id"]) or item.dataset or ""
        problem = item.label != Label.SUPPORTED
        out.rule.append(RuleClaim(label_rule_flags(m.row), problem, item.sampled_weight, domain,
                                  score is not None))
        if score is None:
            out.unscored += 1
            continue
        out.scores.append(score)
        out.problems.append(problem)
        out.weights.append(item.sampled_weight)
        out.domains.append(domain)
    return out


def label_rule_flags(row: dict[str, Any]) -> bool:
    """Whether the queue flags a stored verdict row by its labels, checks and review reasons
    (as it does without an operating point: :func:`judge.review.queue.classify`)."""
    from judge.review.queue import DEFAULT_PRIORITY, classify

    rank = {name: i for i, name in enumerate(DEFAULT_PRIORITY)}
    return classify(row, rank, None)[1] != "passed"


def set_point(store: Store, data: GoldScores, *, domain: str = "", target_recall: float = 0.9,
              confidence: float = 0.9, created_by: str | None = None,
              gold_source: str = "") -> tuple[OperatingPoint, dict[str, Any]]:
    """Set, store and return the operating point of ``data.judge_version`` for ``domain``
    ('' = every gold claim, version-wide)."""
    keep = [i for i, d in enumerate(data.domains) if not domain or d == domain]
    claims = [c for c in data.rule if not domain or c.domain == domain]
    if (not any(math.isfinite(data.scores[i]) for i in keep)
            and any(not c.scored for c in claims)):
        # the judge scores none of the claims it could miss (only those the queue takes
        # whatever their score): a threshold would state a point at support 0
        raise NoSupportScore(data.judge_version, rule_recall(
            [c.flagged for c in claims], [c.problem for c in claims],
            confidence=confidence, weights=[c.weight for c in claims]), domain)
    if not keep:
        known = ", ".join(sorted(set(data.domains) - {""})) or "none"
        raise TriageError(f"no gold claim of domain {domain!r} has a support score by "
                          f"{data.judge_version} (domains in the gold: {known})")
    point = set_operating_point(  # all weights 1: the exact, unweighted bound
        [data.scores[i] for i in keep], [data.problems[i] for i in keep],
        target_recall=target_recall, confidence=confidence,
        weights=[data.weights[i] for i in keep])
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
    statement = point.statement()
    if data.spec is not None:
        statement = statement.replace("support <", "stacked score <", 1)
    report = {**point.model_dump(mode="json"), "statement": statement,
              "unscored": data.unscored}
    row = {
        "id": "op-" + content_hash([data.judge_version, domain, target_recall, confidence,
                                    data.gold.get("sha256"), stamp])[:12],
        "judge_version": data.judge_version, "domain": domain,
        "target_recall": target_recall, "confidence": confidence,
        "threshold": point.threshold if point.sufficient else None,
        "sufficient": int(point.sufficient), "method": point.method,
        "gold_source": gold_source or str(data.gold.get("file")),
        "gold_sha256": data.gold.get("sha256"), "n_gold": point.n,
        "n_problems": point.n_problems, "report": report, "created_at": stamp,
        "created_by": created_by,
        "score": None if data.spec is None else json.dumps(data.spec.as_dict()),
    }
    store.insert_operating_point(row)
    return point, row


def set_points(store: Store, judge_version: str, domain: str, scores: list[float],
               problems: list[bool], gold: dict[str, Any],
               targets: list[tuple[float, float]], *, created_by: str | None = None,
               gold_source: str = "", spec: ScoreSpec | None = None) -> list[dict[str, Any]]:
    """Set and store a point per (target recall, confidence) of ``targets`` from flag scores
    already computed (``judge fit``'s out-of-fold scores of its candidate, formed under
    ``spec``); the stored rows."""
    n = len(scores)
    data = GoldScores(judge_version, gold, list(scores), list(problems), [1.0] * n,
                      [domain] * n, spec=spec)
    return [set_point(store, data, domain=domain, target_recall=t, confidence=c,
                      created_by=created_by, gold_source=gold_source)[1]
            for t, c in targets]
