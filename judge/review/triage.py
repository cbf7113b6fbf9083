"""Triage at a stated recall: which claims the review queue takes, by an operating point set
from human gold.

A claim goes to people when the program or the judge *forces* it (:func:`forced`: a
``judge_error``, a failed deterministic check, an invented quote, a sentence the split left
uncovered, a call another model answered, or a flag kept by measurement,
:data:`KEPT_FLAGS`), or when its flag score (the judge's probability that the claim is
supported, or the stacked score of it and the evidence strength when the point's ``score``
spec says so, :mod:`judge.review.score`) is below the **operating point**'s threshold.
Refused answers always go.

The threshold is set per judge version (and per domain, where the domain's own gold is
enough) by :func:`calibration.operating_point.set_operating_point`: the smallest threshold
whose recall of the claims people reject is at least the target (``[review] target_recall``,
default 0.9) with the stated confidence (default 90%), by the exact binomial bound on the miss
rate. Where it comes from, first found wins:

1. ``gold``: set from human gold in this store for that version and domain
   (``judge queue threshold``, or ``judge queue build`` from the store's reviews);
2. ``gold`` version-wide, when the domain's own gold is too small;
3. ``default``: the point packaged with the judge version's probe head
   (``judge/config/operating/``), set on the project's human gold out of fold;
4. ``configured``: none; the queue flags as before operating points (a label other than
   ``supported``, a failed check, weak evidence, the version's ``review_support_below``),
   which catches more and states no recall (said so).

**Not part of the judge version.** Labels do not change with the threshold, only who reads
what; a queue records the points it used (id, threshold, gold hash, bound) and each item its
inclusion probability, so every queue stays explainable, and a changed threshold is shown
beside the version wherever the version is shown.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.errors import JudgeError
from judge.labels import JUDGE_ERROR, Label
from judge.review.score import ScoreSpec, parse_spec

if TYPE_CHECKING:
    from judge.config.review import ReviewSettings
    from judge.store import Store

#: Review reasons that send a claim to people whatever its score: what the program proved or
#: could not decide. (``refused`` answers are never scored and always go.)
ALWAYS: frozenset[str] = frozenset({
    JUDGE_ERROR, "invented_quote", "uncovered_sentence", "model_mismatch",
})
#: Flags besides the score that were measured to add recall at an acceptable cost, with the
#: threshold re-set to the same recall (research/triage.py; docs/review.md#triage): a flag
#: that only moves claims the score already takes, or takes more supported claims than the
#: lower threshold it allows saves, is not kept.
KEPT_FLAGS: frozenset[str] = frozenset()
#: Where the packaged operating points live (one JSON file per probe head).
PACKAGED = Path(__file__).resolve().parent.parent / "config" / "operating"


class TriageError(JudgeError, ValueError):
    """An operating point that cannot be set; the message says why and what to do."""


def forced(label: str, reasons: Iterable[str]) -> bool:
    """Whether the queue takes a claim whatever its support score."""
    if label == JUDGE_ERROR:
        return True
    return any(r in ALWAYS or r in KEPT_FLAGS or r.startswith("check:") for r in reasons)


def claim_reasons(row: dict[str, Any]) -> list[str]:
    """The verdict's review reasons, completed so nothing non-supported goes unexplained."""
    reasons = list(row.get("review_reasons") or [])
    label = row["label"]
    if label == JUDGE_ERROR and JUDGE_ERROR not in reasons:
        reasons.insert(0, JUDGE_ERROR)
    elif label not in (Label.SUPPORTED, JUDGE_ERROR) and f"label:{label}" not in reasons:
        reasons.insert(0, f"label:{label}")
    for check in row.get("checks") or []:
        reason = f"check:{check['name']}"
        if check.get("outcome") == "fail" and reason not in reasons:
            reasons.append(reason)
    return reasons


def flag_score(row: dict[str, Any], reasons: list[str] | None = None,
               spec: ScoreSpec | None = None) -> float | None:
    """A stored verdict row's flag score: ``-inf`` when it is :func:`forced`; None when the
    judge gives no support (strategies that answer with a label: the queue then follows the
    labels and review reasons, as before operating points); else its support, or, under an
    operating point's score ``spec`` (:mod:`judge.review.score`), the stacked score of its
    support and evidence strength (``-inf`` without a strength: fail closed). ``reasons``:
    the row's :func:`claim_reasons`, when the caller has them. The one
    place a claim is scored for flagging."""
    if reasons is None:
        reasons = claim_reasons(row)
    if forced(row["label"], reasons):
        return -math.inf
    support = row.get("support")
    if support is None:
        return None
    if spec is None:
        return float(support)
    return spec.score_row(float(support), row)


