"""Commands that measure the judge: ``calibrate``, ``eval-gold``, ``gold-check``.

Exit codes: 0 fine; 1 error or refusal (self-grading ban, a model's labels offered as gold,
invalid gold); 3 a ``--fail-on`` threshold is violated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from judge.cli import app
from judge.cli.common import (
    API_BASE_OPTION,
    DB_OPTION,
    EXISTING_DB_OPTION,
    console,
    fail,
    open_store,
    out,
    output_path,
    print_json,
    progress_bar,
    write_text,
)

THRESHOLD_EXIT = 3

FAIL_ON_HELP = (
    "Threshold KEY=VALUE (repeatable); a violation exits with code 3. Keys: kappa_below, "
    "accuracy_below, balanced_accuracy_below, lenient_rate_above, strict_rate_above, "
    "queue_recall_below, judge_errors_above, schema_errors_above, invalid_evidence_above."
)


def parse_fail_on(values: list[str], kind: str = "calibration") -> dict[str, float]:
    """``KEY=VALUE`` thresholds; a key the ``kind`` of report does not understand is an error
    before anything is judged."""
    from calibration.thresholds import THRESHOLD_KEYS
    from judge.evaluation.reports import GATE_THRESHOLDS

    known = THRESHOLD_KEYS[kind] + (GATE_THRESHOLDS if kind == "calibration" else ())
    thresholds: dict[str, float] = {}
    for raw in values:
        for part in (p.strip() for p in raw.split(",")):
            if not part:
                continue
            key, sep, value = part.partition("=")
            try:
                if not sep:
                    raise ValueError
                thresholds[key.strip()] = float(value)
            except ValueError:
                fail(f"--fail-on {part!r}: expected KEY=NUMBER, e.g. kappa_below=0.6")
            if key.strip() not in known:
                fail(f"--fail-on: unknown {kind} threshold {key.strip()!r}; known: "
                     f"{', '.join(known)}")
    return thresholds


def report_violations(violations: list[dict[str, Any]]) -> None:
    if not violations:
        return
    for v in violations:
        console.print(f"[bold red]threshold violated:[/] {escape(v['message'])}")
    raise typer.Exit(THRESHOLD_EXIT)


def _emit(result: Any, as_json: bool, html: Path | None, thresholds: dict[str, float],
          output_json: Path | None = None, protect: tuple[Path, ...] = ()) -> None:
    """Print (or write) a calibration result; ``protect``: the store and the inputs, which
    the files written must not be."""
    from judge.cli.printing import print_calibration

    try:
        data = result.to_dict(thresholds)
    except ValueError as exc:
        fail(escape(str(exc)))
    if output_json is not None:
        write_text(output_json, json.dumps(data, ensure_ascii=False, indent=2) + "\n",
                   protect[0], protect[1:])
    if as_json:
        print_json(data)
    else:
        print_calibration(result.outcome, data)
        cost = data.get("cost")
        if cost:
            out.print(f"cost: {cost['calls']} model calls, {cost['model_seconds']} s of model "
                      f"time for {cost['claims']} claims ({cost['calls_per_claim']} calls, "
                      f"{cost['seconds_per_claim']} s per claim)")
    if html is not None:
        write_text(html, result.to_html(), protect[0], protect[1:])
        console.print(f"HTML report: {escape(str(html))}")
    report_violations(data["violations"])


@app.command()
def calibrate(
    db: Path = EXISTING_DB_OPTION,
    gold: Path = typer.Option(..., "--gold", help="Gold JSONL file (human labels)."),
    judge_version: str | None = typer.Option(
        None, "--judge-version", help="Judge version id or unique prefix (default: the one "
                                      "version that judged the gold claims)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report."),
    fail_on: list[str] = typer.Option([], "--fail-on", help=FAIL_ON_HELP),
) -> None:
    """Compare the judge's verdicts with human gold labels on the same claims.

    Claims are matched by claim id, or by claim text + sources. The report: confusion
    matrix, direction of error (lenient / strict), review-queue recall and load, kappa, per
    label and subtype, with intervals, and the claims the judge got wrong.

    Refuses, without any override, when the judge model generated the judged answers or
    when a gold label was not given by a person."""
    from judge import api
    from judge.evaluation import EvaluationError
    from judge.evaluation.gold import GoldRejected

    thresholds = parse_fail_on(fail_on)
    if not gold.exists():
        fail(f"gold file {escape(str(gold))} does not exist")
    if html is not None:
        output_path(html, db, [gold])
    store = open_store(db, must_exist=True)
    try:
        result = api.calibrate(gold, db=store, judge_version=judge_version)
    except (EvaluationError, GoldRejected) as exc:
        fail(escape(str(exc)))
    except Exception as exc:  # a clear message, never a traceback
        fail(f"cannot calibrate: {type(exc).__name__}: {escape(str(exc))}")
    _emit(result, as_json, html, thresholds, protect=(db, gold))


@app.command("eval-gold")
def eval_gold(
    gold: Path = typer.Argument(..., help="Gold JSONL file (claim-level, with sources)."),
    db: Path = DB_OPTION,
    config: Path | None = typer.Option(None, "--config", "-c", help="Judge config (TOML)."),
    model: str | None = typer.Option(None, "--model", "-m", help="Any litellm model string."),
    api_base: str | None = API_BASE_OPTION,
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-j", min=1, max=64,
        help="Gold items judged at once (default: the config's concurrency, 1).",
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N items."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report."),
    output_json: Path | None = typer.Option(
        None, "--output-json", help="Also write the JSON report to this file."),
    fail_on: list[str] = typer.Option([], "--fail-on", help=FAIL_ON_HELP),
) -> None:
    """Judge the claims of a gold file, then print the calibration report of that run.

    The gold claims are judged as pre-split claims with their sources. Resumable; stored
    model calls are reused.
    """
    from judge import api
    from judge.cli.common import load_config, preflight
    from judge.evaluation import EvaluationError
    from judge.evaluation.gold import GoldRejected

    thresholds = parse_fail_on(fail_on)
    if not gold.exists():
        fail(f"gold file {escape(str(gold))} does not exist")
    for target in (html, output_json):
        if target is not None:
            output_path(target, db, [gold, config])
    cfg = load_config(config, model=model, api_base=api_base, concurrency=concurrency)
    preflight(cfg, db)  # before anything is stored
    store = open_store(db)
    with progress_bar("judging gold claims", quiet=as_json) as progress:
        try:
            result = api.eval_gold(gold, config=cfg, db=store, limit=limit, progress=progress)
        except (EvaluationError, GoldRejected, api.RecordsError) as exc:
            fail(escape(str(exc)))
        except api.RunStopped as exc:
            fail(f"run stopped: {escape(str(exc))}; the same command resumes", code=4)
        except Exception as exc:  # a clear message, never a traceback
            fail(f"{type(exc).__name__}: {escape(str(exc))}")
    assert result.summary is not None
    for rej in result.summary.rejected_lines:
        console.print(f"[yellow]record {rej['line']} rejected:[/] {escape(rej['error'])}")
    stale = result.summary.stale_warning(db)
    if stale:
        console.print(f"[yellow]warning:[/] {escape(stale)}")
    _emit(result, as_json, html, thresholds, output_json, protect=(db, gold))





@app.command("gold-check")
def gold_check(
    files: list[Path] = typer.Argument(..., help="Gold JSONL file(s)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per file list."),
) -> None:
    """Validate gold files: every problem with its line number.

    Items labelled by a model are refused. Exit code 1 when any file has an invalid or
    refused item.
    """
    from judge.evaluation.gold import read_gold  # scipy: imported when a command needs it

    results = []
    bad = False
    for path in files:
        if not path.exists():
            fail(f"gold file {escape(str(path))} does not exist")
        try:
            gold = read_gold(path)
        except OSError as exc:
            fail(f"cannot read gold file {escape(str(path))}: {escape(str(exc))}")
        bad = bad or not gold.ok
        results.append((gold, gold.summary()))
    if as_json:
        print_json([{**summary, "ok": gold.ok,
                     "problems": [p.as_dict() for p in gold.problems]}
                    for gold, summary in results])
    else:
        for gold, summary in results:
            status = "[green]ok[/]" if gold.ok else "[red]NOT USABLE[/]"
            out.print(f"[bold]{escape(str(gold.path))}[/]: {status}: {summary['items']} valid "
                      f"items of {summary['lines']} lines; labels "
                      f"{escape(json.dumps(summary['labels']))}; annotators "
                      f"{escape(json.dumps(summary['annotators']))}; guideline versions "
                      f"{escape(json.dumps(summary['guideline_versions']))}")
            if summary["revised"] or summary["adjudicated"] or summary["with_reviews"]:
                out.print(f"  revised {summary['revised']}, adjudicated "
                          f"{summary['adjudicated']}, with reviews {summary['with_reviews']}")
            for problem in gold.problems:
                colour = {"error": "red", "refused": "red", "warning": "yellow"}[problem.kind]
                out.print(f"  [{colour}]{escape(str(problem))}[/]")
    if bad:
        raise typer.Exit(1)


def _register_gold_validate() -> None:
    """Also offer ``judge gold validate`` when the review commands' ``gold`` group exists."""
    try:
        from judge.cli.review import gold_app
    except ImportError:
        return
    gold_app.command("validate")(gold_check)


_register_gold_validate()
