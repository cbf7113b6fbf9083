"""The probe head a config pins (strategy ``probe``): its file and sha256."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, field_validator


class ProbeHeadRef(BaseModel):
    """``probe_head = { file = "builtin:<name>" | "path/to/head.json", sha256 = "…" }``: the
    file's sha256 is part of the judge version, and a file that no longer has it is refused.
    A relative path is read from the working directory. ``judge fit`` writes head files and
    prints the reference to pin."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    sha256: str

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.lower()
        if not re.fullmatch(r"[0-9a-f]{64}", value):
            raise ValueError("sha256 must be 64 hexadecimal digits (sha256sum of the head file)")
        return value
