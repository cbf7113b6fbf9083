"""The ``judge`` command line: a thin typer app; each command group lives in its own module."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="judge",
    help="Judge generated answers claim by claim against their sources.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Command modules register themselves on ``app`` when imported.
    from judge.cli import core  # noqa: F401

    for optional in ("queue", "review", "calibrate", "drift", "fit", "serve"):
        try:
            __import__(f"judge.cli.{optional}")
        except ModuleNotFoundError as exc:
            if exc.name != f"judge.cli.{optional}":
                raise


def main() -> None:
    _register()
    app()
