"""``judge fit`` in order: read the fit items, check the minimum gold, hold out part of it
(or take a separate check gold), fit, build the candidate config, measure candidate and
current version on the held-out claims, apply the adoption rule, and (``curve``) the
learning curve. No model call: everything comes from the store."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.config import JudgeConfig, judge_version
from judge.config.probe import ProbeHeadRef
from judge.config.score_model import DEFAULT_RULE, FEATURES, DomainRule
from judge.decide.probe import read_with as probe_read_with
from judge.decide.probe_head import ProbeHead, canonical
from judge.evaluation.gold import GoldFile
from judge.fitting import FitError, FitRefused
from judge.fitting.curve import learning_curve
from judge.fitting.evaluate import (
    adoption_rule,
    compare,
    drift_summary,
    measure,
    rule_checks,
    verdicts_for,
)
from judge.fitting.items import FitData, FitItem, load_items
from judge.fitting.logistic import Fitted
from judge.fitting.operating import PointGold, unseen_scores
from judge.fitting.rules import current_rule, fit_items_rule, kept, left_to_languages
from judge.fitting.split import folds_of, holdout_split, label_counts, require_minimum
from judge.fitting.toml import config_toml
from judge.models.prompts import prompts_dir, template_hash
from judge.outputs import write_text
from judge.records.models import DOMAIN_PATTERN
from judge.review.triage import packaged_spec
from judge.store import Store


@dataclass
class FitResult:
    """A fitted candidate, how it was fitted, and how it measures against the current
    version; :meth:`to_dict` is the JSON contract of ``judge fit --json``."""

    baseline_version: str
    baseline: JudgeConfig
    candidate_version: str
    candidate: JudgeConfig
    domain: str | None
    fitted: Fitted
    rule: str
    gold: dict[str, Any]
    fit_labels: dict[str, int]
    skipped: dict[str, int]
    holdout: dict[str, Any] | None = None
    drift: dict[str, Any] | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    recommend_adopt: bool = False
    reasons: list[str] = field(default_factory=list)
    curve: list[dict[str, Any]] | None = None
    model_calls: int = 0
    seed: int = 0
    queue_recall: float = 0.9
    #: a probe head's gold flag scores no fitted head saw: the candidate's operating points
    #: are set on them when the config is written (:mod:`judge.fitting.operating`)
    point_gold: PointGold | None = None
    #: fitting claims left to a kept head of their language (language -> claims): not
    #: fitted on, scored by that head for the operating points
    left_to_languages: dict[str, int] = field(default_factory=dict)
    #: the ids of the operating points stored for the candidate when its config was written
    points_stored: list[str] = field(default_factory=list)
    #: where the candidate config was written (None: not written, ``not_written`` says why)
    output: str | None = None
    not_written: str | None = None
    generated_at: str = field(
        default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "generated_at": self.generated_at,
            "judge_version": self.candidate_version,
            "baseline_version": self.baseline_version,
            "domain": self.domain,
            "rule": self.rule,
            "recommend_adopt": self.recommend_adopt,
            "reasons": self.reasons,
            "checks": self.checks,
            "holdout": self.holdout,
            "drift": self.drift,
            "fit": {**self.fitted.as_dict(), "labels": self.fit_labels, "seed": self.seed,
                    "queue_recall_target": self.queue_recall,
                    "left_to_language_heads": self.left_to_languages},
            "gold": {**self.gold, "skipped": self.skipped},
            "curve": self.curve,
            "operating_points": ({**self.point_gold.summary(), "stored": self.points_stored,
                                  "statement": self.point_gold.statement(self.queue_recall)}
                                 if self.point_gold else None),
            "model_calls": self.model_calls,
            "output": self.output,
            "not_written": self.not_written,
        }

    def toml(self) -> str:
        """The candidate judge config, with how it was fitted in its header."""
        scope = f"the rule of domain {self.domain!r}" if self.domain else "the default rule"
        header = [
            f"Written by `judge fit` ({self.generated_at}): {scope} fitted on "
            f"{self.fitted.n} reviewed claims of {self.gold['file']} from the stored calls of "
            f"{self.baseline_version}; L2 {self.fitted.l2} (toward "
            f"{'the rule it replaces' if self.fitted.shrunk_toward_current else '0'}), "
            "review_support_below "
            f"{self.fitted.review_support_below} (queue recall target {self.queue_recall:.0%}).",
        ]
        if self.holdout is not None:
            h = self.holdout
            header.append(
                f"Held-out claims: {h['n']}; balanced accuracy "
                f"{_pct(h['balanced_accuracy']['candidate'])} (current "
                f"{_pct(h['balanced_accuracy']['baseline'])}), queue recall "
                f"{_pct(h['queue_recall']['candidate'])}.")
        if self.point_gold is not None:
            header.append("Review queue: " + self.point_gold.statement(self.queue_recall)
                          + " (out of fold; stored for this version when written).")
        header.append("Adoption rule: " + self.rule + ".")
        header.append(f"Recommendation: {'adopt' if self.recommend_adopt else 'do not adopt'}"
                      + (f" ({'; '.join(self.reasons)})" if self.reasons else "") + ".")
        return config_toml(self.candidate, _wrap(header))


def _pct(e: dict[str, Any]) -> str:
    v = e.get("value")
    return "n/a" if v is None else f"{v:.1%}"


def _wrap(lines: list[str], width: int = 96) -> list[str]:
    out: list[str] = []
    for line in lines:
        words, current = line.split(), ""
        for word in words:
            if current and len(current) + 1 + len(word) > width:
                out.append(current)
                current = word
            else:
                current = f"{current} {word}".strip()
        out.append(current)
    return out


def rule_features(config: JudgeConfig, domain: str | None) -> tuple[str, ...]:
    """The features a new rule weighs: those of the rule it replaces, else every feature."""
    model = config.rule_for(domain)[1].score_model
    if model is None:
        return FEATURES
    used = {name for row in model.weights.values() for name in row}
    return tuple(name for name in FEATURES if name in used)


def head_ref(head: ProbeHead) -> ProbeHeadRef:
    """A fitted head's reference: a content-addressed file name, written beside the config
    that pins it (:func:`write_config`)."""
    sha256 = canonical(head)[1]
    return ProbeHeadRef(file=f"probe-head-{sha256[:12]}.json", sha256=sha256)


def candidate_config(baseline: JudgeConfig, fitted: Fitted, domain: str | None) -> JudgeConfig:
    """The baseline config with the fitted rule: the default rule replaced (no ``domain``),
    or the domain's rule added or replaced; everything else kept."""
    data = baseline.model_dump()
    if isinstance(fitted.model, ProbeHead):
        ref = head_ref(fitted.model).model_dump()
        if domain is None:
            data.update(probe_head=ref, review_support_below=fitted.review_support_below)
        else:
            rules = {name: rule.model_dump(exclude_none=True)
                     for name, rule in baseline.domain_rules.items()}
            rules[domain] = {"probe_head": ref,
                             "review_support_below": fitted.review_support_below}
            data["domain_rules"] = rules
        return JudgeConfig.model_validate(data)
    if domain is None:
        data.update(score_model=fitted.model.model_dump(),
                    review_support_below=fitted.review_support_below)
        if baseline.score_model is None:  # a bias rule before: the linear rule replaces it
            data.update(label_bias={}, signals=False)
    else:
        rules = {name: rule.model_dump(exclude_none=True)
                 for name, rule in baseline.domain_rules.items()}
        rules[domain] = DomainRule(score_model=fitted.model,
                                   review_support_below=fitted.review_support_below).model_dump()
        data["domain_rules"] = rules
    return JudgeConfig.model_validate(data)


