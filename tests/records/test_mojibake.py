"""Mojibake in a peer's dataset (UTF-8 read as cp1252 on the way: "doesnâ\\x80\\x99t") is
repaired on import with ftfy, and the original text is kept in the record's ``repaired``
map; text without mojibake is left alone, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import judge
from judge.records import AnswerRecord

GARBLED = "The client doesn\u2019t retry a 403.".encode().decode("cp1252", errors="replace")


def test_mojibake_is_repaired_on_import_and_the_original_kept(tmp_path: Path) -> None:
    assert "â€™" in GARBLED or "\u00e2\u0080\u0099" in GARBLED
    rows = [
        {"user_input": "Does the client retry a 403?", "response": "It doesn\u2019t retry.",
         "retrieved_contexts": [GARBLED, "Retries: 429 and 5xx only — never 4xx."]},
        {"user_input": "Café?", "response": "Yes.", "retrieved_contexts": ["Café au lait."]},
    ]
    path = tmp_path / "ragas.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    first, second = judge.read_dataset(path, "ragas")
    assert first["sources"][0]["text"] == "The client doesn\u2019t retry a 403."
    assert first["repaired"] == {"sources.C1.text": GARBLED}
    assert first["sources"][1]["text"] == "Retries: 429 and 5xx only — never 4xx."  # untouched
    assert "repaired" not in second and second["sources"][0]["text"] == "Café au lait."
    record = AnswerRecord.model_validate(first)
    assert record.repaired == {"sources.C1.text": GARBLED}
    assert "repaired" not in AnswerRecord.model_validate(second).model_dump(mode="json")
