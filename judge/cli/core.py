"""Core commands: run, show, export, replay, versions, prompts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from judge.cli import app
from judge.cli.common import (
    DB_OPTION,
    EXISTING_DB_OPTION,
    console,
    fail,
    load_config,
    open_store,
    out,
    print_json,
    progress_bar,
)
from judge.runs.summary import RunSummary

prompts_app = typer.Typer(help="Prompt templates: check the manifest, lock new versions.")
app.add_typer(prompts_app, name="prompts")


@app.command()
def run(
    input: Path = typer.Argument(
        ..., help="JSONL file of answer records, one per line ('-' reads standard input)."),
    db: Path = DB_OPTION,
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Judge config (TOML); default ./judge.toml if present."),
    model: str | None = typer.Option(None, "--model", "-m", help="Any litellm model string."),
    concurrency: int | None = typer.Option(None, "--concurrency", "-j", min=1, max=64),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object at the end."),
    executor: str = typer.Option(
        "local", "--executor", help="local, or ray: spread the answers over Ray workers."),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="Ray cluster to join (default: start a local one)."),
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="Ray workers (default: one per CPU of the cluster)."),
) -> None:
    """Judge a batch of answers claim by claim. Resumable: run it again to finish or reuse.

    Exit code 0 when every line was accepted, 2 when some lines were rejected (the rest
    are still judged), 1 on a fatal error.
    """
    from judge import api

    if str(input) != "-" and not input.exists():
        fail(f"input file {input} does not exist")
    if executor not in ("local", "ray"):
        fail(f"--executor must be local or ray, not {executor!r}")
    cfg = load_config(config, model=model, concurrency=concurrency)
    store = open_store(db)
    source = sys.stdin.buffer if str(input) == "-" else input
    with progress_bar("judging", quiet=as_json) as progress:
        try:
            results = api.judge_file(source, config=cfg, db=store, progress=progress,
                                     executor=executor,  # type: ignore[arg-type]
                                     ray_address=ray_address, workers=workers)
        except KeyboardInterrupt:
            fail("interrupted; run the same command again to resume", code=130)
        except Exception as exc:
            fail(f"{type(exc).__name__}: {escape(str(exc))}")
    summary = results.summary
    for rej in summary.rejected_lines:
        console.print(f"[yellow]line {rej['line']} rejected:[/] {escape(rej['error'])}")
    if as_json:
        print_json(summary.as_dict())
    else:
        print_summary(summary)
    stale = summary.stale_warning(db)
    if stale:
        console.print(f"[yellow]warning:[/] {escape(stale)}")
    if summary.rejected_lines:
        console.print(
            f"[yellow]{len(summary.rejected_lines)} line(s) rejected[/]; the rest was judged"
        )
        raise typer.Exit(2)


def print_summary(s: RunSummary) -> None:
    table = Table(title=f"run {s.run_id}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("judge version", s.judge_version),
        (
            "answers",
            f"{s.answers} ({s.answers_judged_now} judged now, {s.answers_from_store} from store)",
        ),
        ("claims", str(s.claims)),
        ("labels", ", ".join(f"{k} {v}" for k, v in s.labels.items()) or "-"),
        ("subtypes", ", ".join(f"{k} {v}" for k, v in s.subtypes.items()) or "-"),
        ("flagged for review", str(s.flagged)),
        ("judge errors", str(s.judge_errors)),
        ("refused answers (self-grading)", str(len(s.refused_answers))),
        ("rejected lines", str(len(s.rejected_lines))),
        ("model calls", f"{s.model_calls} made, {s.cached_calls} served from store"),
        ("tokens", f"{s.prompt_tokens} prompt, {s.completion_tokens} completion"),
        ("wall time", f"{s.wall_seconds:.1f} s"),
    ]
    if s.model_mismatch:
        rows.append(("[yellow]model answered as[/]", ", ".join(s.model_mismatch)))
    for key, value in rows:
        table.add_row(key, escape(value))
    out.print(table)


@app.command()
def show(
    answer_id: str = typer.Argument(..., help="Answer id."),
    db: Path = EXISTING_DB_OPTION,
    judge_version: str | None = typer.Option(None, "--judge-version", help="Default: all."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show an answer with each claim, label, subtype, evidence, checks and review reasons."""
    store = open_store(db, must_exist=True)
    answer = store.answer(answer_id)
    if answer is None:
        fail(f"no answer {answer_id!r} in {db}")
    rows = list(store.verdict_rows(answer_id=answer_id, judge_version=judge_version))
    refused = store.refused_reason(answer_id)
    if as_json:
        print_json(
            {
                "answer": {k: answer[k] for k in ("id", "question", "answer", "generator")},
                "refused": refused,
                "claims": rows,
            }
        )
        return
    out.print(f"[bold]{escape(answer_id)}[/]  generator: {escape(answer['generator'] or '-')}")
    if answer["question"]:
        out.print(f"[dim]Q:[/] {escape(answer['question'])}")
    out.print(f"[dim]A:[/] {escape(answer['answer'])}\n")
    if refused:
        out.print(f"[red]refused:[/] {escape(refused)}")
    statuses = store.answer_statuses(answer_id)
    if statuses:
        expected = answer["expected_status"]
        mismatch = expected and expected not in statuses
        out.print(
            f"status: {', '.join(sorted(statuses))}"
            + (f"  [yellow](expected {expected})[/]" if mismatch else "")
            + "\n"
        )
    for row in rows:
        colour = {"supported": "green", "judge_error": "magenta"}.get(row["label"], "red")
        flag = "[bold yellow]REVIEW[/] " if row["review"] else ""
        out.print(
            f"{flag}[{colour}]{row['label']}[/]"
            f"{' / ' + row['subtype'] if row['subtype'] else ''}  "
            f"strength {row['strength']:.2f}  [dim]{row['judge_version']}[/]"
        )
        out.print(f"  claim: {escape(row['claim'])}")
        cites = (
            ", ".join(
                c["source"] + (f" {c['path']}" if c.get("path") else "") for c in row["citations"]
            )
            or "none"
        )
        out.print(f"  cites: {escape(cites)}")
        for ev in row["evidence"]:
            mark = "found" if ev.get("found") else "[red]NOT FOUND[/]"
            out.print(
                f"  evidence [{escape(ev['source_id'])}] {mark}: "
                f"{escape(repr(ev.get('quote') or ev.get('path')))}"
            )
        if row["rationale"]:
            out.print(f"  rationale: {escape(row['rationale'])}")
        for check in row["checks"]:
            if check["outcome"] != "skip":
                style = "red" if check["outcome"] == "fail" else "dim"
                detail = json.dumps(check["detail"], ensure_ascii=False)[:160]
                out.print(
                    f"  [{style}]check {check['name']} {check['target']}: "
                    f"{check['outcome']}[/] {escape(detail)}"
                )
        if row["error"]:
            out.print(f"  [magenta]error:[/] {escape(row['error'][:500])}")
        if row["review_reasons"]:
            out.print(f"  review: {escape(', '.join(row['review_reasons']))}")
        out.print()


