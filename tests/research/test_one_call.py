"""research/one_call.py samples single-sentence gold answers, balanced, with their gold labels."""

from __future__ import annotations

import json
from pathlib import Path

from judge.records import AnswerRecord
from judge.split.claims import Splitter
from research.one_call import GOLD, MAX_SOURCE_CHARS, outcome, sample


def test_the_sample_is_balanced_single_sentence_and_keeps_each_gold_label() -> None:
    items = {json.loads(line)["id"]: json.loads(line)
             for line in Path(GOLD).read_text(encoding="utf-8").splitlines()}
    records = sample(GOLD, 20)
    assert len(records) == 20
    assert sum(r["gold"] == "supported" for r in records) == 10
    for record in records:
        parsed = AnswerRecord.model_validate({k: v for k, v in record.items() if k != "gold"})
        assert len(Splitter.sentences(parsed)[0]) == 1
        assert sum(len(s.content) for s in parsed.sources) <= MAX_SOURCE_CHARS
        item = items[record["id"]]
        assert record["gold"] == item["label"] and record["answer"] == item["answer"]
    assert sample(GOLD, 20) == records  # seeded: the same sample again


def test_an_answer_is_supported_only_when_every_verdict_is() -> None:
    assert outcome(["supported", "supported"]) == "supported"
    assert outcome(["supported", "judge_error"]) == "not"
    assert outcome(["not_in_source"]) == "not"
    assert outcome([]) == "not"
