"""Splitting without a call (issue 36): how often the atomic-sentence rule
(:mod:`judge.split.atomic`) agrees with the human claim splits of Factcheck-GPT.

    python research/atomic_split.py [--rule atomic/v1|atomic/v2] [--output FILE]

Factcheck-GPT's annotators split each ChatGPT answer into sentences and each sentence into
decontextualised claims; the dev file keeps the claims (ids ``rNNNsKcM``: answer N, sentence
K, claim M) that have a sampled evidence pair. Each human claim is placed in the program's
sentence that grounds it best (:func:`judge.split.checkable.grounding`). For the sentences
the rule calls atomic, the figures say how often the human split made more than one claim of
them (``merged``: the rule would judge two facts as one) and how often the human claim says
something the sentence as it stands does not (``reworded``: it names a referent the sentence
leaves to its context, so the sentence-as-claim is read with less context). A human
sentence whose claim numbers reach ``c1`` had at least two claims even where the sampling
dropped one; that count is exact, the per-sentence count a lower bound. Nothing is fitted;
no model is called.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.split.atomic import RULE, RULES, all_atomic, atomic_reason  # noqa: E402
from judge.split.checkable import grounding  # noqa: E402
from judge.split.citations import segment_answer  # noqa: E402
from judge.text import normalize, tokens  # noqa: E402

GOLD = ROOT.parent.parent / "shared" / "gold" / "external" / "factcheck_gpt.dev.jsonl"
_ID = re.compile(r"r(\d+)s(\d+)c(\d+)")


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [0.0, 1.0]
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(max(0.0, c - h), 4), round(min(1.0, c + h), 4)]


def load(path: Path) -> dict[str, dict[str, Any]]:
    """Answers by upstream answer id: the text and the human claims by (sentence, claim)."""
    answers: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        m = _ID.search(item["id"])
        if not m:
            continue
        answer = answers.setdefault(m.group(1), {"text": item["answer"], "claims": {}})
        answer["claims"][(int(m.group(2)), int(m.group(3)))] = item["claim"]
    return answers


def reworded(claim: str, sentence: str) -> bool:
    """The human claim holds content words the sentence lacks (a referent named, a word
    changed) or leaves out some of the sentence's."""
    want, have = set(tokens(claim)), set(tokens(sentence))
    return bool(want - have) or len(have - want) > max(1, len(have) // 4)


def measure(answers: dict[str, dict[str, Any]], rule: str = RULE) -> dict[str, Any]:
    counts: dict[str, int] = defaultdict(int)
    reasons: dict[str, int] = defaultdict(int)
    examples: list[dict[str, Any]] = []
    for _key, answer in sorted(answers.items()):
        sentences = [s.text for s in segment_answer(answer["text"], [])] or [answer["text"]]
        atomic = [atomic_reason(s, rule=rule) is None for s in sentences]
        for s, ok in zip(sentences, atomic, strict=True):
            if not ok:
                reasons[str(atomic_reason(s, rule=rule)).split(" (")[0]] += 1
        counts["answers"] += 1
        counts["answers_no_call"] += all_atomic(sentences, [False] * len(sentences), rule)
        counts["sentences"] += len(sentences)
        counts["sentences_atomic"] += sum(atomic)
        placed: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
        human_multi = {s for (s, c) in answer["claims"] if c >= 1}
        for (s, c), claim in answer["claims"].items():
            best = max(range(len(sentences)),
                       key=lambda i: grounding(claim, sentences[i], answer["text"]))
            placed[best].append((s, c, claim))
        for i, found in placed.items():
            kind = "atomic" if atomic[i] else "other"
            counts[f"{kind}_sentences_with_claims"] += 1
            multi = len(found) > 1 or any(s in human_multi for s, _, _ in found)
            counts[f"{kind}_merged"] += multi
            for _, _, claim in found:
                counts[f"{kind}_claims"] += 1
                changed = reworded(claim, sentences[i])
                counts[f"{kind}_reworded"] += changed
                if kind == "atomic" and (multi or changed) and len(examples) < 12:
                    examples.append({"sentence": sentences[i], "human_claim": claim,
                                     "merged": multi})
    out: dict[str, Any] = {"rule": rule, "gold": GOLD.name, **counts,
                           "not_atomic_because": dict(sorted(reasons.items()))}
    for kind in ("atomic", "other"):
        n = counts[f"{kind}_sentences_with_claims"]
        k = counts[f"{kind}_merged"]
        out[f"{kind}_merged_share"] = [round(k / max(n, 1), 4), wilson(k, n)]
        n = counts[f"{kind}_claims"]
        k = counts[f"{kind}_reworded"]
        out[f"{kind}_reworded_share"] = [round(k / max(n, 1), 4), wilson(k, n)]
    out["examples"] = examples
    return out


def coverage(folder: Path, rule: str = RULE) -> dict[str, Any]:
    """Per dev dataset: the distinct answers the rule sends to no split, and for those, how
    many of their gold claims are one of the sentences as it stands (the claims the rule
    makes) after normalisation."""
    out: dict[str, Any] = {}
    for path in sorted(folder.glob("*.dev.jsonl")):
        answers: dict[str, set[str]] = defaultdict(set)
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            if item.get("answer"):
                answers[item["answer"]].add(item["claim"])
        skipped = kept = same = 0
        for answer, claims in answers.items():
            sentences = [s.text for s in segment_answer(answer, [])] or [answer]
            if not all_atomic(sentences, [False] * len(sentences), rule):
                continue
            skipped += 1
            made = {normalize(s).strip(" .。") for s in sentences}
            kept += len(claims)
            same += sum(normalize(c).strip(" .。") in made for c in claims)
        out[path.name.split(".")[0]] = {
            "answers": len(answers), "answers_no_call": skipped,
            "gold_claims_of_those": kept, "gold_claim_is_a_sentence": same}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", type=Path, default=GOLD)
    parser.add_argument("--rule", choices=RULES, default=RULE)
    parser.add_argument("--output", type=Path,
                        help="default: research/reports/atomic_split.json for atomic/v1, "
                             "atomic_split_v2.json for atomic/v2")
    args = parser.parse_args(argv)
    output = args.output or ROOT / "reports" / (
        "atomic_split.json" if args.rule == "atomic/v1" else
        f"atomic_split_{args.rule.split('/')[1]}.json")
    report = measure(load(args.gold), args.rule)
    report["per_dataset"] = coverage(args.gold.parent, args.rule)
    output.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n",
                           encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "examples"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
