"""Secrets never leave: :func:`mask` replaces every secret this process knows by ``***`` in a
text before it is printed, logged, stored or reported.

The secrets: the values of the environment's key variables (a name such as
``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``: ``KEY``,
``TOKEN``, ``SECRET``, ``PASSWORD`` or ``CREDENTIALS`` as a word of it), the values a config
gives under such a name (``api_key``, which is no setting: its error must not echo it), and
the credentials of the URLs a config names (``api_base``: the ``user:pass@`` part and query
keys such as ``?api-key=``, ``?key=``, ``?token=``); values shorter than
:data:`MIN_SECRET_CHARS` are no key worth hiding (a local server's ``x``) and would garble every
message. Whatever the process knows, credentials written in any URL (``user:pass@``, a
secret-named query key) and a ``Bearer`` token are masked by their shape too.

The command line writes through :class:`MaskedStream` (stdout and stderr), the model calls'
errors are masked where they are made (:func:`judge.models.attempts.root_message`) and the
store masks the errors it keeps, so one helper holds the rule for every way out."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any, TextIO
from urllib.parse import parse_qsl, quote, unquote, urlsplit

MASK = "***"
#: Shorter values are not masked where they occur (a local server's key ``x`` or ``none``).
MIN_SECRET_CHARS = 6
#: An environment variable or a config key whose value is a secret.
_SECRET_NAME = re.compile(
    r"(?:^|[_-])(?:API_?KEY|KEY|TOKENS?|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(?:[_-]|$)", re.I)
#: A query parameter whose value is a secret (``api-key``, ``key``, ``access_token``, ``sig``).
_SECRET_PARAM = r"[\w.-]*(?:key|token|secret|password|passwd|pwd|sig|signature|auth)[\w.-]*"
_QUERY = re.compile(rf"([?&;]{_SECRET_PARAM}=)([^&#\s'\"<>]+)", re.I)
#: ``scheme://user:password@`` or ``scheme://token@``
_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)(?:([^/\s:@?#]*):)?([^/\s@?#]+)@", re.I)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]{6,}", re.I)

_remembered: set[str] = set()
_env_seen: dict[Any, Any] | None = None
_env_secrets: frozenset[str] = frozenset()


def secret_name(name: str) -> bool:
    """Whether a variable or a config key of this name holds a secret."""
    return bool(_SECRET_NAME.search(name))


def remember(value: str) -> None:
    """Mask ``value`` from now on (and its URL-encoded spelling), unless it is too short."""
    if len(value) >= MIN_SECRET_CHARS:
        _remembered.update({value, quote(value, safe=""), unquote(value)})


def remember_url(url: str | None) -> None:
    """Mask the credentials of ``url``: its user and password, its secret query values."""
    if not url:
        return
    try:
        parts = urlsplit(url)
        password, user = parts.password, parts.username
    except ValueError:
        return
    for value in (password, user if password is None else None):
        if value:
            remember(value)
    for key, value in parse_qsl(parts.query, keep_blank_values=False):
        if re.fullmatch(_SECRET_PARAM, key, re.I):
            remember(value)


def remember_secrets(data: Any, name: str = "") -> None:
    """Mask the secrets of a config's raw values: a string under a secret-named key, and
    the credentials of every URL (nested tables and lists included)."""
    if isinstance(data, dict):
        for key, value in data.items():
            remember_secrets(value, str(key))
    elif isinstance(data, list | tuple):
        for value in data:
            remember_secrets(value, name)
    elif isinstance(data, str):
        if secret_name(name):
            remember(data)
        if "://" in data:
            remember_url(data)


def known() -> set[str]:
    """Every secret value this process masks now."""
    return set(_environment()) | _remembered


def _environment() -> frozenset[str]:
    """The values of the environment's key variables (read again when it changed)."""
    global _env_seen, _env_secrets
    data = getattr(os.environ, "_data", None)
    if data is not None and data == _env_seen:
        return _env_secrets
    _env_seen = dict(data) if data is not None else None
    values = {v for k, v in os.environ.items() if len(v) >= MIN_SECRET_CHARS and secret_name(k)}
    _env_secrets = frozenset(values | {quote(v, safe="") for v in values})
    return _env_secrets


def mask(text: str) -> str:
    """``text`` with every secret replaced by ``***``."""
    if not text:
        return text
    text = _USERINFO.sub(_userinfo, text)
    text = _QUERY.sub(rf"\g<1>{MASK}", text)
    text = _BEARER.sub(rf"\g<1>{MASK}", text)
    for value in sorted(known(), key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    return text


def _userinfo(match: re.Match[str]) -> str:
    scheme, user = match.group(1), match.group(2)
    return f"{scheme}{user}:{MASK}@" if user is not None else f"{scheme}{MASK}@"


class MaskedStream:
    """A text stream whose writes are masked (:func:`mask`): the command line's stdout and
    stderr, so no message, table, JSON summary or log line it prints shows a secret."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(mask(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def mask_streams() -> None:
    """Mask what this process writes to stdout and stderr (once)."""
    import sys

    if not isinstance(sys.stdout, MaskedStream):
        sys.stdout = MaskedStream(sys.stdout)
    if not isinstance(sys.stderr, MaskedStream):
        sys.stderr = MaskedStream(sys.stderr)
