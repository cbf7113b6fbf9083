"""research/shared_excerpts.py builds valid multi-claim answers from one-claim gold items."""

from __future__ import annotations

import json
from pathlib import Path

from judge.records import AnswerRecord
from research.shared_excerpts import GOLD, build


def test_grouped_answers_keep_each_claims_label_and_sources() -> None:
    items = [json.loads(line) for line in Path(GOLD).read_text(encoding="utf-8").splitlines()]
    records, labels = build(GOLD, 40, 5)
    assert sum(len(r["claims"]) for r in records) == len(labels) <= 40
    assert len(records) == 8 and {len(r["claims"]) for r in records} == {5}
    k = 0
    for record in records:
        AnswerRecord.model_validate(record)  # a valid answer record (ids unique, short)
        ids = [s["id"] for s in record["sources"]]
        assert len(ids) == len(set(ids))
        datasets = set()
        for n, claim in enumerate(record["claims"]):
            # the gold item behind each claim: its label, and its own sources all there
            own = sorted(s["text"] for s in record["sources"] if s["id"].startswith(f"i{n}:"))
            member = [i for i in items if i["claim"] == claim["text"]
                      and sorted(s["text"] for s in i["sources"]) == own]
            assert member and member[0]["label"] == labels[k]
            datasets.add(member[0]["dataset"])
            k += 1
        assert len(datasets) == 1
    # deterministic: the same grouping again
    assert build(GOLD, 40, 5) == (records, labels)
