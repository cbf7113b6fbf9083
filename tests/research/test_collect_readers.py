"""research/collect_readers.py renders the pool's probe prompts as the product does, and with
``--no-evidence`` the same prompt with nothing under its evidence heading (the claim alone,
in the same frame), whose claim and evidence parts the readers still find."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.config import JudgeConfig
from judge.models.readers import prompt_spans
from research.collect_readers import CONFIG, FIRST_SETS, pool_prompts


def first_items(tmp_path: Path, n: int = 3) -> Path:
    lines = FIRST_SETS[0].read_text(encoding="utf-8").splitlines()[:n]
    path = tmp_path / "few.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_no_evidence_keeps_the_frame_and_the_claim_and_drops_every_excerpt(
        tmp_path: Path) -> None:
    config = JudgeConfig.load(CONFIG)
    gold = first_items(tmp_path)
    with_evidence = {p["id"]: p for p in pool_prompts([gold], config)}
    alone = {p["id"]: p for p in pool_prompts([gold], config, no_evidence=True)}
    assert with_evidence.keys() == alone.keys() and len(alone) == 3
    for gold_id, prompt in alone.items():
        full = with_evidence[gold_id]
        assert "\n- " in full["text"].split("Claim: ")[0]        # excerpts under the heading
        assert "Evidence:\n\nClaim: " + prompt["claim"] in prompt["text"]
        head, _, _ = full["text"].partition("Evidence:\n")
        assert prompt["text"].startswith(head)                    # question and last turn kept
        assert prompt["text"].endswith(full["text"][full["text"].rfind("Claim: "):])
        spans = prompt_spans(prompt["text"], prompt["claim"])
        start, end = spans.evidence
        assert prompt["text"].encode()[start:end] == b"Evidence:"


def test_held_back_files_are_refused_for_the_pool(tmp_path: Path) -> None:
    path = tmp_path / "fresh_check.jsonl"
    path.write_text(first_items(tmp_path).read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(SystemExit, match="held back"):
        pool_prompts([path], JudgeConfig.load(CONFIG), no_evidence=True)