@app.command("export")
def export_cmd(
    db: Path = EXISTING_DB_OPTION,
    run_id: str | None = typer.Option(None, "--run", help="Run id (default: the latest run)."),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl or csv."),
    output: Path | None = typer.Option(None, "--output", "-o", help="File (default: stdout)."),
) -> None:
    """Export one line per claim: answer_id, claim_id, claim, citations, label, subtype,
    evidence, checks, strength, support, review, review_reasons, judge_version."""
    from judge.review.export import export_rows, to_csv, to_jsonl

    if fmt not in ("jsonl", "csv"):
        fail("--format must be jsonl or csv")
    store = open_store(db, must_exist=True)
    run_id = run_id or store.latest_run_id()
    if run_id is None:
        fail(f"no runs in {db}")
    try:
        rows = export_rows(store, run_id=run_id)
        chunks = to_jsonl(rows) if fmt == "jsonl" else to_csv(rows)
        if output:
            with open(output, "w", encoding="utf-8", newline="") as fh:
                fh.writelines(chunks)
        else:
            sys.stdout.writelines(chunks)
    except Exception as exc:
        fail(str(exc))


@app.command()
def replay(
    db: Path = EXISTING_DB_OPTION,
    run_id: str | None = typer.Option(None, "--run", help="Run id (default: the latest run)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Re-derive a run's verdicts from stored model outputs (no model calls) and report
    any difference. Exit code 1 when anything differs. Answers whose verdicts this code
    reproduces exactly are recorded, so reusing them under this code is not warned about."""
    from judge.runs.replay import replay_run

    store = open_store(db, must_exist=True)
    run_id = run_id or store.latest_run_id()
    if run_id is None:
        fail(f"no runs in {db}")
    try:
        report = replay_run(store, run_id)
    except Exception as exc:
        fail(f"{type(exc).__name__}: {exc}")
    if as_json:
        print_json(report.as_dict())
    else:
        out.print(
            f"replayed run {run_id}: {report.answers} answers, {report.claims} claims, "
            f"0 model calls"
        )
        judged_by = ", ".join(c or "unrecorded" for c in report.stored_code) or "-"
        out.print(f"judged by code {escape(judged_by)}; replayed by code {report.code}, "
                  f"which reproduces {report.reproduced} of {report.answers} answers exactly "
                  "(recorded: reusing them under this code is not stale)")
        if report.backfilled:
            out.print(f"filled in the support probability of {report.backfilled} verdict(s) "
                      "stored before the judge kept it")
        for line in report.template_changes + report.missing_calls:
            out.print(f"[yellow]{escape(line)}[/]")
        for diff in report.differences:
            out.print(f"[red]differs[/] {escape(json.dumps(diff, ensure_ascii=False)[:300])}")
        out.print(
            "[green]identical[/]"
            if report.clean
            else f"[red]{len(report.differences)} difference(s)[/]"
        )
    if not report.clean:
        raise typer.Exit(1)


@app.command()
def versions(db: Path = EXISTING_DB_OPTION, as_json: bool = typer.Option(False, "--json")) -> None:
    """List the judge versions seen in the store, with their config."""
    store = open_store(db, must_exist=True)
    rows = store.judge_versions()
    for row in rows:
        row["config"] = json.loads(row["config"])
        row["templates"] = json.loads(row["templates"])
        row["runs"], row["verdicts"] = store.version_usage(row["id"])
    if as_json:
        print_json(rows)
        return
    table = Table("judge version", "model", "prompts", "params", "runs", "verdicts", "created")
    for row in rows:
        cfg = row["config"]
        table.add_row(
            row["id"],
            row["model"],
            "\n".join(f"{k} {v[:10]}" for k, v in row["templates"].items()),
            f"T={cfg['temperature']} seed={cfg['seed']} max_tokens={cfg['max_tokens']}",
            str(row["runs"]),
            str(row["verdicts"]),
            row["created_at"][:19],
        )
    out.print(table)


@prompts_app.command("check")
def prompts_check() -> None:
    """Verify that no used prompt version was edited in place."""
    from judge.models.prompts import verify_manifest

    problems = verify_manifest()
    for problem in problems:
        console.print(f"[red]{escape(problem)}[/]")
    if problems:
        raise typer.Exit(1)
    out.print("prompts match the manifest")


@prompts_app.command("lock")
def prompts_lock() -> None:
    """Add new template versions to prompts/manifest.json (existing entries never change)."""
    from judge.models.prompts import lock_new_versions, verify_manifest

    problems = [p for p in verify_manifest() if "not in manifest" not in p]
    if problems:
        for problem in problems:
            console.print(f"[red]{escape(problem)}[/]")
        raise typer.Exit(1)
    for name in lock_new_versions():
        out.print(f"locked {name}")