def version_of(config: JudgeConfig) -> str:
    root = prompts_dir()
    templates = {f"{name}/{version}": template_hash(name, version, root)
                 for name, version in sorted(config.prompts.items())}
    return judge_version(config, templates)


def fit_store(
    store: Store,
    gold: GoldFile,
    *,
    judge_version: str | None = None,
    domain: str | None = None,
    holdout: float = 0.3,
    seed: int = 0,
    queue_recall: float = 0.9,
    curve: bool = False,
    check_gold: GoldFile | None = None,
    from_reviews: bool = False,
    toward_current: bool | None = None,
) -> FitResult:
    """Fit the rule of ``domain`` (None: the default rule) on ``gold`` from the stored calls
    of ``judge_version``; measure it on ``check_gold``, else on ``holdout`` (a share of the
    gold, by answer, seeded; 0: no measurement, so no recommendation to adopt).
    ``toward_current`` (default: when fitting a domain's rule): shrink toward the rule that
    decides now rather than toward 0, so a domain's few claims adjust the rule rather than
    replace it."""
    if not 0.0 <= holdout < 1.0:
        raise FitError(f"--holdout {holdout}: the held-out share must be in [0, 1)")
    if not 0.0 < queue_recall < 1.0:
        raise FitError(f"--queue-recall {queue_recall}: must be between 0 and 1")
    if domain is not None and (domain == DEFAULT_RULE or not re.fullmatch(DOMAIN_PATTERN, domain)):
        raise FitError(f"--domain {domain!r} is not a domain name (letters, digits and _ . : -; "
                       f"{DEFAULT_RULE!r} is reserved)")
    check: FitData | None = None
    if check_gold is not None:
        check = load_items(store, check_gold, judge_version, domain=domain)
        judge_version = check.version
    data = load_items(store, gold, judge_version, domain=domain,
                      exclude_claims={i.claim.id for i in check.items} if check else (),
                      skip_refused=from_reviews)
    if not data.items:
        raise FitRefused(_nothing_in_scope(data, domain))
    items = data.items
    what = f"{data.gold['file']}" + (f" (domain {domain})" if domain else "")
    held: list[FitItem] = []
    if check is not None:
        require_minimum(label_counts(items), what)
        require_minimum(label_counts(check.items), f"the check gold {check.gold['file']}",
                        measures=True)
        fit_items, held = items, check.items
    elif holdout > 0:
        require_minimum(label_counts(items), what, parts=2)
        fit_idx, held_idx = holdout_split(items, holdout, seed)
        fit_items, held = [items[k] for k in fit_idx], [items[k] for k in held_idx]
        require_minimum(label_counts(fit_items), f"the fitting side of {what} (whole answers "
                        "go to one side; answers with many claims make the sides uneven)")
        require_minimum(label_counts(held), f"the held-out side of {what}", measures=True)
    else:
        require_minimum(label_counts(items), what)
        fit_items = items
    return fit_and_measure(
        data, fit_items, held, domain=domain, seed=seed, queue_recall=queue_recall,
        curve=curve, source="check gold" if check is not None else
        f"held out {holdout:.0%} of the gold by answer",
        extra_calls=check.model_calls if check else 0,
        toward_current=domain is not None if toward_current is None else toward_current)