# -- the point a queue uses -----------------------------------------------------------------------


@dataclass(frozen=True)
class ActivePoint:
    """The operating point that decides a version's (and domain's) queue."""

    judge_version: str
    domain: str  # '' = version-wide
    source: str  # gold, default or configured
    threshold: float | None
    target_recall: float
    confidence: float
    statement: str
    point_id: str | None = None
    gold_sha256: str | None = None
    n_gold: int | None = None
    n_problems: int | None = None
    #: how the flag score is formed (:mod:`judge.review.score`; None: the support score)
    score: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def spec(self) -> ScoreSpec | None:
        return parse_spec(self.score)

    def score_of(self, row: dict[str, Any], reasons: list[str] | None = None
                 ) -> float | None:
        """A verdict row's flag score under this point's spec (:func:`flag_score`)."""
        return flag_score(row, reasons, self.spec)

    def flags(self, score: float | None) -> bool | None:
        """Whether the point sends a claim of this flag score to people (None: no score)."""
        if score is None or self.threshold is None:
            return None
        return score < self.threshold


@cache
def packaged_points(head_sha256: str) -> dict[str, Any] | None:
    """The operating points packaged for the probe head with this sha256, if any."""
    if not PACKAGED.is_dir():
        return None
    for path in sorted(PACKAGED.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("head_sha256") == head_sha256:
            return dict(data, file=path.name)
    return None


def _spec_dict(raw: Any) -> dict[str, Any] | None:
    """A stored or packaged ``score`` entry as a checked dict (None: the support score)."""
    spec = parse_spec(raw)
    return None if spec is None else spec.as_dict()


def version_spec(store: Store, judge_version: str, domain: str = "") -> ScoreSpec | None:
    """The score spec of the point packaged with the head of ``judge_version`` (for
    ``domain``), None when there is none or it names none: the form `judge queue threshold`
    re-sets a threshold under (the weights stay those fitted on the project's gold; only the
    threshold is set on the team's)."""
    found = [r for r in store.judge_versions() if r["id"] == judge_version]
    config = json.loads(found[0]["config"]) if found else {}
    sha = _head_sha(config, domain)
    return packaged_spec(sha) if sha else None


def packaged_spec(head_sha256: str) -> ScoreSpec | None:
    """The score spec the points packaged with this head name (None: none, or the support
    score): the form `judge fit` sets a candidate's points in and `judge queue threshold`
    re-sets a threshold in."""
    packaged = packaged_points(head_sha256)
    specs = [parse_spec(p.get("score")) for p in (packaged or {}).get("points", [])]
    return next((s for s in specs if s is not None), None)


def _head_sha(config: dict[str, Any], domain: str) -> str | None:
    rule = (config.get("domain_rules") or {}).get(domain) if domain else None
    ref = (rule or {}).get("probe_head") or config.get("probe_head")
    return ref.get("sha256") if isinstance(ref, dict) else None


def active_point(store: Store, judge_version: str, domain: str, settings: ReviewSettings,
                 config: dict[str, Any] | None = None) -> ActivePoint:
    """The point that decides the queue of ``judge_version`` for ``domain`` ('' for answers
    without one), in the order of the module docstring."""
    target, conf = settings.target_recall, settings.confidence
    for where in dict.fromkeys((domain, "")):
        row = store.latest_operating_point(judge_version, where, target, conf)
        if row is not None and row["sufficient"]:
            return ActivePoint(
                judge_version, where, "gold", row["threshold"], target, conf,
                row["report"]["statement"], row["id"], row["gold_sha256"], row["n_gold"],
                row["n_problems"], _spec_dict(row.get("score")))
    if config is None:
        found = [r for r in store.judge_versions() if r["id"] == judge_version]
        config = json.loads(found[0]["config"]) if found else {}
    sha = _head_sha(config, domain)
    packaged = packaged_points(sha) if sha else None
    if packaged is not None:
        for p in packaged["points"]:
            if abs(p["target_recall"] - target) < 1e-9 and abs(p["confidence"] - conf) < 1e-9:
                return ActivePoint(
                    judge_version, "", "default", p["threshold"], target, conf,
                    f"{p['statement']} (the default set on {packaged['gold']['description']};"
                    " set it on your own gold with `judge queue threshold`)",
                    f"default:{packaged['file']}", packaged["gold"]["sha256"], p["n"],
                    p["n_problems"], _spec_dict(p.get("score")))
    below = float(config.get("review_support_below") or 0.0)
    return ActivePoint(
        judge_version, "", "configured", None, target, conf,
        f"no operating point set from gold for recall {target:.2f}: the queue flags by the "
        f"judge's labels, checks and review reasons (review_support_below {below:g}) and "
        "states no recall; set one with `judge queue threshold`")


def domains_of(store: Store, answer_ids: Iterable[str]) -> dict[str, str]:
    """Answer id -> its domain tag ('' without one)."""
    ids = list(dict.fromkeys(answer_ids))
    out: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for row in store.db.query(
                f"select id, json_extract(record, '$.domain') as domain from answers "
                f"where id in ({marks})", chunk):
            out[row["id"]] = row["domain"] or ""
    return out


def points_by_version(store: Store, versions: Sequence[str], settings: ReviewSettings
                      ) -> dict[str, list[ActivePoint]]:
    """For ``judge versions`` and summaries: each version's version-wide point and the
    domains with a point of their own."""
    out: dict[str, list[ActivePoint]] = {}
    for version in versions:
        points = [active_point(store, version, "", settings)]
        domains = sorted({r["domain"] for r in store.operating_point_rows(version)
                          if r["domain"] and r["sufficient"]})
        points += [active_point(store, version, d, settings) for d in domains]
        out[version] = points
    return out


# -- the guarantee, watched in production ----------------------------------------------------------

#: Strata whose problems the queue caught, and those of the claims it passed (whose problems
#: it missed; the queue reads them after the flagged ones).
CAUGHT_STRATA = ("flagged", "judge_error")
PASSED_STRATA = ("near_threshold", "passed")


def recall_watch(store: Store, queue_id: str | None = None, n_resamples: int = 2000,
                 seed: int = 0) -> dict[str, Any] | None:
    """What a queue's reviews say of the recall it delivers, against the recall its
    operating points state. Each stratum's problem rate among its decided claims (people's
    labels: an adjudication, else agreeing reviews) is weighted to the stratum's size; the
    problems of the flagged strata over those of all strata is the estimate, with a
    stratified bootstrap interval (seeded). ``status``: ``ok``, ``below`` (the estimate is
    under the target), ``significantly_below`` (so is the whole interval), or
    ``not_estimable`` (no decided claim among the passed ones yet). Unbiased when the
    reviewed items of a stratum are a random part of it (the blind pages give each reviewer
    a shuffled order); the census strata (flagged, near_threshold) need no weighting.
    None when the store holds no queue."""
    import numpy as np

    row = store.queue_row(queue_id)
    if row is None:
        return None
    points = row["operating_points"]
    stated = [p for p in points if p.get("source") in ("gold", "default")
              and p.get("threshold") is not None]
    target = min((p["target_recall"] for p in stated), default=None)
    decided = store.decided_labels()
    strata: dict[str, dict[str, Any]] = {}
    outcomes: dict[str, list[int]] = {}
    for item in store.queue_item_rows(row["id"]):
        if item["kind"] != "claim" or item["stratum"] not in CAUGHT_STRATA + PASSED_STRATA:
            continue
        s = strata.setdefault(item["stratum"], {"size": item["stratum_size"], "reviewed": 0,
                                                "problems": 0})
        label = decided.get(item["subject"])
        if label is None:
            continue
        s["reviewed"] += 1
        s["problems"] += int(label != Label.SUPPORTED)
        outcomes.setdefault(item["stratum"], []).append(int(label != Label.SUPPORTED))

    def estimate(rates: dict[str, float]) -> float:
        caught = sum(strata[h]["size"] * rates[h] for h in rates if h in CAUGHT_STRATA)
        missed = sum(strata[h]["size"] * rates[h] for h in rates if h in PASSED_STRATA)
        return caught / (caught + missed) if caught + missed > 0 else math.nan

    out: dict[str, Any] = {
        "queue_id": row["id"], "target_recall": target,
        "stated_by": [p.get("point_id") or p.get("source") for p in stated],
        "strata": strata, "recall": None, "ci_low": None, "ci_high": None,
    }
    reviewed_missed = sum(strata.get(h, {}).get("reviewed", 0) for h in PASSED_STRATA)
    reviewed_caught = sum(strata.get(h, {}).get("reviewed", 0) for h in CAUGHT_STRATA)
    if not reviewed_missed or not reviewed_caught:
        out["status"] = "not_estimable"
        needs = [f"{n} more {kind}" for n, kind in ((int(not reviewed_caught), "flagged"),
                                                     (int(not reviewed_missed), "passed"))
                 if n]
        out["needs"] = {"flagged": int(not reviewed_caught), "passed": int(not reviewed_missed)}
        out["message"] = ("not yet estimable: people have decided "
                          f"{reviewed_caught} flagged and {reviewed_missed} passed claim(s) of "
                          f"queue {row['id']}; it needs at least one decided claim of each "
                          f"({' and '.join(needs)}: a review by each required reviewer, or "
                          "an adjudication); the sampled passed claims tell what the queue "
                          "misses")
        return out
    rates = {h: s["problems"] / s["reviewed"] for h, s in strata.items() if s["reviewed"]}
    value = estimate(rates)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_resamples):
        boot = {h: float(rng.choice(v, size=len(v)).mean()) for h, v in outcomes.items()}
        draws.append(estimate(boot))
    finite = np.array([d for d in draws if math.isfinite(d)])
    low, high = ((float(np.quantile(finite, 0.025)), float(np.quantile(finite, 0.975)))
                 if len(finite) else (math.nan, math.nan))
    out.update(recall=value, ci_low=low, ci_high=high)
    if target is None or not math.isfinite(value):
        out["status"] = "ok" if target is None else "not_estimable"
        out["message"] = (f"estimated recall {value:.0%} ({low:.0%}-{high:.0%}); the queue "
                          "states no recall (no operating point set from gold)")
    elif value >= target:
        out["status"] = "ok"
        out["message"] = (f"estimated recall {value:.0%} ({low:.0%}-{high:.0%}) from the "
                          f"reviews, stated {target:.0%}: holds")
    else:
        out["status"] = "significantly_below" if high < target else "below"
        out["message"] = (f"warning: estimated recall {value:.0%} ({low:.0%}-{high:.0%}) from "
                          f"the reviews is below the stated {target:.0%}"
                          + (" (the whole interval)" if high < target else "")
                          + ": the judge may have drifted from the gold the threshold was set "
                          "on; set it again on recent reviews (`judge queue threshold`)")
    return out


