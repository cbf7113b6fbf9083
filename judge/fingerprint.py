"""The fingerprint of the judge's code: which code derived a stored verdict.

The judge version pins what a verdict depends on by configuration (model, prompts, settings);
it does not pin the program that combines the model's answers with its own checks. A verdict
stored under a version is reused by later runs of that version, so after the code changes a
run could silently report verdicts the current code would not give. Each run and each judged
answer records this fingerprint, and a run that reuses verdicts judged by other code says so
(``judge replay`` then shows what the current code would change, with no model call).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """12 hex digits of sha256 over every Python file of the ``judge`` package (relative path
    and bytes, in path order). Coarse on purpose: any change to the code changes it."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
