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
    # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    add_completion=True,
    pretty_exceptions_enable=False,
    cls=JudgeGroup,
)


def _version(value: bool) -> None:
    if value:
        from judge import __version__

        typer.echo(f"claim-judge {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True,
        help="Print the package version and exit."),
) -> None:
    """Judge generated answers claim by claim against their sources."""


def reflow(text: str) -> str:
    """A docstring's paragraphs as one line each, so the help wraps them at the terminal's
    width (typer's rich help keeps the docstring's own line breaks after the first
    paragraph, which cut "Exit codes: ..." into ragged lines)."""
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)

_show_type = TyperOption.display_type_rich


def _type_unless_flag(self: TyperOption, ctx: Any) -> str | None:
    """No ``<bool>`` beside on/off flags in the help."""
    return None if self.is_flag else _show_type(self, ctx)


TyperOption.display_type_rich = _type_unless_flag  # type: ignore[method-assign]


def _register() -> None:
    # Command modules register themselves on ``app`` when imported.
    from judge.cli import core  # noqa: F401

    for optional in ("setup", "data", "queue", "review", "calibrate", "drift", "fit",
                     "serve"):
        try:
            __import__(f"judge.cli.{optional}")
        except ModuleNotFoundError as exc:
            if exc.name != f"judge.cli.{optional}":
                raise
    _reflow_help(app)


def _reflow_help(typer_app: typer.Typer) -> None:
    for info in typer_app.registered_commands:
        doc = info.help or (info.callback.__doc__ if info.callback else None)
        if doc:
            info.help = reflow(doc)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _reflow_help(group.typer_instance)


def main() -> None:
    from judge.masking import mask_streams

    mask_streams()  # no secret is printed, whatever prints it (judge.masking)
    _register()
    try:
        app()
    except BrokenPipeError:
        # The reader went away (`judge export | head`): stop quietly, like other tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
