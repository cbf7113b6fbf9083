"""Service settings: the store, the judge config, API tokens and reviewer identities, limits."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from judge.config import JudgeConfig
from judge.review.reviews import DEFAULT_GUIDELINE_VERSION

#: Roles, weakest first. A reviewer labels blind; an adjudicator also decides disagreements
#: and reads gold; an admin also judges answers, submits batches, builds queues and reads the
#: judge's verdicts.
ROLES = ("reviewer", "adjudicator", "admin")
TOKENS_ENV = "CLAIM_JUDGE_TOKENS"
_IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
MIN_TOKEN_CHARS = 8


class SettingsError(ValueError):
    pass


@dataclass(frozen=True)
class Identity:
    """Who a token belongs to; ``annotator`` is what reviews record."""

    name: str
    role: str = "reviewer"

    @property
    def annotator(self) -> str:
        return f"human:{self.name}"

    def can(self, role: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(role)


def parse_tokens(spec: str) -> dict[str, Identity]:
    """``token:name[:role],token2:name2`` (commas or newlines; ``#`` starts a comment).
    The role defaults to ``reviewer``."""
    tokens: dict[str, Identity] = {}
    entries = [e.split("#", 1)[0].strip() for e in re.split(r"[,\n]", spec)]
    for n, entry in enumerate((e for e in entries if e), start=1):
        parts = entry.split(":")
        if len(parts) not in (2, 3):
            raise SettingsError(f"token entry {n} is not 'token:name[:role]'")
        token, name = parts[0].strip(), parts[1].strip()
        role = parts[2].strip() if len(parts) == 3 else "reviewer"
        if len(token) < MIN_TOKEN_CHARS:
            raise SettingsError(
                f"token entry {n}: tokens need at least {MIN_TOKEN_CHARS} characters"
            )
        if not _IDENTITY.fullmatch(name):
            raise SettingsError(
                f"token entry {n}: identity {name!r} must be 1-64 letters, digits, "
                "'.', '_', '@', '-'"
            )
        if role not in ROLES:
            raise SettingsError(f"token entry {n}: role {role!r} is not one of {', '.join(ROLES)}")
        if token in tokens:
            raise SettingsError(f"token entry {n}: the same token is given twice")
        tokens[token] = Identity(name, role)
    return tokens


def load_tokens(
    tokens_file: Path | None = None, env: Mapping[str, str] | None = None
) -> dict[str, Identity]:
    """Tokens from a file (same syntax, one per line) and/or ``$CLAIM_JUDGE_TOKENS``."""
    env = os.environ if env is None else env
    tokens: dict[str, Identity] = {}
    if tokens_file is not None:
        try:
            tokens.update(parse_tokens(tokens_file.read_text(encoding="utf-8")))
        except OSError as exc:
            raise SettingsError(f"cannot read tokens file {tokens_file}: {exc}") from exc
    if env.get(TOKENS_ENV):
        tokens.update(parse_tokens(env[TOKENS_ENV]))
    return tokens


@dataclass
class ServiceSettings:
    db_path: Path
    tokens: dict[str, Identity]
    judge_config: JudgeConfig = field(default_factory=JudgeConfig)
    reveal_judge: bool = False
    guideline_version: str = DEFAULT_GUIDELINE_VERSION
    max_body_bytes: int = 8 * 1024 * 1024
    max_batch_bytes: int = 128 * 1024 * 1024
    session_hours: float = 12.0
    cookie_secure: bool = False
