"""Head v5 (research/language_head.py): head v4 plus a Chinese language offset from the
project's own unlabelled pairs, written reproducibly; its operating points are v4's."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADS = ROOT / "judge" / "config" / "heads"
NAME = "qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v5"


def test_the_offset_names_the_pair_files_it_comes_from() -> None:
    head = json.loads((HEADS / f"{NAME}.json").read_text(encoding="utf-8"))
    about = head["shift"]["about"]
    for lang in ("zh", "en"):
        pairs = about["pairs"][lang]
        path = ROOT / pairs["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == pairs["sha256"]
        assert len(path.read_text(encoding="utf-8").splitlines()) == pairs["n"]
    assert head["shift"]["rule"] == "han-share-half/v1"
    assert set(head["shift"]["offsets"]) == {"zh"}


def test_the_head_and_its_points_are_what_the_script_writes() -> None:
    """Byte for byte, from the stored vectors of the pairs (out/lang.db, not in git)."""
    if not (ROOT / "out" / "lang.db").is_file():
        pytest.skip("out/lang.db (the pairs judged by the v4 default) is not here")
    proc = subprocess.run([sys.executable, str(ROOT / "research" / "language_head.py"),
                           "--check"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
