"""Issue 32, tuning folds only: does the probe rank claims better when it reads more of a long
source? The probe reads at most ``probe_excerpt_chars`` characters of located evidence (500
before head v6); WiCE's sources run to 2,000 characters and more, and the share of a supported
claim's words found in its 500 located characters is 0.59 against 0.72 in the whole source.

    python research/probe_budget.py --compute [--budget 1500]   # the vectors, ~1 s a claim more
    python research/probe_budget.py [--budget 1500] [--output research/reports/probe_budget.json]

``--compute`` judges both dev gold files with ``research/configs/probe_first21_context_1500.toml``
(``research/configs/probe_first21_context.toml``'s vectors read with ``probe_excerpt_chars`` =
``--budget``, under the uniform head that collects vectors) into ``out/dev_<N>.db``, which
starts as a copy of ``out/dev_all.db``: a claim whose located evidence is the same at both
budgets has the same prompt, hence the same call, and is served from the store; only the
others are read again. The analysis loads every dev claim from each store under its version,
fits the head out of fold on each set of vectors (10 folds grouped by source, L2 300), and
compares the support scores, alone and stacked with the evidence strength (``stacked-v1``,
fitted out of fold on the same folds): ROC AUC overall and per dataset, false alarms at exactly
90% recall and at the 0.9 / 90% point, and the paired group bootstrap of the change in false
alarms (:func:`research.stack_triage.paired`). No held-back file is read.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
sys.path.insert(0, str(REPO))

from judge import version_of  # noqa: E402
from judge.config import JudgeConfig  # noqa: E402
from judge.config.probe import PROBE_EXCERPT_CHARS  # noqa: E402
from judge.decide.excerpts import locate_excerpts  # noqa: E402
from judge.fitting.stack import fit_stack  # noqa: E402
from judge.records import AnswerRecord  # noqa: E402
from research.stack_triage import json_default, measure, paired, table  # noqa: E402
from research.triage import (  # noqa: E402
    DEFAULT_VERSION,
    cv_fit,
    flag_scores,
    load,
    snapshot,
)

GOLD = [REPO / "gold" / "eval_all.jsonl", ROOT / "tuning_subset.jsonl"]
TUNING = ROOT / "tuning_subset.jsonl"
CONFIG = ROOT / "configs" / "probe_first21_context_1500.toml"


def budget_config(budget: int) -> JudgeConfig:
    """The vector-collecting config that reads ``budget`` characters of evidence."""
    return JudgeConfig.load(CONFIG).model_copy(update={"probe_excerpt_chars": budget})


def spans(claim: str, record: AnswerRecord, budget: int) -> list[tuple[str, int | None,
                                                                          int | None]]:
    return [(e.source_id, e.start, e.end) for e in locate_excerpts(claim, record, budget)]


def changed_ids(budget: int) -> list[str]:
    """The ids of the dev gold claims whose located evidence differs at ``budget``
    characters from the default's."""
    out = []
    for path in GOLD:
        for line in path.read_text("utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            record = AnswerRecord.model_validate({
                "id": "a", "answer": item.get("answer") or item["claim"],
                "sources": [{"id": str(i), "text": s["text"]}
                            for i, s in enumerate(item["sources"])]})
            if (spans(item["claim"], record, budget)
                    != spans(item["claim"], record, PROBE_EXCERPT_CHARS)):
                out.append(item["id"])
    return out


def compute(budget: int) -> None:
    from judge.api import eval_gold

    db = REPO / "out" / f"dev_{budget}.db"
    if not db.exists():
        snapshot(REPO / "out" / "dev_all.db", db)  # a consistent copy, written to db
    print(f"{len(changed_ids(budget))} dev claims whose evidence differs at {budget} "
          f"characters: read again; the others are served from {db}")
    t0 = time.time()
    for path in GOLD:
        result = eval_gold(path, config=budget_config(budget), db=db)
        print(f"{path.name}: {result.summary.model_calls} model calls")
    print(f"judged in {time.time() - t0:.0f} s")


def analyse(args: argparse.Namespace) -> dict[str, Any]:
    base = load(snapshot(args.db, None), GOLD, DEFAULT_VERSION, TUNING)
    mixed = load(snapshot(REPO / "out" / f"dev_{args.budget}.db", None), GOLD,
                 version_of(budget_config(args.budget)), TUNING)
    items = mixed.items
    assert [i.gold_id for i in items] == [i.gold_id for i in base.items]
    assert [i.group for i in items] == [i.group for i in base.items]
    changed = set(changed_ids(args.budget))
    idx = np.arange(len(items))
    scores = {}
    p = base.problems
    for name, data in (("500 characters (the default)", base),
                       (f"{args.budget} characters", mixed)):
        fit = cv_fit(data.x, data.y, data.fold, lambdas=[args.l2])
        scores[name] = flag_scores(data, idx, fit.pred, fit.probs[:, 0])
        scores[name + ", stacked-v1"] = np.asarray(fit_stack(
            scores[name].tolist(), data.strength.tolist(), p.tolist(), data.fold).out_of_fold)
    names = list(scores)
    report: dict[str, Any] = {
        "n": len(items), "versions": [base.version, mixed.version],
        "changed": sum(1 for i in items if i.gold_id in changed), "budget": args.budget,
        "l2": args.l2,
        "changed_per_dataset": {ds: sum(1 for i in items
                                        if i.gold_id in changed and i.dataset == ds)
                                for ds in sorted({i.dataset or "" for i in items
                                                  if i.gold_id in changed})},
        "measures": {n: measure(s, p, base.datasets) for n, s in scores.items()},
        "paired": {f"{b} - {a}": paired(scores[a], scores[b], p, [i.group for i in items],
                                        args.bootstrap)
                   for a, b in ((names[0], names[2]), (names[0], names[3]),
                                (names[1], names[3]))}}
    for name, m in report["measures"].items():
        table(name, m)
    for key, d in report["paired"].items():
        print(f"{key}: false alarms at 0.9/0.9 {d['0.9/0.9']['false_alarm']}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--compute", action="store_true")
    parser.add_argument("--db", type=Path, default=REPO / "out" / "dev_all.db")
    parser.add_argument("--l2", type=float, default=300.0)
    parser.add_argument("--bootstrap", type=int, default=300)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if args.compute:
        compute(args.budget)
        return 0
    report = analyse(args)
    report["command"] = "python research/probe_budget.py " + " ".join(argv or sys.argv[1:])
    if args.output:
        args.output.write_text(json.dumps(report, indent=2, default=json_default) + "\n",
                               "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
