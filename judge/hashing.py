"""Content hashes: the identity of anything that determines a result. Imports nothing."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def content_hash(obj: Any) -> str:
    """sha256 over canonical JSON: the identity of anything that determines a result."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
