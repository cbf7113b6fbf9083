"""Shared CLI pieces: consoles, options, opening the store, progress bars, clean fatal errors."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console

if TYPE_CHECKING:
    from judge.config import JudgeConfig
    from judge.store import Store

#: messages on stderr: never hard-wrapped (a pipe or a log keeps a suggested command whole)
console = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)

DB_OPTION = typer.Option(
    Path("judge.db"), "--db", help="SQLite store file (created if missing).",
    envvar="CLAIM_JUDGE_DB",
)
EXISTING_DB_OPTION = typer.Option(
    Path("judge.db"), "--db", help="SQLite store file.", envvar="CLAIM_JUDGE_DB"
)
#: where an OpenAI-compatible judge is served (operational: not part of the judge version)
API_BASE_OPTION = typer.Option(
    None, "--api-base", help="The judge model's OpenAI-compatible server, e.g. "
    "http://127.0.0.1:8080/v1 (vLLM, llama.cpp); overrides the config's api_base.")


#: Terminal escape sequences (CSI, OSC, other ESC sequences) and control characters other
#: than newline and tab; bidirectional overrides are shown as their code points.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def clean(text: object) -> str:
    """Untrusted text made safe for a terminal: escape sequences and control characters
    removed, bidirectional overrides shown as ``<U+202E>``."""
    out = _ESCAPES.sub("", str(text))
    return _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", out)


def safe(text: object) -> str:
    """Untrusted text for a rich console: :func:`clean`, and rich markup escaped."""
    from rich.markup import escape

    return escape(clean(text))


def fail(message: str, code: int = 1) -> NoReturn:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def usage_error(message: str) -> NoReturn:
    """A wrong option value (e.g. an unknown ``--format``): exit 64 (``EX_USAGE``), as a
    usage error that click itself catches does."""
    from judge.cli import EXIT_USAGE

    fail(message, code=EXIT_USAGE)


def open_store(path: Path, must_exist: bool = False) -> Store:
    from judge.store import Store

    if must_exist and not path.exists():
        fail(f"store {safe(path)} does not exist; run `judge run INPUT.jsonl --db {safe(path)}` "
             "first")
    try:
        return Store.open(path)
    except Exception as exc:  # a clear message, not a stack trace
        fail(f"cannot open store {safe(path)}: {safe(exc)}")


def load_config(config: Path | None, **overrides: Any) -> JudgeConfig:
    """The judge config (``--config``, else ``./judge.toml``, else the default), or exit 64
    (a configuration error) with the reason."""
    from rich.markup import escape

    from judge.config import load_config as load

    try:
        return load(config, **overrides)
    except ValueError as exc:
        fail(escape(str(exc)), code=USAGE_EXIT)


def preflight(config: JudgeConfig, db: Path | None = None) -> None:
    """Stop before anything is stored when the judge cannot run as configured
    (:func:`judge.models.preflight.preflight`): no key, an unknown model string, the embedded
    model missing, nothing answering at ``api_base``; or when a run would fail or pin a
    setting its strategy does not read (:func:`judge.plan.check_plan`); exit 64 for the
    config, 1 for an endpoint that does not answer."""
    from judge.models.preflight import SetupError
    from judge.models.preflight import preflight as check
    from judge.plan import check_plan

    try:
        check_plan(config)
        check(config, db)
    except SetupError as exc:
        for finding in exc.findings:
            extra = "; or pass --model" if finding.name == "embedded" else ""
            console.print(f"[bold red]error:[/] {safe(finding.message())}{extra}")
        console.print("nothing was stored; `judge doctor` checks the whole setup")
        raise typer.Exit(exc.exit_code) from None


@contextmanager
def progress_bar(what: str, quiet: bool = False) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr; yields the ``progress(done, total)`` callback. Shown only
    once there is work (a first call with ``total > 0``); hidden when ``quiet`` and stderr is
    not a terminal."""
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    # each time says what it is: the time spent so far, and the estimate of what is left
    columns = (TextColumn(f"[bold]{escape(what)}[/]"), BarColumn(), MofNCompleteColumn(),
               TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"),
               TimeRemainingColumn())
    bar = Progress(*columns, console=console, disable=quiet and not sys.stderr.isatty())
    task = bar.add_task(what, total=None, start=False)
    started = False

    def progress(done: int, total: int) -> None:
        # shown from the first report of work to do: nothing to judge (all stored), no bar
        nonlocal started
        if not started and total > 0:
            bar.start()
            bar.start_task(task)
            started = True
        if started:
            bar.update(task, completed=done, total=total)

    try:
        yield progress
    finally:
        if started:
            bar.stop()


