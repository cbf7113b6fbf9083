"""The ``judge`` command line: a thin typer app; each command group lives in its own module."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

try:  # typer vendors its own click (typer._click) since 0.2x
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - an older typer uses click itself
    from click import UsageError  # type: ignore[assignment,no-redef]

#: Exit code of a usage error (a wrong option, a missing argument): ``EX_USAGE`` of
#: sysexits.h, distinct from 2 (``judge run``: some lines were rejected).
EXIT_USAGE = 64


class JudgeGroup(TyperGroup):
    """The command group: usage errors exit with :data:`EXIT_USAGE` instead of click's 2."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except UsageError as exc:
            exc.exit_code = EXIT_USAGE
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            exc.exit_code = EXIT_USAGE
            raise


app = typer.Typer(
    name="judge",
    help="Judge generated answers claim by claim against their sources.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=JudgeGroup,
)


def _register() -> None:
    # Command modules register themselves on ``app`` when imported.
    from judge.cli import core  # noqa: F401

    for optional in ("queue", "review", "calibrate", "drift", "serve"):
        try:
            __import__(f"judge.cli.{optional}")
        except ModuleNotFoundError as exc:
            if exc.name != f"judge.cli.{optional}":
                raise


def main() -> None:
    _register()
    app()
