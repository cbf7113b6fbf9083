"""The ``judge`` command line: a thin typer app; each command group lives in its own module.

Command modules import only typer, rich and light constants at the top; everything heavy
(the store, scipy, litellm) is imported by the command that needs it, so ``judge --help``
starts fast (``make bench`` measures it)."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from typer.core import TyperGroup, TyperOption

try:  # typer vendors its own click (typer._click) since 0.2x
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - an older typer uses click itself
    from click import UsageError  # type: ignore[assignment,no-redef,unused-ignore]

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

_show_type = TyperOption.display_type_rich


def _type_unless_flag(self: TyperOption, ctx: Any) -> str | None:
    """No ``<bool>`` beside on/off flags in the help."""
    return None if self.is_flag else _show_type(self, ctx)


TyperOption.display_type_rich = _type_unless_flag  # type: ignore[method-assign]


def _register() -> None:
    # Command modules register themselves on ``app`` when imported.
    from judge.cli import core  # noqa: F401

    for optional in ("data", "queue", "review", "calibrate", "drift", "fit", "serve"):
        try:
            __import__(f"judge.cli.{optional}")
        except ModuleNotFoundError as exc:
            if exc.name != f"judge.cli.{optional}":
                raise


def main() -> None:
    _register()
    try:
        app()
    except BrokenPipeError:
        # The reader went away (`judge export | head`): stop quietly, like other tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