# -- every review teaches --------------------------------------------------------------------------


def refit_proposals(store: Store, config: dict[str, Any], settings: ReviewSettings
                    ) -> list[dict[str, Any]]:
    """Domains whose reviews have grown by ``settings.refit_after`` since their rule was
    fitted (a domain without a rule of its own: since none), each with the command that
    proposes a domain head; the adoption rule of `judge fit` decides, and the threshold is
    then set again on the domain's gold (`judge queue threshold --domain`). ``config``: the
    judge version's stored settings."""
    rules = config.get("domain_rules") or {}
    out = []
    for domain, decided in sorted(store.decided_by_domain().items()):
        if not domain:
            continue
        fitted = _fitted_on(store, (rules.get(domain) or {}).get("probe_head"))
        new = decided - fitted
        if new >= settings.refit_after:
            out.append({"domain": domain, "decided": decided, "fitted_on": fitted, "new": new,
                        "command": f"judge fit --domain {domain} --adopt -o judge.toml"})
    return out


def _fitted_on(store: Store, ref: Any) -> int:
    """How many reviewed claims the head ``ref`` was fitted on (0: none, or not known)."""
    if not isinstance(ref, dict) or not ref.get("sha256"):
        return 0
    row = store.one("select body from probe_heads where sha256 = ?", [ref["sha256"]])
    if row is None:
        return 0
    about = json.loads(row["body"]).get("about") or {}
    return int(about.get("n") or 0)


