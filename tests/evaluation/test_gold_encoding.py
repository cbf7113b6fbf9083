"""No gold file holds mojibake (UTF-8 read as Latin-1 or cp1252 on its way in: ``Ã©`` for
``é``, ``â€™`` or ``â\\x80\\x99`` for ``’``, ``ï¿½`` for ``�``): six source texts of the external
dev sets had some, and with them the check subsets drawn from them. The texts were repaired
by re-encoding those spans; ids and labels stayed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "gold"
#: cp1252's characters at bytes 0x80-0x9F, as such a reading shows a UTF-8 continuation byte
_CP1252 = "€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ"
#: a UTF-8 lead byte (â: E2, Â: C2, Ã: C3, ï: EF) read as a character, then its continuation
#: bytes read as characters too; and Â before a space (a no-break space whose A0 byte became a
#: space on the way)
MOJIBAKE = re.compile(rf"[âÂÃ][\x80-\xbf{_CP1252}]|ï¿½|Â ")


def _texts(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _texts(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _texts(inner, f"{where}[{i}]")


def _gold_texts() -> Iterator[tuple[str, str]]:
    """Every string of every file under gold/, JSON values decoded, named by file and line."""
    files = sorted(p for p in GOLD.rglob("*") if p.is_file())
    assert len(files) >= 20 and any(p.name == "eval_all.jsonl" for p in files)
    for path in files:
        name = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    yield from _texts(json.loads(line), f"{name}:{n}")
        elif path.suffix == ".json":
            yield from _texts(json.loads(text), name)
        else:
            yield name, text


def test_the_detector_finds_mojibake_and_leaves_real_text_alone() -> None:
    for broken in ("cafÃ©", "doesnâ€™t", "doesnâ\x80\x99t", "Square Ã\x98ne", "chuï¿½u",
                   "theÂ company", "5Â\xa0km", "â€œquotedâ€\x9d"):
        assert MOJIBAKE.search(broken), broken
    for fine in ("café", "doesn’t", "“quoted”", "São Paulo", "Âu Lạc", "ÂNGELA", "chu\ufffdu",
                 "5\xa0km", "候選筆記未提及價格", "Ørsted — 2019"):
        assert not MOJIBAKE.search(fine), fine


def test_no_gold_file_holds_mojibake() -> None:
    found = [f"{where}: {text[max(0, m.start() - 20):m.end() + 10]!r}"
             for where, text in _gold_texts() for m in MOJIBAKE.finditer(text)]
    assert found == [], "\n".join(found)


def test_no_gold_text_is_one_ftfy_would_repair() -> None:
    """The repair judge import applies (judge.records.mojibake) finds nothing to repair."""
    ftfy = pytest.importorskip("ftfy")
    changed = [where for where, text in _gold_texts() if ftfy.fix_encoding(text) != text]
    assert changed == []
