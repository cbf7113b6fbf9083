"""Write ``gold/tuning_subset.jsonl``: a seeded, label-balanced sample of the *tuning* part
of the external dev sets (the same split rule as ``make_subset.py``), for choosing judge
prompts and policies. Figures that are reported come from ``eval_subset.jsonl`` (the
check part) only; nothing here is ever reported as quality.

    python gold/make_tuning.py [--per-dataset 12]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-dataset", type=int, default=12)
    args = parser.parse_args()
    items = build(args.per_dataset)
    with open(OUT, "w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"wrote {len(items)} tuning items to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