class PointFinder:
    """Each verdict row's operating point (per judge version and domain, looked up once)."""

    def __init__(self, store: Store, settings: ReviewSettings) -> None:
        self.store, self.settings = store, settings
        self.points: dict[tuple[str, str], ActivePoint] = {}
        self.domains: dict[str, str] = {}

    def __call__(self, row: dict[str, Any]) -> ActivePoint:
        if row["answer_id"] not in self.domains:
            self.domains.update(domains_of(self.store, [row["answer_id"]]))
        key = (row["judge_version"], self.domains.get(row["answer_id"], ""))
        if key not in self.points:
            self.points[key] = active_point(self.store, *key, self.settings)
        return self.points[key]

    def prefetch(self, answer_ids: Iterable[str]) -> None:
        self.domains.update(domains_of(self.store, answer_ids))

    def used(self) -> list[dict[str, Any]]:
        seen: dict[tuple[Any, ...], dict[str, Any]] = {}
        for p in self.points.values():
            seen.setdefault((p.judge_version, p.domain, p.source, p.point_id), p.as_dict())
        return list(seen.values())


def proposals(store: Store, versions: Sequence[str], settings: ReviewSettings
               ) -> list[dict[str, Any]]:
    """Per domain, the first refit proposal of the queue's judge versions
    (:func:`refit_proposals`)."""
    configs = {r["id"]: json.loads(r["config"]) for r in store.judge_versions()}
    found: dict[str, dict[str, Any]] = {}
    for version in versions:
        for p in refit_proposals(store, configs.get(version, {}), settings):
            found.setdefault(p["domain"], {**p, "judge_version": version})
    return list(found.values())
