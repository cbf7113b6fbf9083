"""``judge serve``: the HTTP API and the review pages."""

from __future__ import annotations

import errno
import ipaddress
import socket
from pathlib import Path

import typer

from judge.cli import app
from judge.cli.common import API_BASE_OPTION, EXISTING_DB_OPTION, console, fail, usage_error
from judge.review.reviews import DEFAULT_GUIDELINE_VERSION


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command()
def serve(
    db: Path = EXISTING_DB_OPTION,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default: loopback)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port to listen on."),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Judge config (TOML) for /v1/judge and /v1/runs."
    ),
    model: str | None = typer.Option(None, "--model", "-m", help="Judge model override."),
    api_base: str | None = API_BASE_OPTION,
    tokens_file: Path | None = typer.Option(
        None, "--tokens-file",
        help="File of 'token:name[:role]' lines (role: reviewer, adjudicator or admin; "
        "default reviewer). $CLAIM_JUDGE_TOKENS takes the same entries, comma-separated.",
    ),
    reveal_judge: bool = typer.Option(
        False, "--reveal-judge",
        help="Show the judge's label, subtype and rationale to reviewers (for adjudication "
        "only; reviews are blind without it).",
    ),
    guideline_version: str = typer.Option(
        DEFAULT_GUIDELINE_VERSION, "--guideline-version", envvar="CLAIM_JUDGE_GUIDELINE_VERSION",
        help="Recorded with every review and adjudication made through the service.",
    ),
    max_body_mb: float = typer.Option(8.0, "--max-body-mb", min=0.01, help="Request body limit."),
    max_batch_mb: float = typer.Option(128.0, "--max-batch-mb", min=0.01, help="Batch limit."),
    cookie_secure: bool = typer.Option(
        False, "--cookie-secure", help="Mark the session cookie Secure (behind HTTPS)."
    ),
    create: bool = typer.Option(
        False, "--create", help="Create the store when it does not exist (for /v1/runs)."),
    trusted_proxy: list[str] = typer.Option(
        [], "--trusted-proxy", envvar="CLAIM_JUDGE_TRUSTED_PROXIES",
        help="An address or network (10.0.0.5, 10.0.0.0/8) of a reverse proxy whose "
        "X-Forwarded-For names the client; repeat for several (the variable takes them "
        "comma- or space-separated). Without one, X-Forwarded-For is ignored."),
) -> None:
    """Serve the JSON API (/v1, schema at /openapi.json) and the review page (/review).

    The store must exist (--create starts an empty one). Tokens come from
    $CLAIM_JUDGE_TOKENS and/or --tokens-file, e.g.
    CLAIM_JUDGE_TOKENS="s3cret-token-1:alice,s3cret-token-2:bob:adjudicator,ops-token-xyz:ci:admin".
    The token's name is recorded as annotator human:<name>.
    """
    import uvicorn

    from judge.cli.common import load_config

    if not db.exists() and not create:
        fail(f"store {db} does not exist; judge a batch into it first (`judge run INPUT.jsonl "
             f"--db {db}`), or pass --create to start with an empty store")
    from judge.service.app import create_app
    from judge.service.settings import SettingsError, load_tokens

    try:
        tokens = load_tokens(tokens_file)
    except SettingsError as exc:
        fail(str(exc))
    if not tokens:
        fail("no API tokens configured: set CLAIM_JUDGE_TOKENS='token:name[:role],...' or use "
             "--tokens-file; nothing can be read or written without one")
    if not _loopback(host):
        console.print(f"[yellow]warning:[/] binding to {host} exposes the service beyond this "
                      "machine; serve it behind HTTPS (and use --cookie-secure)")
    from judge.service.auth import parse_proxies

    proxies = [p for entry in trusted_proxy for p in entry.replace(",", " ").split()]
    try:
        parse_proxies(proxies)
    except ValueError as exc:
        usage_error(str(exc))
    cfg = load_config(config, model=model, api_base=api_base)
    application = create_app(
        db, tokens=tokens, judge_config=cfg, reveal_judge=reveal_judge,
        guideline_version=guideline_version, max_body_bytes=int(max_body_mb * 1024 * 1024),
        max_batch_bytes=int(max_batch_mb * 1024 * 1024), cookie_secure=cookie_secure,
        trusted_proxies=proxies,
    )
    listener = bind(host, port)  # a port in use is a usage error before anything is said
    roles = ", ".join(f"{i.name} ({i.role})" for i in tokens.values())
    console.print(f"serving {db} on http://{host}:{port}/review  ·  identities: {roles}"
                  + ("  ·  [yellow]judge opinion revealed[/]" if reveal_judge else ""))
    # the service reads X-Forwarded-For itself, from the listed proxies only (uvicorn would
    # trust it from 127.0.0.1, i.e. from anyone on this machine)
    server = uvicorn.Server(uvicorn.Config(application, log_level="info", server_header=False,
                                           proxy_headers=False))
    with listener:
        server.run(sockets=[listener])


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use (or an address this machine
    does not have) is said in one line with the fix, as a usage error (exit 64), instead of
    uvicorn's bind error after "serving on"."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        usage_error(f"--host {host!r} is not an address this machine can bind ({exc})")
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        why = ("is in use by another process" if exc.errno == errno.EADDRINUSE
               else f"cannot be bound ({exc.strerror or exc})")
        usage_error(f"port {port} on {host} {why}: pass another --port, or stop the process "
                    f"that holds it")
    sock.set_inheritable(True)
    return sock
