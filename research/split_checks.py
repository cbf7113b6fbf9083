"""The figures of docs/split-checks.md: the skip rule, the grounding threshold and the
faithfulness check on the gold claims (``PYTHONPATH=. python research/split_checks.py``)."""

from __future__ import annotations

import collections
import glob
import json
from pathlib import Path

from judge.split.checkable import GROUNDED_SHARE, checkable_reason, grounding
from judge.split.faithful import unfaithful
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
    unfaithful_any: collections.Counter[str] = collections.Counter()
    unfaithful_whole = 0
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
                question = item.get("question") or ""
                if all(unfaithful(claim, s, "\n".join([question, *sentences[:i]]))
                       for i, s in enumerate(sentences)):
                    unfaithful_any[Path(name).name] += 1
                    unfaithful_whole += unfaithful(claim, answer, question) is not None
    print("skip rule (group, judged checkable): distinct claim texts")
    for key, count in sorted(skips.items()):
        print(f"  {key}: {count}")
    print(f"grounding below {GROUNDED_SHARE:.0%}: {sum(below.values())} of {len(pairs)} pairs")
    for name, count in sorted(per_file.items()):
        print(f"  {name}: {below[name]} of {count}")
    print(f"unfaithful to every single sentence: {sum(unfaithful_any.values())} of "
          f"{len(pairs)} pairs; to the whole answer: {unfaithful_whole}")
    for name, count in sorted(per_file.items()):
        print(f"  {name}: {unfaithful_any[name]} of {count}")


if __name__ == "__main__":
    main()