def fit_and_measure(
    data: FitData,
    fit_items: list[FitItem],
    held: list[FitItem],
    *,
    domain: str | None = None,
    seed: int = 0,
    queue_recall: float = 0.9,
    curve: bool = False,
    source: str = "held-out claims",
    extra_calls: int = 0,
    toward_current: bool = False,
) -> FitResult:
    """Fit on ``fit_items`` and measure on ``held`` (may be empty), with no check of the
    minimum gold: :func:`fit_store` checks it first. ``toward_current``: the penalty shrinks
    the weights toward the rule that decides the domain now (else toward 0)."""
    names = rule_features(data.config, domain)
    # a head with heads per language: the fit takes the place of the head that decides most
    # of its claims (judge.fitting.rules.current_rule)
    base = current_rule(data.config, domain, fit_items)
    prior = base if toward_current else None
    origin = probe_read_with(data.config) if data.config.strategy == "probe" else None
    shift, languages = kept(base)
    # claims a kept head of their language decides are not the outer head's to learn from;
    # their scores by that head (fitted on none of them) still count for the points
    fit_items, by_language = left_to_languages(fit_items, languages)
    theirs = [item for items in by_language.values() for item in items]
    if theirs:
        require_minimum(label_counts(fit_items), f"the claims the outer head decides ("
                        f"{len(theirs)} others are read as a language a head of its own "
                        "decides, and are not fitted on)")
    folds = folds_of(fit_items, seed=seed)
    fitted = fit_items_rule(fit_items, folds, names, queue_recall, prior, origin, shift,
                            languages)
    candidate = candidate_config(data.config, fitted, domain)
    point_gold = None
    if isinstance(fitted.model, ProbeHead) and fitted.out_of_fold is not None:
        # the flag score's form follows the baseline head's packaged point (stacked or not)
        stacked = data.config.probe_head is not None and \
            packaged_spec(data.config.probe_head.sha256) is not None
        point_gold = unseen_scores(fit_items, [*theirs, *held], fitted.model,
                                   fitted.out_of_fold[1][:, 0], queue_recall,
                                   folds if stacked else None)
    result = FitResult(
        baseline_version=data.version, baseline=data.config,
        candidate_version=version_of(candidate), candidate=candidate, domain=domain,
        fitted=fitted, rule=adoption_rule(queue_recall), gold=data.gold,
        fit_labels=label_counts(fit_items), skipped=dict(data.skipped),
        model_calls=data.model_calls + extra_calls, seed=seed, queue_recall=queue_recall,
        point_gold=point_gold,
        left_to_languages={k: len(v) for k, v in sorted(by_language.items())})
    if held:
        _measure(result, held, source)
    else:
        result.reasons.append("nothing held out (--holdout 0 without --check-gold): the rule "
                              "was not measured, so it is not recommended")
    if result.candidate_version == result.baseline_version:
        result.recommend_adopt = False
        result.reasons.append("the fitted rule is the current version's own rule")
    if curve and held:
        result.curve = learning_curve(
            fit_items, held, names, lambda f: candidate_config(data.config, f, domain),
            seed=seed, queue_recall=queue_recall, prior=prior,
            read_with=origin, shift=shift, languages=languages)
    return result


