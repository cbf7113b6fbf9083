"""Setting up: ``judge init`` (a judge.toml and sample answers), ``judge doctor`` (is
everything in place, and the fix when not) and ``judge models`` (which model, key variable and
endpoint are in use)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from judge.cli import app
from judge.cli.common import DB_OPTION, console, fail, out, print_json, print_table, safe

if TYPE_CHECKING:
    from judge.config import JudgeConfig

CONFIG_OPTION = typer.Option(
    None, "--config", "-c", help="Judge config (TOML); default $CLAIM_JUDGE_CONFIG, else "
    "./judge.toml if present, else the embedded default.")
MODEL_OPTION = typer.Option(None, "--model", "-m", help="Any litellm model string.")


@app.command()
def init(
    folder: Path = typer.Argument(Path("."), help="Folder to write into (created if missing)."),
    model: str | None = typer.Option(
        None, "--model", "-m", help="The judge model to pin (any litellm model string; "
        "default openai/gpt-4.1-mini; 'embedded' for the offline default)."),
    api_base: str | None = typer.Option(
        None, "--api-base", help="An OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1."),
    force: bool = typer.Option(False, "--force", help="Overwrite judge.toml / answers.jsonl."),
) -> None:
    """Write judge.toml (the pinned judge) and answers.jsonl (sample answer records).

    The samples are attributed to models of other families than the judge's, so none is
    refused as self-grading. Existing files are kept unless --force. Then: `judge doctor`,
    `judge run answers.jsonl`.
    """
    from judge.config import DEFAULT_MODEL
    from judge.quickstart import QUICKSTART_MODEL, SAMPLE_FILE
    from judge.quickstart import init as write

    pinned = DEFAULT_MODEL if model == "embedded" else (model or QUICKSTART_MODEL)
    try:
        result = write(folder, pinned, api_base, force)
    except OSError as exc:
        fail(f"cannot write into {safe(folder)}: {safe(exc)}")
    for path in result.written:
        console.print(f"wrote {safe(path)}")
    for path in result.kept:
        console.print(f"[yellow]kept {safe(path)}[/] (exists; --force overwrites it)")
    where = "" if folder == Path(".") else f"cd {safe(folder)} && "
    console.print(f"next: {where}judge doctor, then judge run {SAMPLE_FILE} --db judge.db")


@app.command()
def doctor(
    config: Path | None = CONFIG_OPTION,
    model: str | None = MODEL_OPTION,
    db: Path = DB_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    online: bool = typer.Option(
        False, "--online", help="Also send the provider one cheap authenticated request (a "
        "1-token completion), so a refused key or an unknown model shows now."),
) -> None:
    """Check the setup and what a run will do: config, model string, key, endpoint, embedded
    model, store; the strategy's prompts, the settings it reads, the probe head.

    Prints each check and, for a problem, the fix. No model call is made unless --online; an
    api_base (or $<PROVIDER>_API_BASE) is contacted (GET /models). Exit codes: 0 all good; 64
    a problem in the config or the environment (a refused key included); 1 the endpoint does
    not answer.
    """
    from judge.models.preflight import diagnose
    from judge.plan import plan_findings

    cfg, path = _config(config, model)
    found = diagnose(cfg, config_path=path, db=db, online=online)
    found.findings += plan_findings(cfg)
    if as_json:
        print_json(found.as_dict())
    else:
        for finding in found.findings:
            mark = "[green]ok[/]  " if finding.ok else "[bold red]fix[/] "
            out.print(f"{mark} {finding.name:<9} {safe(finding.found)}")
            if finding.fix:
                out.print(f"      {'':<9} → {safe(finding.fix)}")
        out.print("all good" if not found.problems
                  else f"{len(found.problems)} problem(s)")
    if found.problems:
        raise typer.Exit(found.exit_code)


@app.command()
def models(
    config: Path | None = CONFIG_OPTION,
    model: str | None = MODEL_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show the judge model in use: the config it comes from, its provider, key variable,
    endpoint and judge version (no network, no model call)."""
    from judge.models.preflight import route
    from judge.version import version_of

    cfg, path = _config(config, model)
    where = route(cfg)
    row = {"config": str(path) if path else None, "model": cfg.model,
           "strategy": cfg.strategy, "provider": where.provider,
           "key_variables": list(where.key_variables), "missing_keys": list(where.missing_keys),
           "endpoint": where.shown_endpoint, "endpoint_from": where.endpoint_from,
           "judge_version": version_of(cfg)}
    if as_json:
        print_json(row)
        return
    table = Table(show_header=False, title="judge model", title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    keys = ", ".join(f"{k} (not set)" if k in where.missing_keys else f"{k} (set)"
                     for k in where.key_variables) or "-"
    for key, value in (("config", row["config"] or "none (the embedded default)"),
                       ("model", cfg.model), ("strategy", cfg.strategy),
                       ("provider", where.provider or f"unknown: {where.error}"),
                       ("key variable", keys),
                       ("endpoint", f"{where.shown_endpoint or '-'} ({where.endpoint_from})"),
                       ("judge version", row["judge_version"])):
        table.add_row(key, safe(value))
    print_table(table)


def _config(config: Path | None, model: str | None) -> tuple[JudgeConfig, Path | None]:
    """The config and the file it was read from (None: the default)."""
    from judge.cli.common import load_config
    from judge.config import config_path

    return load_config(config, model=model), config_path(config)