@contextmanager
def batch_display(quiet: bool = False) -> Iterator[Callable[[list[dict[str, Any]]], None]]:
    """A line per batch job on stderr (``judge run --batch-api``): its phase (1 the splits,
    2 the verifications), its state and the provider's counts; yields the ``show(jobs)``
    callback. Hidden when ``quiet`` and stderr is not a terminal."""
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console,
                   disable=quiet and not sys.stderr.isatty())
    tasks: dict[str, Any] = {}

    def show(jobs: list[dict[str, Any]]) -> None:
        if not tasks:
            bar.start()
        for job in jobs:
            what = (f"batch {job.get('phase')} [bold]{escape(str(job.get('job')))}[/] "
                    f"{escape(str(job.get('state')))}"
                    + (f" ({escape(str(job['status']))})" if job.get("status") else "")
                    + (f", {job['failed']} failed" if job.get("failed") else ""))
            done = (job.get("completed") or 0) + (job.get("failed") or 0)
            key = str(job.get("job"))
            if key not in tasks:
                tasks[key] = bar.add_task(what, total=job.get("requests") or None)
            bar.update(tasks[key], description=what, completed=done,
                       total=job.get("requests") or None)

    try:
        yield show
    finally:
        if tasks:
            bar.stop()


def print_table(table: Any) -> None:
    """A rich table on stdout. On a terminal it fits the terminal; into a pipe or a file it
    takes the width its cells need, so ids (judge versions, run and queue ids, reviewers)
    are never cut or wrapped there (``judge versions | grep`` finds whole ids)."""
    if out.is_terminal:
        out.print(table)
        return
    from rich.measure import Measurement

    table.width = None
    needed = Measurement.get(out, out.options.update(max_width=100_000), table).maximum
    saved = out.width
    out.width = max(needed, 20)
    try:
        out.print(table, crop=False)
    finally:
        out.width = saved


#: Exit code of a usage error (BSD ``EX_USAGE``): an output path that would destroy an input.
USAGE_EXIT = 64


def output_path(path: Path, db: Path | None = None, inputs: Iterable[Path | None] = ()) -> Path:
    """``path`` when writing it destroys neither the store ``db`` (nor its WAL/SHM files) nor
    an input; else exit 64 before anything is written (:func:`judge.outputs.check_output`)."""
    from rich.markup import escape

    from judge.outputs import OutputError, check_output

    try:
        return check_output(path, db=db, inputs=inputs)
    except OutputError as exc:
        fail(escape(str(exc)), code=USAGE_EXIT)


def write_text(path: Path, text: str | Iterable[str], db: Path | None = None,
               inputs: Iterable[Path | None] = (), newline: str | None = None) -> None:
    """Write ``text`` to ``path`` atomically, after :func:`output_path` allowed it."""
    from judge.outputs import atomic_text

    output_path(path, db, inputs)
    try:
        with atomic_text(path, newline=newline) as fh:
            fh.writelines([text] if isinstance(text, str) else text)
    except OSError as exc:
        fail(f"cannot write {safe(path)}: {safe(exc)}")


def print_json(obj: Any) -> None:
    write_stdout([json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n"])


def report_import(result: Any, as_json: bool, dry_run: bool, imported: str, blank: str) -> None:
    """The outcome of an import of reviews or labels: every error and exit code 2 (nothing was
    imported), else what was (``dry_run``: would be) imported, counted as ``imported`` and
    the lines without a label as ``blank``."""
    from rich.markup import escape

    if as_json:
        print_json(result.as_dict())
    for error in result.errors:
        console.print(f"[red]{escape(error)}[/]")
    if result.errors:
        console.print(f"[red]{len(result.errors)} error(s); nothing was imported[/]")
        raise typer.Exit(2)
    for warning in getattr(result, "warnings", []):
        console.print(f"[yellow]{escape(warning)}[/]")
    if not as_json:
        verb = "would import" if dry_run else "imported"
        skipped = sum(getattr(result, "not_submitted", {}).values())
        refused = getattr(result, "missing_status", 0)
        out.print(f"{verb} {result.imported} {imported}; {result.unchanged} unchanged, "
                  f"{result.blank} {blank}"
                  + (f", {skipped} not submitted" if skipped else "")
                  + (f", {refused} refused without a status" if refused else ""))


def write_stdout(chunks: Iterable[str]) -> None:
    """Write to standard output; when the reader has gone (``judge export | head``), stop
    quietly with exit code 0."""
    try:
        for chunk in chunks:
            sys.stdout.write(chunk)
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None


def terminal_width() -> int:
    """Columns to fit a table in: the terminal's width (as the standard library sees it),
    else 100 (a pipe)."""
    import shutil

    return shutil.get_terminal_size((100, 24)).columns
