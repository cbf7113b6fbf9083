"""``judge fit``: learn the decision of a ``probe`` or ``scores`` judge (its probe head, or its
rule) from reviewed claims (zero model calls).

Exit codes: 0 fitted (and written); 1 error or refusal (too little gold, gold labelled by a
model, self-graded answers, a version that is neither ``probe`` nor ``scores``); 3
``--adopt`` and the adoption rule does not hold (nothing written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from judge.cli import app
from judge.cli.common import (
    EXISTING_DB_OPTION,
    console,
    fail,
    open_store,
    out,
    output_path,
    print_json,
    print_table,
)

NOT_ADOPTED_EXIT = 3


@app.command()
def fit(
    db: Path = EXISTING_DB_OPTION,
    gold: Path | None = typer.Option(
        None, "--gold", help="Gold file (JSONL); default: the reviews adjudicated in the store."),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the fitted judge "
                                "config (TOML)."),
    judge_version: str | None = typer.Option(
        None, "--judge-version", help="The 'scores' version whose stored calls to fit on (id "
                                      "or unique prefix); default: the one that judged the gold."),
    domain: str | None = typer.Option(
        None, "--domain", help="Fit the rule of this domain only (items whose answer has this "
                               "domain tag, else whose dataset it is); other rules are kept."),
    adopt: bool = typer.Option(
        False, "--adopt", help="Write the config only when the adoption rule holds."),
    curve: bool = typer.Option(
        False, "--curve", help="Also the learning curve (quality against reviewed claims)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    holdout: float = typer.Option(
        0.3, "--holdout", help="Share of the gold held out (by answer, seeded) to measure the "
                               "candidate; 0 fits on everything and measures nothing."),
    check_gold: Path | None = typer.Option(
        None, "--check-gold", help="Measure on this gold file instead of holding out part of "
                                   "--gold (its claims are never fitted on)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the folds, the holdout and the curve."),
    queue_recall: float = typer.Option(
        0.9, "--queue-recall", help="Share of human-rejected claims the review queue must "
                                    "catch (with 95% confidence on the fitting claims)."),
    shrink: str | None = typer.Option(
        None, "--shrink", metavar="current|zero",
        help="current: the penalty pulls the weights toward the rule that decides now (the "
             "default with --domain: a domain's few claims adjust the rule); zero: toward 0 "
             "(the default without)."),
) -> None:
    """Learn the judge's decision from your reviewed claims, with zero model calls: the
    probe head of a 'probe' judge (the embedded default), or the rule of a 'scores' judge.

    Fit it, measure it against the current version on held-out claims, and write the judge
    config (with --adopt only when the adoption rule holds). See docs/fit.md."""
    from judge import api
    from judge.evaluation import EvaluationError
    from judge.evaluation.gold import GoldRejected
    from judge.fitting.evaluate import adoption_rule

    if shrink not in (None, "current", "zero"):
        fail(f"--shrink must be current or zero, not {shrink!r}")
    for path in (gold, check_gold):
        if path is not None and not path.exists():
            fail(f"{escape(str(path))} does not exist")
    output_path(output, db, [gold, check_gold])
    if not as_json:  # the rule is stated before anything is measured
        console.print(f"[bold]adoption rule:[/] {escape(adoption_rule(queue_recall))}")
    store = open_store(db, must_exist=True)
    try:
        result = api.fit(gold, db=store, output=output, judge_version=judge_version,
                         domain=domain, holdout=holdout, seed=seed, queue_recall=queue_recall,
                         curve=curve, check_gold=check_gold, adopt=adopt,
                         shrink=shrink)  # type: ignore[arg-type]
    except (EvaluationError, GoldRejected, api.RecordsError, ValueError, OSError) as exc:
        fail(escape(str(exc)))
    finally:
        store.close()
    data = result.to_dict()
    if as_json:
        print_json(data)
    else:
        _print(data)
    if result.output is None:
        console.print(f"[bold yellow]not written:[/] {escape(result.not_written or '')}")
        raise typer.Exit(NOT_ADOPTED_EXIT)
    console.print(f"candidate config ({escape(data['judge_version'])}) written to "
                  f"{escape(str(result.output))}")


def _pct(e: dict[str, Any] | None) -> str:
    if not e or e.get("value") is None:
        return "n/a"
    low, high = e.get("ci_low"), e.get("ci_high")
    ci = f" [{low:.1%}, {high:.1%}]" if low is not None and high is not None else ""
    return f"{e['value']:.1%}{ci}"


def _print(data: dict[str, Any]) -> None:
    f = data["fit"]
    scope = f"domain {data['domain']}" if data["domain"] else "the default rule"
    out.print(f"fitted {scope} on {f['n']} reviewed claims {f['labels']} from "
              f"{data['baseline_version']}: L2 {f['l2']}, review_support_below "
              f"{f['review_support_below']} (out-of-fold queue recall "
              f"{f['queue_recall_out_of_fold']}, load {f['queue_load_out_of_fold']}); "
              f"model calls: {data['model_calls']}")
    left = f.get("left_to_language_heads") or {}
    if left:
        out.print("not fitted on, left to the kept head of their language (their scores by "
                  "it count for the review queue's points): "
                  + ", ".join(f"{n} claims read as {lang}" for lang, n in sorted(left.items())))
    h = data["holdout"]
    if h:
        table = Table(title=f"held-out claims: {h['n']} ({h['source']})")
        table.add_column("figure")
        table.add_column(f"candidate {data['judge_version']}")
        table.add_column(f"current {data['baseline_version']}")
        for key in ("balanced_accuracy", "contradicted_recall", "lenient_rate", "queue_recall",
                    "queue_load", "queue_false_alarm"):
            table.add_row(key, _pct(h[key]["candidate"]), _pct(h[key]["baseline"]))
        print_table(table)
        d = data["drift"]
        out.print(f"drift on the held-out claims: {d['n_flipped']} of {d['n']} flipped, "
                  f"{d['toward_gold']} toward gold, {d['away_from_gold']} away from it")
        for check in data["checks"]:
            mark = "[green]holds[/]" if check["holds"] else "[red]fails[/]"
            out.print(f"  {check['name']}: {mark} ({escape(check['detail'])})")
    for point in data["curve"] or []:
        out.print(f"curve: {point['n']:>6} claims ({point['draws']} draws"
                  f"{', below the minimum' if point['below_minimum'] else ''}): balanced "
                  f"accuracy {_pct(point['balanced_accuracy'])}, queue recall "
                  f"{_pct(point['queue_recall'])}, load {_pct(point['queue_load'])}")
    points = data.get("operating_points")
    if points:
        out.print(f"review queue of the candidate (out of fold, {points['n']} claims): "
                  f"{escape(points['statement'])}"
                  + (f"; {len(points['stored'])} operating points stored for "
                     f"{escape(data['judge_version'])}" if points.get("stored") else ""))
    verdict = "adopt" if data["recommend_adopt"] else "do not adopt"
    out.print(f"recommendation: [bold]{verdict}[/]"
              + (f" ({escape('; '.join(data['reasons']))})" if data["reasons"] else ""))
