"""Write ``research/tuning_subset.jsonl``: a seeded, label-balanced sample of the *tuning* part
of the external dev sets (the same split rule as ``make_subset.py``), for choosing judge
prompts and policies. Figures that are reported come from ``eval_subset.jsonl`` (the
check part) only; nothing here is ever reported as quality.

Round 1 (``--per-dataset``) draws short-source items only. Round 2 (``--second-round``)
draws further items the way the check subsets are drawn: random short-source items first,
then the shortest remaining ones fill a label's quota. Round 1 alone left the tuning set
without WiCE's long excerpts and without Factcheck-GPT's ``not_verifiable`` items, both of
which the check subsets hold. Round 3 (``--third-round``) draws more items the way round 2
does, for a steadier fit of the linear rule. Round 4 (``--rest``) adds every tuning item
not drawn yet, in the same order rule (short sources at random, then the shortest remaining):
the whole tuning part, so the fitted rule and its queue threshold rest on as many human
labels as the split holds. Earlier rounds' items come first, unchanged.

    python research/make_tuning.py [--per-dataset 40] [--second-round 30] [--third-round 40] \
        [--no-rest]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_subset import (  # noqa: E402
    DATASETS,
    LABELS,
    MAX_SOURCE_CHARS,
    group_of,
    part_of,
    quotas,
    read,
    source_chars,
)

SEED = 20261130
REST = 10**6  # a quota no label of any dataset reaches: round 4 takes every remaining item
OUT = Path(__file__).resolve().parent / "tuning_subset.jsonl"


def build(per_dataset: int) -> list[dict]:
    rng = random.Random(SEED)
    chosen: list[dict] = []
    for dataset in DATASETS:
        items = [i for i in read(dataset)
                 if part_of(dataset, group_of(i["id"])) == "tuning"
                 and source_chars(i) <= MAX_SOURCE_CHARS]
        present = [label for label in LABELS if any(i["label"] == label for i in items)]
        for label, quota in quotas(present, per_dataset).items():
            pool = sorted((i for i in items if i["label"] == label), key=lambda i: i["id"])
            chosen += rng.sample(pool, min(quota, len(pool)))
    return chosen


def later_round(first: list[dict], per_dataset: int, name: str) -> list[dict]:
    """More tuning items, not in ``first``, drawn like the check subsets (short sources
    at random, then the shortest remaining ones); ``name`` seeds the draw."""
    taken = {i["id"] for i in first}
    chosen: list[dict] = []
    for dataset in DATASETS:
        items = [i for i in read(dataset)
                 if part_of(dataset, group_of(i["id"])) == "tuning" and i["id"] not in taken]
        present = [label for label in LABELS if any(i["label"] == label for i in items)]
        if not present:  # every tuning item of the dataset is drawn already
            continue
        for label, quota in quotas(present, per_dataset).items():
            pool = sorted((i for i in items if i["label"] == label), key=lambda i: i["id"])
            short = [i for i in pool if source_chars(i) <= MAX_SOURCE_CHARS]
            rng = random.Random(f"{SEED}:{name}:{dataset}:{label}")
            rest = sorted((i for i in pool if source_chars(i) > MAX_SOURCE_CHARS),
                          key=lambda i: (source_chars(i), i["id"]))
            chosen += [*rng.sample(short, len(short)), *rest][:quota]
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-dataset", type=int, default=40)
    parser.add_argument("--second-round", type=int, default=30,
                        help="items per dataset drawn like the check subsets (0: none)")
    parser.add_argument("--third-round", type=int, default=40,
                        help="more items per dataset drawn the same way, with another seed "
                             "(0: none)")
    parser.add_argument("--rest", action=argparse.BooleanOptionalAction, default=True,
                        help="round 4: every tuning item the rounds before did not draw")
    parser.add_argument("--check", action="store_true",
                        help="verify the file instead of writing it")
    args = parser.parse_args()
    items = build(args.per_dataset)
    if args.second_round:
        items += later_round(items, args.second_round, "round2")
    if args.third_round:
        items += later_round(items, args.third_round, "round3")
    if args.rest:
        items += later_round(items, REST, "round4")
    text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is not what make_tuning.py writes; run it again", file=sys.stderr)
            return 1
        print(f"{OUT} is up to date ({len(items)} items)")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {len(items)} tuning items to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
