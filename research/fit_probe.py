"""Fit the ``probe`` strategy's head from stored calls (no model call), by default on the
*tuning* split only, and report its grouped cross-validated figures per dataset.

    python research/fit_probe.py --db out/probe.db --version VERSION \
        [--gold research/tuning_subset.jsonl [MORE.jsonl ...]] [--first N] [--name NAME] \
        [--head judge/config/heads/NAME.json] [--output research/reports/probe_tuning.json] \
        [--operating judge/config/operating/NAME.json] [--score stacked] [--shift-from HEAD]

Several ``--gold`` files are fitted on together (the shipped head since wave 4 is fitted on
every dev claim: ``gold/eval_all.jsonl research/tuning_subset.jsonl``). ``--operating``
writes the operating points packaged with the head (:mod:`research.operating_default`'s
format), set on the claims' *out-of-fold* flag scores (:func:`research.triage.flag_scores`:
the support score of a head fitted without the claim's fold, ``-inf`` for claims the queue
takes whatever the score), since a head's scores on the claims it was fitted on would state
a recall it does not deliver.

``--hold-strength zh`` (with ``--score stacked``) makes the stacked score hold the evidence
strength of claims read as Chinese at the mean strength of the claims its weights were fitted
on (:mod:`judge.review.score`): the weights are learnt on English claims, whose lexical
overlap means something else.

``--shift-from HEAD`` keeps the language offset of another head file (head v5's, learnt by
:mod:`research.language_head` from the project's unlabelled pairs) in the head written: only
when every pair it was learnt from reads the same evidence at this version's
``probe_excerpt_chars`` (so the same prompt, hence the same vector) as with the head's own
budget, and the two heads read the same prompt and layer; else it refuses.

VERSION is any ``probe`` judge version that judged the tuning claims (the vectors do not
depend on the head, so a bootstrap head that scores every label alike collects them). The fit
is :func:`judge.fitting.probe.fit_probe_rule`, what ``judge fit`` runs: class-balanced
multinomial logistic regression on the standardised 1,536-number hidden states, the L2
strength by 10-fold cross-validated balanced log-loss with folds grouped by source document or
conversation (:func:`judge.fitting.items.group_of`: claims of one Factcheck-GPT response,
one WiCE claim's article, one BEGIN or DialFact dialogue never sit on both sides of a fold),
the review threshold from the out-of-fold verdicts for 90% queue recall with 95% confidence.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from calibration.stats import wilson_bounds  # noqa: E402
from judge.config import JudgeConfig  # noqa: E402
from judge.decide.excerpts import locate_excerpts  # noqa: E402
from judge.decide.probe import read_with  # noqa: E402
from judge.decide.probe_head import LanguageShift, ProbeHead, canonical, load_head  # noqa: E402
from judge.evaluation.gold import GoldFile, load_gold  # noqa: E402
from judge.fitting.items import FitData, FitItem, load_items  # noqa: E402
from judge.fitting.logistic import balanced_accuracy  # noqa: E402
from judge.fitting.probe import fit_probe_rule  # noqa: E402
from judge.fitting.split import folds_of  # noqa: E402
from judge.fitting.weights import SCHEMES, pool_weights  # noqa: E402
from judge.records import AnswerRecord  # noqa: E402
from judge.store import Store  # noqa: E402
from judge.verdicts import LABELS  # noqa: E402
from research.fit_linear import first_items, shown_path  # noqa: E402
from research.readers_transfer import (  # noqa: E402
    BINARY_ONLY,
    NOT_SUPPORTED_SET,
    PER_DOCUMENT,
    label_sets,
)


def figures(y: np.ndarray, pred: np.ndarray, p_s: np.ndarray, threshold: float
            ) -> dict[str, Any]:
    """Balanced accuracy, recall per label, and the queue (label not supported, or
    P(supported) below the threshold) against the human-rejected claims."""
    review = (pred != 0) | (p_s < threshold)
    rejected, accepted = y != 0, y == 0
    out: dict[str, Any] = {
        "n": int(len(y)),
        "balanced_accuracy": round(balanced_accuracy(pred, y), 3),
        "recall": {LABELS[k]: round(float((pred[y == k] == k).mean()), 3)
                   for k in range(4) if (y == k).any()},
        "queue_load": round(float(review.mean()), 3),
    }
    if rejected.any():
        r = float(review[rejected].mean())
        out["queue_recall"] = round(r, 3)
        out["queue_recall_ci"] = [round(v, 3) for v in wilson_bounds(r, int(rejected.sum()))]
    if accepted.any():
        out["queue_false_alarm"] = round(float(review[accepted].mean()), 3)
    return out


def binary_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """Balanced accuracy of supported vs not (label 0 is supported)."""
    return round(balanced_accuracy((pred != 0).astype(int), (y != 0).astype(int)), 3)


def per_dataset(items: list[FitItem], y: np.ndarray, pred: np.ndarray, p_s: np.ndarray,
                threshold: float) -> dict[str, Any]:
    """Each dataset's figures; a dataset whose people gave only supported / not supported
    (SummEdits) gets the binary ones only: its 4-label split is a model's hint, so a 4-label
    accuracy or a recall per label would score the judge against a model."""
    out = {}
    for ds in sorted({i.dataset or "-" for i in items}):
        idx = np.array([k for k, i in enumerate(items) if (i.dataset or "-") == ds])
        shown = figures(y[idx], pred[idx], p_s[idx], threshold)
        if ds in BINARY_ONLY:
            del shown["recall"]
            shown["balanced_accuracy"] = binary_accuracy(y[idx], pred[idx])
            shown["binary_only"] = "supported vs not, as people labelled it"
        out[ds] = shown
    return out


def pooled_figures(items: list[FitItem], y: np.ndarray, pred: np.ndarray, p_s: np.ndarray,
                   threshold: float) -> dict[str, Any]:
    """The figures over every item, the 4-label ones over the items people gave 4 labels
    (SummEdits' split is a model's hint), and supported vs not over every item."""
    out = figures(y, pred, p_s, threshold)
    four = np.array([(i.dataset or "-") not in BINARY_ONLY for i in items])
    if not four.all() and four.any():
        inner = figures(y[four], pred[four], p_s[four], threshold)
        out["balanced_accuracy"] = inner["balanced_accuracy"]
        out["recall"] = inner["recall"]
        out["four_label_n"] = int(four.sum())
    out["binary_balanced_accuracy"] = binary_accuracy(y, pred)
    return out


def gold_about(paths: list[Path], golds: list[GoldFile]) -> dict[str, Any]:
    """The gold a head was fitted on: one file as before, several with a combined sha256
    (of the files' sha256s in order)."""
    if len(paths) == 1:
        return {"gold": shown_path(paths[0]), "gold_sha256": golds[0].sha256}
    return {"gold": [shown_path(p) for p in paths],
            "gold_sha256": hashlib.sha256(
                "\n".join(g.sha256 for g in golds).encode()).hexdigest(),
            "gold_sha256s": [g.sha256 for g in golds]}


def carried_shift(path: Path, config: JudgeConfig) -> LanguageShift:
    """The language offset of the head file at ``path``, checked to mean the same for vectors
    read as ``config`` reads them (see the module's note)."""
    from judge.config.probe import PROBE_EXCERPT_CHARS

    donor = load_head(str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    if donor.shift is None:
        raise SystemExit(f"{path} has no language offset to keep")
    reads = read_with(config)
    for key in ("prompt", "layers", "served"):
        if donor.about.get(key) != reads.get(key):
            raise SystemExit(f"{path} read {key} {donor.about.get(key)!r}, this version reads "
                             f"{reads.get(key)!r}: its offset means another vector")
    budget = int(donor.about.get("excerpt_chars") or PROBE_EXCERPT_CHARS)
    pairs = donor.shift.about.get("pairs") or {}
    if not pairs:
        raise SystemExit(f"{path}'s offset names no pair files to check")
    for about in pairs.values():
        file = ROOT.parent / about["file"]
        if hashlib.sha256(file.read_bytes()).hexdigest() != about["sha256"]:
            raise SystemExit(f"{file} changed since the offset was learnt from it")
        for line in file.read_text("utf-8").splitlines():
            record = AnswerRecord.model_validate_json(line)
            for claim in record.claims or []:
                if (locate_excerpts(claim.text, record, budget)
                        != locate_excerpts(claim.text, record, config.probe_excerpt_chars)):
                    raise SystemExit(f"{record.id}: the evidence read differs at "
                                     f"{config.probe_excerpt_chars} characters; read the pairs "
                                     "again with this version (research/language_head.py)")
    return LanguageShift(donor.shift.rule, donor.shift.offsets, {
        **donor.shift.about,
        "kept_from": {"head": donor.about.get("name"),
                      "why": f"every pair reads the same evidence at {budget} and at "
                             f"{config.probe_excerpt_chars} characters, so the same vector"}})


def held_spec(spec: Any, items: list[FitItem], languages: list[str]) -> Any:
    """``spec`` holding the strength of claims read as ``languages`` at the mean strength of
    the claims it was fitted on (:mod:`judge.review.score`); refuses when a fitted claim reads
    as one of them (its out-of-fold score would then not be the one the queue gives it)."""
    from judge.language import LANGUAGE_RULE, LANGUAGE_RULES
    from judge.review.score import row_text

    read = LANGUAGE_RULES[LANGUAGE_RULE]
    held = [i.gold_id for i in items if read(row_text(i.row)) in languages]
    if held:
        raise SystemExit(f"{len(held)} fitted claims read as {languages} (e.g. {held[0]}): "
                         "their strength cannot be held")
    values = [float(i.row["strength"]) for i in items if i.row.get("strength") is not None]
    return spec.holding(LANGUAGE_RULE, {lang: round(float(np.mean(values)), 4)
                                        for lang in languages})


def write_operating(args: argparse.Namespace, golds: list[GoldFile], head: ProbeHead,
                    loaded: FitData, items: list[FitItem], pred: np.ndarray, probs: np.ndarray
                    ) -> dict[str, Any]:
    """Write the packaged operating points of ``head`` set on out-of-fold flag scores."""
    from research.operating_default import point_entries, print_points
    from research.triage import data_of, flag_scores

    version = loaded.version
    data = data_of(items, loaded.config, version, {}, set())
    scores = flag_scores(data, np.arange(len(data.items)), pred, probs[:, 0])
    spec = None
    support_points: list[dict[str, Any]] = []
    if args.score == "stacked":  # weights out of fold on the same folds (judge fit's rule)
        from judge.fitting.stack import fit_stack

        stack = fit_stack(scores.tolist(), [i.row.get("strength") for i in items],
                          data.problems.tolist(), data.fold)
        spec = stack.spec
        if args.hold_strength:
            spec = held_spec(spec, items, args.hold_strength)
        support_points = point_entries(scores.tolist(), data.problems.tolist(),
                                       data.datasets.tolist())[1]
        scores = np.asarray(stack.out_of_fold)
    about = gold_about(args.gold, golds)
    n = len(data.items)
    out: dict[str, Any] = {
        "head": f"builtin:{args.head.stem}" if args.head else args.name,
        "head_sha256": canonical(head)[1],
        "judge_version": None,
        "gold": {"description": f"out-of-fold scores of the {n} dev claims the head was fitted "
                                "on (10 folds grouped by source)",
                 "file": about["gold"], "sha256": about["gold_sha256"], "matched": n,
                 "unscored": 0},
        "scores_from": f"{version} (vectors), heads fitted without each claim's fold",
        "method": None, "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv), "points": [],
    }
    out["method"], out["points"] = point_entries(scores.tolist(), data.problems.tolist(),
                                                 data.datasets.tolist())
    if spec is not None:
        out["scores_from"] += ("; the stacked score's weights fitted out of fold on the same "
                               "folds (judge.fitting.stack), those kept fitted on every claim")
        for p in out["points"]:
            p["statement"] = p["statement"].replace("support <", "stacked score <", 1)
            p["score"] = spec.as_dict()
        out["support_only_points"] = support_points
    args.operating.parent.mkdir(parents=True, exist_ok=True)
    args.operating.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n",
                              encoding="utf-8")
    print_points(out)
    return {"file": shown_path(args.operating), "points": len(out["points"])}


def pool_fit(items: list[FitItem], weighting: str | None
             ) -> tuple[Callable[[np.ndarray], np.ndarray] | None, np.ndarray | None]:
    """The pool's weighting of the items a head is fitted on (:func:`pool_weights`, per
    document for SummEdits) and the label sets people gave: a SummEdits claim people found
    inconsistent may be contradicted or not in the source (its 4-label split is a hint, never
    a person's label). ``weighting`` None: class-balanced, every label set one label, as
    before the pool."""
    if weighting is None:
        return None, None
    datasets = [i.dataset or "-" for i in items]
    labels = [i.label for i in items]
    classes, allowed = label_sets(datasets, labels)
    groups = [i.group for i in items]

    def weigh(idx: np.ndarray) -> np.ndarray:
        return pool_weights([datasets[k] for k in idx], [classes[k] for k in idx],
                            [labels[k] for k in idx], [groups[k] for k in idx], weighting,
                            PER_DOCUMENT)

    return weigh, allowed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--version", required=True, help="a probe judge version of the run")
    parser.add_argument("--gold", type=Path, nargs="+", default=[ROOT / "tuning_subset.jsonl"])
    parser.add_argument("--first", type=int,
                        help="fit on the first N items of --gold only (one file)")
    parser.add_argument("--queue-recall", type=float, default=0.9)
    parser.add_argument("--name", default="probe-head")
    parser.add_argument("--head", type=Path, help="write the fitted head file here")
    parser.add_argument("--output", type=Path, help="write the report here")
    parser.add_argument("--operating", type=Path,
                        help="write the head's packaged operating points here (out of fold)")
    parser.add_argument("--shift-from", type=Path,
                        help="keep this head file's language offset (checked, see above)")
    parser.add_argument("--hold-strength", nargs="+", metavar="LANG", default=[],
                        help="with --score stacked: hold the strength of claims read as these "
                             "languages (judge.language) at the fitted claims' mean")
    parser.add_argument("--score", choices=("support", "stacked"), default="support",
                        help="the flag score the packaged points are set on: support, or the "
                             "stacked score of support and evidence strength")
    parser.add_argument("--weighting", choices=SCHEMES, default=None,
                        help="fit on the pool's weighting (judge.fitting.weights), SummEdits "
                             "as supported vs not; default: class-balanced, as before")
    parser.add_argument("--l2", type=float, default=None,
                        help="fit with this L2 strength (chosen out of dataset by "
                             "research/readers_transfer.py) instead of the grouped folds' pick")
    args = parser.parse_args(argv)
    if args.first is not None and len(args.gold) > 1:
        parser.error("--first takes one --gold file")
    if any("fresh_check" in str(g) for g in args.gold):
        parser.error("fresh_check.jsonl is held back: never fitted on")
    if any("ocnli" in g.name for g in args.gold):
        parser.error("OCNLI is measure-only (non-commercial): never fitted on")
    store = Store.open(args.db)
    golds = [first_items(load_gold(g), args.first) for g in args.gold]
    loaded = [load_items(store, g, args.version) for g in golds]
    data = loaded[0]
    items = [i for d in loaded for i in d.items]
    x = np.vstack([np.asarray(i.vector, dtype=np.float64) for i in items])
    y = np.array([i.y for i in items])
    fold = folds_of(items)
    from judge.models.embedded import ENV_GGUF, MODEL_SHA256

    packaged = data.config.model.startswith("embedded/") and not os.environ.get(ENV_GGUF)
    about = {
        "name": args.name,
        "model": data.config.model,
        **({"gguf_sha256": MODEL_SHA256} if packaged else {}),
        **read_with(data.config),
        "vectors_from": data.version,
        "fitted_on": {**gold_about(args.gold, golds), "first": args.first,
                      "labels": dict(Counter(i.label for i in items)),
                      "datasets": {ds: sum(1 for i in items if i.dataset == ds)
                                   for ds in sorted({i.dataset or "-" for i in items})}},
        "fit": "research/fit_probe.py (judge.fitting.probe.fit_probe_rule), 10-fold CV "
               "grouped by source document or conversation",
    }
    weigh, allowed = pool_fit(items, args.weighting)
    if args.weighting:
        about["weighting"] = {"scheme": args.weighting, "per_document": list(PER_DOCUMENT),
                              "label_sets": {ds: list(NOT_SUPPORTED_SET) for ds in BINARY_ONLY}}
    fitted = fit_probe_rule(x, y, fold, args.queue_recall, about=about,
                            lambdas=None if args.l2 is None else [args.l2],
                            weigh=weigh, allowed=allowed)
    head = fitted.model
    assert isinstance(head, ProbeHead)
    assert fitted.out_of_fold is not None
    pred, probs = fitted.out_of_fold
    threshold = fitted.review_support_below
    cv = pooled_figures(items, y, pred, probs[:, 0], threshold)
    shift = carried_shift(args.shift_from, data.config) if args.shift_from else None
    head = canonical(replace(head, about={**head.about, "cross_validated": cv},
                             shift=shift))[0]
    report: dict[str, Any] = {
        "gold": [shown_path(g) for g in args.gold], "version": data.version, "n": len(items),
        "l2": fitted.l2, "review_support_below": threshold,
        "cross_validated_balanced_log_loss": {
            str(k): round(v, 4) for k, v in fitted.cv_balanced_log_loss.items()},
        "cross_validated_balanced_accuracy": {
            str(k): round(v, 3) for k, v in fitted.cv_balanced_accuracy.items()},
        "cross_validated": cv,
        "cross_validated_per_dataset": per_dataset(items, y, pred, probs[:, 0], threshold),
        "skipped": dict(sum((Counter(d.skipped) for d in loaded), Counter())),
        "model_calls": sum(d.model_calls for d in loaded),
    }
    if args.head:
        args.head.parent.mkdir(parents=True, exist_ok=True)
        args.head.write_text(head.dumps(), encoding="utf-8")
        report["head"] = {"file": shown_path(args.head), "sha256": canonical(head)[1]}
    if args.operating:
        report["operating"] = write_operating(args, golds, head, data, items, pred, probs)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