def _measure(result: FitResult, held: list[FitItem], source: str) -> None:
    base = verdicts_for(held, result.baseline, result.baseline_version)
    cand = verdicts_for(held, result.candidate, result.candidate_version)
    figures = compare(measure(held, cand), measure(held, base))
    stored_differs = sum(b.label != i.row["label"] for i, b in zip(held, base, strict=True))
    result.holdout = {
        **figures,
        "source": source,
        "labels": label_counts(held),
        "baseline_recomputed_differs_from_stored": stored_differs,
    }
    result.drift = drift_summary(held, base, cand, result.baseline_version,
                                 result.candidate_version)
    result.checks = rule_checks(figures, result.queue_recall)
    result.recommend_adopt = all(c["holds"] for c in result.checks)
    result.reasons += [f"{c['name']} fails: {c['detail']}"
                       for c in result.checks if not c["holds"]]


def _nothing_in_scope(data: FitData, domain: str | None) -> str:
    if domain is not None:
        return (f"no gold item of {data.gold['file']} with a stored score call is of domain "
                f"{domain!r} (an item's domain is its answer's domain tag, else its dataset)")
    reasons = ", ".join(f"{n} {why}" for why, n in data.skipped.items()) or "none in scope"
    return f"no gold item of {data.gold['file']} can be fitted on: {reasons}"


def write_config(result: FitResult, path: Path, adopt: bool) -> bool:
    """Write the candidate config to ``path``; with ``adopt``, only when the adoption rule
    holds (``result.not_written`` says why not). Returns whether it was written."""
    if adopt and not result.recommend_adopt:
        result.not_written = ("--adopt: the adoption rule does not hold ("
                              + "; ".join(result.reasons) + "); nothing written")
        return False
    if isinstance(result.fitted.model, ProbeHead):  # the head file the config pins, beside it
        ref = head_ref(result.fitted.model)
        write_text(path.parent / ref.file, result.fitted.model.dumps())
    write_text(path, result.toml())
    result.output = str(path)
    return True
