"""``judge drift``: two judge versions on the same claims (exit 3 when a ``--fail-on``
threshold is violated)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from judge.cli import app
from judge.cli.calibrate import parse_fail_on, report_violations
from judge.cli.common import (
    EXISTING_DB_OPTION,
    console,
    fail,
    open_store,
    output_path,
    print_json,
    write_text,
)

DRIFT_FAIL_ON_HELP = (
    "Threshold KEY=VALUE (repeatable); a violation exits with code 3. Keys: kappa_below, "
    "agreement_below, flip_rate_above, lenient_rate_increase, strict_rate_increase, "
    "accuracy_drop, mcnemar_p_below, stuart_maxwell_p_below."
)

#: Flipped claims listed in the terminal unless ``--show`` says otherwise.
DEFAULT_SHOW = 10


@app.command()
def drift(
    db: Path = EXISTING_DB_OPTION,
    version_a: str = typer.Option(..., "--from", help="Judge version A (id or unique prefix)."),
    version_b: str = typer.Option(..., "--to", help="Judge version B (id or unique prefix)."),
    gold: Path | None = typer.Option(
        None, "--gold", help="Gold file: judge its claims with both versions if needed, and "
                             "compare each version with the gold labels."),
    input: Path | None = typer.Option(
        None, "--input", help="Answer records both versions must have judged (run if needed)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report."),
    fail_on: list[str] = typer.Option([], "--fail-on", help=DRIFT_FAIL_ON_HELP),
    show: int = typer.Option(
        DEFAULT_SHOW, "--show", min=0,
        help="Flipped claims to list in the terminal (0: none); --html and --json hold every "
             "one."),
) -> None:
    """Compare two judge versions on the same claims: flips, agreement, significance.

    The report opens with its verdict: with --gold, whether B agrees with people more or
    less than A (accuracy, its change with an interval, flips toward and away from gold).
    Then the flip table, agreement and kappa, McNemar / Stuart–Maxwell / Bowker, label rate
    changes, each version against gold, and the first --show flipped claims with their text
    and both rationales (the HTML and JSON hold every one).
    """
    from judge import api
    from judge.cli.common import progress_bar
    from judge.cli.printing import print_drift
    from judge.evaluation import EvaluationError
    from judge.evaluation.gold import GoldRejected

    thresholds = parse_fail_on(fail_on, "drift")
    for path in (gold, input):
        if path is not None and not path.exists():
            fail(f"{escape(str(path))} does not exist")
    if html is not None:
        output_path(html, db, [gold, input])
    store = open_store(db, must_exist=True)
    with progress_bar("judging", quiet=as_json) as bar:
        def progress(version: str, done: int, total: int) -> None:
            bar(done, total)

        try:
            result = api.drift(version_a, version_b, db=store, gold=gold, records=input,
                               progress=progress)
            data = result.to_dict(thresholds)
        except (EvaluationError, GoldRejected, api.RecordsError, ValueError) as exc:
            fail(escape(str(exc)))
        except api.RunStopped as exc:
            fail(f"run stopped: {escape(str(exc))}; the same command resumes", code=4)
    if as_json:
        print_json(data)
    else:
        print_drift(result.report, data, result.claims, show)
    if html is not None:
        write_text(html, result.to_html(thresholds), db, [gold, input])
        console.print(f"HTML report: {escape(str(html))}")
    report_violations(data["violations"])

