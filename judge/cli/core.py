"""Core commands: run, show, export, replay, versions, prompts."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from judge.cli import EXIT_USAGE, app
from judge.cli.common import (
    API_BASE_OPTION,
    DB_OPTION,
    EXISTING_DB_OPTION,
    batch_display,
    console,
    fail,
    load_config,
    open_store,
    out,
    output_path,
    preflight,
    print_json,
    print_table,
    progress_bar,
    safe,
    usage_error,
    write_text,
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
    api_base: str | None = API_BASE_OPTION,
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-j", min=1, max=64,
        help="Answers judged at once (default: the config's concurrency, 1).",
    ),
    retry_errors: bool = typer.Option(
        False, "--retry-errors", help="Judge again the stored answers of this judge version "
        "whose verdicts include a judge_error (e.g. after an outage); the calls behind the "
        "errors are made again, earlier calls and verdicts stay on record."),
    max_calls: int | None = typer.Option(
        None, "--max-calls", min=0, help="Stop after this many model calls (stored calls are "
        "free)."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=0, help="Stop after this many prompt + completion tokens."),
    max_cost: float | None = typer.Option(
        None, "--max-cost", min=0.0, help="Stop after this cost in USD (litellm's prices)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object at the end."),
    executor: str = typer.Option(
        "local", "--executor", help="local, or ray: spread the answers over Ray workers."),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="Ray cluster to join (default: start a local one)."),
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="Ray workers (default: one per CPU of the cluster)."),
    uncited: str | None = typer.Option(
        None, "--uncited", help="What an answer with no citation at all cites: all_sources "
        "(each claim is checked against every source; the default) or missing_citation "
        "(each claim is flagged missing_citation). Overrides the config's uncited."),
    batch_api: bool = typer.Option(
        False, "--batch-api", help="Send the calls through the provider's batch API (half "
        "the price; results within its window, 24 h): the splits, then the verifications. "
        "Stopped or killed, the same command picks the batches up (nothing is sent twice)."),
    batch_file: Path | None = typer.Option(
        None, "--batch-file", help="Write the calls to this JSONL file for `vllm run-batch` "
        "(OpenAI's batch format) and stop; with --batch-output, read its results first."),
    batch_output: Path | None = typer.Option(
        None, "--batch-output", help="The output file of `vllm run-batch` for --batch-file."),
    batch_resend_online: bool = typer.Option(
        False, "--batch-resend-online", help="Make online the requests that failed or "
        "expired in a batch (default: they become judge_error claims)."),
    batch_wait: float | None = typer.Option(
        None, "--batch-wait", min=0.0, help="Stop (resumable, exit 4) when batches are still "
        "running after this many seconds (default: wait)."),
    batch_poll: float = typer.Option(
        30.0, "--batch-poll", min=0.01, help="Seconds between two looks at a batch."),
) -> None:
    """Judge a batch of answers claim by claim. Resumable: run it again to finish or reuse.

    Exit codes: 0 clean; 2 some lines were rejected (the rest was judged); 3 some claims
    are judge_error (they are queued for review; --retry-errors judges them again); 4 the
    run stopped (the provider failed breaker_after calls in a row, or a --max-* budget was
    spent: what finished is stored, the same command resumes; an answer starts only when
    its expected cost fits the budget, and the summary says about how much more would finish
    the rest); 64 usage error; 130 interrupted (Ctrl-C: what finished is stored, the same
    command resumes); 1 any other fatal error. When several apply, the highest of 4, 3, 2
    wins.
    """
    from judge import api

    if str(input) != "-":
        if not input.exists():
            fail(f"input file {safe(input)} does not exist; `judge init` writes a sample "
                 "answers.jsonl (and a judge.toml) here", code=EXIT_USAGE)
        _refuse_other_formats(input)
    if executor not in ("local", "ray"):
        usage_error(f"--executor must be local or ray, not {executor!r}")
    if uncited not in (None, "all_sources", "missing_citation"):
        usage_error(f"--uncited must be all_sources or missing_citation, not {uncited!r}")
    cfg = load_config(config, model=model, api_base=api_base, concurrency=concurrency,
                      uncited=uncited)
    in_batches = _batch_mode(cfg.model, executor, batch_api, batch_file, batch_output,
                             batch_resend_online, batch_wait, batch_poll)
    preflight(cfg, db)  # before anything is stored: the setup (keys, endpoint, store)
    from judge.decide.probe_head import ProbeHeadError
    from judge.models.embedded import ModelUnavailable
    from judge.models.preflight import ensure_loadable

    try:  # and the model: there, whole, and its bytes verified
        ensure_loadable(cfg, load_runtime=False)
    except ModelUnavailable as exc:
        fail(f"{safe(exc)}; or pass --model", code=EXIT_USAGE)
    store = open_store(db)
    # a path is read once, so a pipe or process substitution (<(cmd)) works as a file does
    source = sys.stdin.buffer if str(input) == "-" else input
    stopped: api.RunStopped | None = None
    with progress_bar("judging", quiet=as_json) as progress, \
            batch_display(quiet=as_json) as show_batches:
        if in_batches is not None:
            in_batches = replace(in_batches, progress=show_batches)
        try:
            results = api.judge_file(
                source, config=cfg, db=store, progress=progress, retry_errors=retry_errors,
                max_calls=max_calls, max_tokens=max_tokens, max_cost=max_cost,
                executor=executor,  # type: ignore[arg-type]
                ray_address=ray_address, workers=workers, batch=in_batches)
        except api.RunStopped as exc:
            stopped, results = exc, exc.results
        except KeyboardInterrupt:
            fail("interrupted; run the same command again to resume", code=130)
        except ModelUnavailable as exc:  # the runtime would not load: nothing was stored
            fail(f"{safe(exc)}; or pass --model", code=EXIT_USAGE)
        except ProbeHeadError as exc:  # the pinned head cannot read this model's vectors
            fail(f"{safe(exc)}", code=EXIT_USAGE)
        except Exception as exc:
            fail(f"{type(exc).__name__}: {safe(exc)}")
    summary = results.summary
    for rej in summary.rejected_lines:
        console.print(f"[yellow]line {rej['line']} rejected:[/] {safe(rej['error'])}")
    if as_json:
        print_json(summary.as_dict())
    else:
        print_summary(summary)
    flood = summary.flood()
    if flood and not as_json:
        console.print(f"[yellow]note:[/] {escape(flood)}")
    stale = summary.stale_warning(db)
    if stale:
        console.print(f"[yellow]warning:[/] {escape(stale)}")
    if summary.rejected_lines:
        console.print(
            f"[yellow]{len(summary.rejected_lines)} line(s) rejected[/]; the rest was judged"
        )
    if summary.judge_errors and not stopped:
        console.print(
            f"[magenta]{summary.judge_errors} claim(s) are judge_error[/] (queued for review); "
            f"`judge run {escape(str(input))} --db {escape(str(db))} --retry-errors` judges "
            "them again"
        )
    if stopped is not None:
        console.print(f"[bold red]run stopped:[/] {safe(summary.stopped)}; "
                      f"{summary.pending} answer(s) left for the resume")
    if summary.exit_code:
        raise typer.Exit(summary.exit_code)


def _batch_mode(model: str, executor: str, api: bool, file: Path | None,
                output: Path | None, resend: bool, wait: float | None,
                poll: float) -> Any:
    """The run's :class:`~judge.runs.deferred.BatchMode` (None: online); a usage error (64)
    when it cannot run."""
    if not (api or file is not None or output is not None):
        if resend or wait is not None:
            usage_error("--batch-resend-online and --batch-wait go with --batch-api or "
                        "--batch-file")
        return None
    from judge.runs.deferred import BatchMode

    mode = BatchMode(api=api, file=file, output=output, resend_online=resend, wait_s=wait,
                     poll_s=poll)
    refusal = mode.refusal(model, executor)
    if refusal:
        usage_error(refusal)
    if output is not None and not output.is_file():
        usage_error(f"--batch-output {safe(output)} does not exist; run the requests of "
                    f"{safe(file)} first (e.g. `vllm run-batch -i {safe(file)} -o "
                    f"{safe(output)} --model MODEL`)")
    return mode


def _refuse_other_formats(path: Path) -> None:
    """A peer's dataset or a labelling tool's export is not judged line by line into errors:
    exit 64 naming the command that reads it."""
    from judge.records.sniff import import_command, sniff_file

    if not path.is_file():  # a pipe (<(cmd)) is read once, by the run
        return
    sniffed = sniff_file(path)
    if sniffed is None or sniffed.fmt == "records":
        return
    what = "convert it to answer records" if sniffed.fmt in ("ragas", "deepeval") \
        else "import its labels as reviews"
    fail(f"{safe(path)} looks like {sniffed.name} ({', '.join(sniffed.keys)}), not answer "
         f"records: {what} with `{safe(import_command(sniffed, path))}`", code=EXIT_USAGE)


def tokens_line(s: RunSummary) -> str:
    """Prompt tokens (with those the provider served from its cache, when it says) and
    completion tokens."""
    cached = "" if s.cached_tokens is None else f" ({s.cached_tokens} cached by the provider)"
    return f"{s.prompt_tokens} prompt{cached}, {s.completion_tokens} completion"


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
        ("flagged by reason",
         ", ".join(f"{k} {v}" for k, v in s.flag_reasons.most_common()) or "-"),
        ("judge errors", str(s.judge_errors)),
        ("refused answers (self-grading)", str(len(s.refused_answers))),
        ("rejected lines", str(len(s.rejected_lines))),
        ("missing generator", str(s.missing_generator)),
        ("model calls", f"{s.model_calls} made ({s.attempts} HTTP attempts, {s.failed_calls} "
                        f"failed), {s.cached_calls} served from store, {s.merged_calls} merged"),
        ("tokens", tokens_line(s)),
        ("wall time", f"{s.wall_seconds:.1f} s"),
    ]
    if s.cost:
        rows.append(("cost", f"${s.cost:.4f} (litellm's prices; cached prompt tokens at the "
                             "cache-read price)" if s.cached_tokens else
                             f"${s.cost:.4f} (litellm's prices)"))
    if s.retried_answers:
        rows.append(("answers retried", str(s.retried_answers)))
    if s.model_mismatch:
        rows.append(("[yellow]model answered as[/]", ", ".join(s.model_mismatch)))
    if s.stopped:
        rows.append(("[red]stopped[/]", f"{s.stopped} ({s.pending} answers pending)"))
    for key, value in rows:
        table.add_row(key, safe(value))
    print_table(table)


@app.command()
def show(
    answer_id: str = typer.Argument(..., help="Answer id, or a claim id (shows that claim)."),
    db: Path = EXISTING_DB_OPTION,
    judge_version: str | None = typer.Option(None, "--judge-version", help="Default: all."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
) -> None:
    """Show an answer's claims with label, support, evidence, checks and review reasons.

    support is the judge's probability that the claim is supported (the review queue reads
    the lowest first); strength is evidence coverage: how much of the claim the evidence
    covers, computed by the program (quotes found, words and numbers shared), not the
    judge's confidence.
    """
    from judge.reading import answer_view

    store = open_store(db, must_exist=True)
    claim_id = None
    view = answer_view(store, answer_id, judge_version)
    if view is None and (claim := store.claim_row(answer_id)) is not None:
        claim_id, answer_id = answer_id, claim["answer_id"]
        view = answer_view(store, answer_id, judge_version, claim_id=claim_id)
    if view is None:
        fail(f"no answer or claim {safe(repr(answer_id))} in {safe(db)}")
    if as_json:  # JSON escapes control characters itself
        print_json(
            {
                "answer": {"id": view.answer_id, "question": view.question,
                           "answer": view.answer, "generator": view.generator},
                "refused": view.refused,
                "claims": [v.model_dump(mode="json") for v in view.verdicts],
                "skipped_sentences": view.skipped,
            }
        )
        return
    out.print(f"[bold]{safe(answer_id)}[/]  generator: {safe(view.generator or '-')}")
    if view.question:
        out.print(f"[dim]Q:[/] {safe(view.question)}")
    out.print(f"[dim]A:[/] {safe(view.answer)}\n")
    if view.refused:
        out.print(f"[red]refused:[/] {safe(view.refused)}")
    if view.statuses:
        expected = view.expected_status
        mismatch = expected and expected not in view.statuses
        out.print(
            f"status: {', '.join(view.statuses)}"
            + (f"  [yellow](expected {safe(expected)})[/]" if mismatch else "")
            + "\n"
        )
    for skip in view.skipped:
        out.print(f"[dim]not a claim ({safe(skip['reason'])}):[/] {safe(skip['text'])}")
    if view.skipped:
        out.print()
    for v in view.verdicts:
        colour = {"supported": "green", "judge_error": "magenta"}.get(v.label, "red")
        flag = "[bold yellow]REVIEW[/] " if v.review else ""
        out.print(
            f"{flag}[{colour}]{safe(v.label)}[/]"
            f"{' / ' + safe(v.subtype) if v.subtype else ''}  "
            f"support {'—' if v.support is None else format(v.support, '.2f')}  "
            f"evidence coverage {v.strength:.2f}  [dim]{safe(v.judge_version)}[/]"
        )
        out.print(f"  claim id: {safe(v.claim_id)}")
        out.print(f"  claim: {safe(v.claim)}")
        cites = ", ".join(c.source + (f" {c.path}" if c.path else "") for c in v.citations)
        out.print(f"  cites: {safe(cites or 'none')}")
        for ev in v.evidence:
            mark = "found" if ev.found else "[red]NOT FOUND[/]"
            out.print(
                f"  evidence \\[{safe(ev.source_id)}] {mark}: "
                f"{safe(repr(ev.quote or ev.path))}"
            )
        if v.rationale:
            out.print(f"  rationale: {safe(v.rationale)}")
        for check in v.checks:
            if check.outcome != "skip":
                style = "red" if check.outcome == "fail" else "dim"
                detail = json.dumps(check.detail, ensure_ascii=False)[:160]
                out.print(
                    f"  [{style}]check {safe(check.name)} {safe(check.target)}: "
                    f"{safe(check.outcome)}[/] {safe(detail)}"
                )
        if v.error:
            out.print(f"  [magenta]error:[/] {safe(v.error[:500])}")
        if v.review_reasons:
            out.print(f"  review: {safe(', '.join(v.review_reasons))}")
        out.print()


@app.command("export")
def export_cmd(
    db: Path = EXISTING_DB_OPTION,
    fmt: str = typer.Option(
        "jsonl", "--format",
        help="jsonl, csv (spreadsheets: UTF-8 with BOM, flat columns) or parquet: one row per "
        "claim; label-studio or argilla: the review queue as tasks; ragas or deepeval: the "
        "run's answer records; datasette-metadata: titles and links for `datasette DB -m`."),
    run_id: str | None = typer.Option(None, "--run", help="Run id (default: the latest run)."),
    queue: str | None = typer.Option(
        None, "--queue", "-q", help="Queue id for label-studio / argilla (default: latest)."),
    reveal: bool = typer.Option(
        False, "--reveal", help="label-studio / argilla: attach the judge's label as the "
        "tool's model prediction (for adjudication; blind without it)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="File (default: stdout)."),
) -> None:
    """Export verdicts (one row per claim), the review queue as tasks, or answer records.

    Verdict rows: answer_id, claim_id, claim, citations, label, subtype, evidence,
    rationale, checks, strength (evidence coverage, computed), support (the judge's
    probability that the claim is supported), review, review_reasons, error,
    judge_version, run_id.
    """
    from judge import api
    from judge.cli.common import write_stdout
    from judge.formats import EXPORT_FORMATS

    if fmt not in EXPORT_FORMATS:
        usage_error(f"--format must be one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "parquet" and output is None:
        fail("parquet is written to a file: give --output FILE.parquet")
    config = None
    if output is not None:
        output_path(output, db)
        if fmt == "label-studio":
            config = output_path(output.with_name(output.stem + ".label-config.xml"), db,
                                 [output])
    store = open_store(db, must_exist=True)
    try:
        if output is not None:
            api.export(output, fmt, db=store, run_id=run_id, queue=queue, reveal=reveal)
            if config is not None:
                from judge.review.annotation_tools import LABEL_STUDIO_CONFIG

                write_text(config, LABEL_STUDIO_CONFIG, db)
                console.print(f"labelling configuration for the tasks: {escape(str(config))}")
            return
        class _Sink:
            def writelines(self, lines: Iterable[str]) -> None:
                write_stdout(lines)

        api.export(_Sink(), fmt, db=store, run_id=run_id, queue=queue, reveal=reveal)
    except (typer.Exit, BrokenPipeError):
        raise
    except Exception as exc:
        fail(escape(str(exc)))


@app.command()
def replay(
    db: Path = EXISTING_DB_OPTION,
    run_id: str | None = typer.Option(None, "--run", help="Run id (default: the latest run)."),
    as_json: bool = typer.Option(False, "--json", help="Print the changes as JSON."),
) -> None:
    """Re-derive a run's verdicts from stored model outputs (no model calls); report changes.

    Exit code 1 when anything differs. Answers whose verdicts this code reproduces exactly
    are recorded, so reusing them under this code is not warned about.
    """
    from judge.runs.replay import replay_run

    store = open_store(db, must_exist=True)
    run_id = run_id or store.latest_run_id()
    if run_id is None:
        fail(f"no runs in {safe(db)}")
    try:
        report = replay_run(store, run_id)
    except Exception as exc:
        fail(f"{type(exc).__name__}: {safe(exc)}")
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
def versions(
    db: Path = EXISTING_DB_OPTION,
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Judge config whose review table gives the target "
        "recall (default ./judge.toml if present)."),
    as_json: bool = typer.Option(False, "--json", help="Print the versions as JSON."),
) -> None:
    """List the judge versions seen in the store, with their config and operating points.

    The operating point of a version is the review queue's threshold set from human gold
    for the target recall (review.target_recall); it is not part of the version: labels do
    not change with it, only who reads what."""
    from judge.review.triage import points_by_version

    review = load_config(config).review
    store = open_store(db, must_exist=True)
    rows = store.judge_versions()
    points = points_by_version(store, [r["id"] for r in rows], review)
    for row in rows:
        row["config"] = json.loads(row["config"])
        row["templates"] = json.loads(row["templates"])
        row["runs"], row["verdicts"] = store.version_usage(row["id"])
        row["operating_points"] = [p.as_dict() for p in points[row["id"]]]
    if as_json:
        print_json(rows)
        return
    table = Table("judge version", "model", "prompts", "params", "runs", "verdicts",
                  "operating point", "created")
    for row in rows:
        cfg = row["config"]
        table.add_row(
            row["id"],
            row["model"],
            "\n".join(f"{k} {v[:10]}" for k, v in row["templates"].items()),
            f"T={cfg['temperature']} seed={cfg['seed']} max_tokens={cfg['max_tokens']}",
            str(row["runs"]),
            str(row["verdicts"]),
            "\n".join(_point_cell(p) for p in row["operating_points"]),
            row["created_at"][:19],
        )
    print_table(table)


def _point_cell(p: dict[str, Any]) -> str:
    where = f"{p['domain']}: " if p["domain"] else ""
    if p["threshold"] is None:
        return f"{where}none (flags by labels; no stated recall)"
    source = "gold" if p["source"] == "gold" else "default"
    sizes = f", {p['n_gold']} gold claims" if p.get("n_gold") else ""
    return (f"{where}support < {p['threshold']:.4g} (recall ≥ {p['target_recall']:.2f} @ "
            f"{p['confidence']:.0%}, {source}{sizes})")


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
