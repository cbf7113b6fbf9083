"""The README stays a front page: the two make commands first, a quickstart, at most 1,500
words (the detail lives in docs/)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_make_run_and_make_test() -> None:
    lines = README.splitlines()
    assert lines[0] == "# claim-judge"
    block = lines[lines.index("```") + 1:lines.index("```", lines.index("```") + 1)]
    assert [line.split()[:2] for line in block] == [["make", "run"], ["make", "test"]]


def test_readme_is_at_most_1500_words_and_its_links_resolve() -> None:
    assert len(README.split()) <= 1500  # as `wc -w` counts
    for target in re.findall(r"\]\(((?:docs|research|gold)/[^)#]+)", README):
        assert (ROOT / target).exists(), target


def test_quickstart_installs_a_wheel_pins_a_model_and_serves_the_review_page() -> None:
    quick = README[README.index("## Quickstart"):README.index("## Command line")]
    for needed in ("pip install dist/claim_judge-", "judge.toml", "model = ", "judge run ",
                   "CLAIM_JUDGE_TOKENS", "judge serve", "/review"):
        assert needed in quick, needed
