"""``judge import`` (peers' datasets as answer records; annotation tools' labels as reviews)
and ``judge runs`` (what the store holds)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from judge.cli import EXIT_USAGE, app
from judge.cli.common import (
    EXISTING_DB_OPTION,
    console,
    fail,
    open_store,
    out,
    output_path,
    print_json,
    print_table,
    report_import,
    terminal_width,
    usage_error,
    write_stdout,
    write_text,
)
from judge.formats import DATASET_FORMATS, IMPORT_FORMATS


@app.command("import")
def import_cmd(
    path: Path = typer.Argument(..., help="The file to import (JSON, JSONL or CSV)."),
    fmt: str | None = typer.Option(
        None, "--format",
        help="ragas or deepeval: a dataset, written as answer records (-o); label-studio or "
        "argilla: annotations of an exported queue, stored as reviews (--db, --queue). "
        "Default: told from the file's keys."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="ragas / deepeval: records file (default: stdout)."),
    db: Path = EXISTING_DB_OPTION,
    queue: str | None = typer.Option(
        None, "--queue", "-q", help="label-studio / argilla: queue id (default: the latest)."),
    guideline_version: str | None = typer.Option(
        None, "--guideline-version", envvar="CLAIM_JUDGE_GUIDELINE_VERSION",
        help="label-studio / argilla: the guideline the labels follow."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate only; store nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the import result as JSON."),
) -> None:
    """Import a RAGAS / DeepEval dataset, or Label Studio / Argilla annotations.

    Datasets become answer records (each retrieved context a source C1, C2, ...) to judge
    with `judge run`. Annotations become each annotator's reviews (human:<id>), all or
    nothing; a model's label is refused. Exit code 2 when any line is invalid.
    """
    from judge import api

    if fmt is not None and fmt not in IMPORT_FORMATS:
        usage_error(f"--format must be one of {', '.join(IMPORT_FORMATS)}")
    if not path.exists():
        fail(f"file {escape(str(path))} does not exist", code=EXIT_USAGE)
    fmt = _format_of(path, fmt)
    if fmt in DATASET_FORMATS:
        if output is not None:
            output_path(output, db, [path])
        try:
            records = api.read_dataset(path, fmt)
        except (ValueError, UnicodeDecodeError) as exc:
            fail(escape(str(exc)))
        lines = (json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        if output is None:
            write_stdout(lines)
        else:
            write_text(output, lines, db, [path])
            console.print(f"{len(records)} answer record(s) written to {escape(str(output))}; "
                          f"judge them with `judge run {escape(str(output))}`")
        return
    from judge.review.queue import QueueError

    store = open_store(db, must_exist=True)
    try:
        result = api.import_reviews(path, fmt, db=store, queue=queue,
                                    guideline_version=guideline_version, dry_run=dry_run)
    except (QueueError, ValueError, UnicodeDecodeError) as exc:
        fail(escape(str(exc)))
    report_import(result, as_json, dry_run, "review(s)", "annotation(s) without a label")


def _format_of(path: Path, fmt: str | None) -> str:
    """``fmt``, when the file does not plainly say it is another format (exit 64 naming the
    right ``--format``); without ``fmt``, the format the file's keys name."""
    from judge.records.sniff import import_command, sniff_file

    sniffed = sniff_file(path) if path.is_file() else None  # a pipe is read once
    where = escape(str(path))
    if sniffed is not None and sniffed.fmt == "records":
        usage_error(f"{where} holds answer records already: judge them with "
                    f"`judge run {where}`")
    if fmt is None:
        if sniffed is None:
            usage_error(f"cannot tell the format of {where}; give --format "
                        f"({', '.join(IMPORT_FORMATS)})")
        return sniffed.fmt
    if sniffed is not None and sniffed.fmt != fmt:
        usage_error(f"{where} looks like {sniffed.name} ({', '.join(sniffed.keys)}), not "
                    f"{fmt}: `{escape(import_command(sniffed, path))}`")
    return fmt


@app.command()
def runs(
    db: Path = EXISTING_DB_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the runs as JSON."),
) -> None:
    """List the runs in the store, newest first: input, judge version, claims, flags."""
    store = open_store(db, must_exist=True)
    rows = []
    for run in reversed(store.runs()):
        stats = json.loads(run["stats"]) if run["stats"] else {}
        rows.append({
            "run_id": run["id"], "started_at": run["started_at"], "status": run["status"],
            "purpose": run["purpose"], "input": run["input_path"],
            "judge_version": run["judge_version"],
            "answers": stats.get("answers", store.run_answer_count(run["id"])),
            "claims": stats.get("claims"), "flagged": stats.get("flagged"),
            "judge_errors": stats.get("judge_errors"), "model_calls": stats.get("model_calls"),
        })
    if as_json:
        print_json(rows)
        return
    if not rows:
        out.print(f"no runs in {escape(str(db))}; judge a batch with `judge run INPUT.jsonl`")
        return
    table = Table("run", "started", "status", "input", "judge version", "answers", "claims",
                  "flagged", width=min(terminal_width(), 160))
    table.columns[0].no_wrap = True
    table.columns[0].min_width = max(len(r["run_id"]) for r in rows)
    for r in rows:
        table.add_row(r["run_id"], r["started_at"][:16].replace("T", " "), r["status"],
                      escape(r["input"] or "-"), escape(r["judge_version"]), str(r["answers"]),
                      "-" if r["claims"] is None else str(r["claims"]),
                      "-" if r["flagged"] is None else str(r["flagged"]))
    print_table(table)
