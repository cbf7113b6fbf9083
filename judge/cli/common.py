"""Shared CLI pieces: consoles, options, opening the store, clean fatal errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from judge.store import Store

console = Console(stderr=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)

DB_OPTION = typer.Option(
    Path("judge.db"), "--db", help="SQLite store file (created if missing).", envvar="JUDGE_DB"
)


def fail(message: str, code: int = 1) -> NoReturn:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def open_store(path: Path, must_exist: bool = False) -> Store:
    if must_exist and not path.exists():
        fail(f"store {path} does not exist; run `judge run INPUT.jsonl --db {path}` first")
    try:
        return Store.open(path)
    except Exception as exc:  # a clear message, not a stack trace
        fail(f"cannot open store {path}: {exc}")


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()
