"""The figures of docs/split-checks.md: the skip rule and the grounding threshold on the gold
claims (``PYTHONPATH=. python research/split_checks.py``)."""

from __future__ import annotations

import collections
import glob
import json
from pathlib import Path

from judge.split.checkable import GROUNDED_SHARE, checkable_reason, grounding
from judge.text import split_sentences

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(glob.glob(str(ROOT / "gold" / "external" / "*.dev.jsonl"))) + [
    str(ROOT / "gold" / "regression.jsonl"), str(ROOT / "gold" / "samples" / "gold.jsonl")]


def main() -> None:
    skips: collections.Counter[tuple[str, bool]] = collections.Counter()
    texts: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    below: collections.Counter[str] = collections.Counter()
    per_file: collections.Counter[str] = collections.Counter()
    for name in FILES:
        for line in Path(name).read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            claim, answer = item["claim"], item.get("answer")
            if claim not in texts:
                texts.add(claim)
                group = (str(item.get("subtype")) if item["label"] == "not_verifiable"
                         else "checkable")
                skips[(group, checkable_reason(claim) is not None)] += 1
            if answer and (answer, claim) not in pairs:
                pairs.add((answer, claim))
                sentences = [answer[s:e] for s, e in split_sentences(answer)] or [answer]
                best = max(grounding(claim, s, answer) for s in sentences)
                per_file[Path(name).name] += 1
                below[Path(name).name] += int(best < GROUNDED_SHARE)
    print("skip rule (group, judged checkable): distinct claim texts")
    for key, count in sorted(skips.items()):
        print(f"  {key}: {count}")
    print(f"grounding below {GROUNDED_SHARE:.0%}: {sum(below.values())} of {len(pairs)} pairs")
    for name, count in sorted(per_file.items()):
        print(f"  {name}: {below[name]} of {count}")


if __name__ == "__main__":
    main()
