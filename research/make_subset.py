"""Deterministic tuning/check split of the external dev sets and the `make eval` subset.

    python research/make_subset.py            # rewrites the outputs below
    python research/make_subset.py --check    # exit 1 if they are not what this script writes

Inputs: ``gold/external/<dataset>.dev.jsonl`` (the dev parts of the external datasets; see
``gold/external/README.md``).
Outputs:

* ``gold/splits.json``: for every external dev set, the ids of its *tuning* part (prompt and
  model work may look at these) and its *check* part (kept for measuring). Rule:
  ``int(sha256(f"{SPLIT_SALT}:{dataset}:{group}").hexdigest()[:8], 16) % 100 < CHECK_PERCENT``
  → check, else tuning; ``group`` is the middle part of the item id ``<dataset>:<group>:<local>``,
  so items of one group (one claim's passages, one dialogue) always fall in the same part.
* ``gold/eval_subset.jsonl``: a seeded, label-balanced subset drawn from the check parts only,
  small enough for the embedded model on 2 CPU cores in about 15 minutes. Per dataset,
  ``PER_DATASET`` items spread evenly over the labels the dataset has; within a label, items
  whose sources total at most ``MAX_SOURCE_CHARS`` characters are drawn at random (seeded);
  when a label has too few of those, the shortest remaining items fill the quota. Items with
  the same claim and source texts as an already chosen item are skipped. Items are copied
  verbatim, plus ``generator`` where the upstream README names the system that wrote the
  answer (so the self-grading ban applies to judges of that family); they are written
  round-robin over (dataset, label) so that any prefix (``--limit``) stays balanced.
* ``gold/eval_subset.manifest.json``: the parameters, per-dataset counts (split sizes,
  eligible and chosen per label, shortfalls) and, per chosen item, why it was chosen.

Short sources bias the subset towards short evidence (the judge reads ~50 tokens/s on CPU);
the manifest says so and the figures are for this subset, not for the datasets as a whole.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "gold"
EXTERNAL = ROOT / "external"
DATASETS = ("factcheck_gpt", "wice", "begin", "dialfact")
LABELS = ("supported", "contradicted", "not_in_source", "not_verifiable")

SPLIT_SALT = "claim-judge/tuning-check/v1"
CHECK_PERCENT = 50
SEED = 20240602
PER_DATASET = 12  # 48 items (make eval): ~7 s per claim for the scores default on 2 cores
#: The larger check subset (``eval_large.jsonl``, ``make eval-large``): the same draw with
#: a larger quota, so it holds the short-source items of the small one and more.
PER_DATASET_LARGE = 40
#: The largest check subset (``eval_xl.jsonl``, ``make eval-xl``): the same draw again, so it
#: holds the large one, and reaches 50 of the 81 contradicted and all 45 not_verifiable items
#: of the check parts, for figures on the rare labels with intervals narrow enough to compare
#: judge versions.
PER_DATASET_XL = 100
#: Every check item (``eval_all.jsonl``, ``make eval-all``): the same draw with no quota left
#: unfilled, so it holds the 358 and the check items no version was ever chosen on.
PER_DATASET_ALL = 10_000
MAX_SOURCE_CHARS = 900

#: Who wrote the answers, where the upstream README says so (``begin``: the system is the
#: first part of the item's local id: gpt2, t5, ctrl, doha).
GENERATOR_NOTE = {
    "factcheck_gpt": "ChatGPT answers (upstream README: '94 ChatGPT answers')",
    "begin": "dialogue systems GPT-2 / T5 / CTRL-Dialog / DoHA, named in the item id",
}


def generator_of(item: dict[str, Any]) -> str | None:
    if item["dataset"] == "factcheck_gpt":
        return "openai/chatgpt"
    if item["dataset"] == "begin":
        return item["id"].split(":")[2].split("-")[0]
    return None


def group_of(item_id: str) -> str:
    parts = item_id.split(":")
    if len(parts) < 3:
        raise ValueError(f"id {item_id!r} is not <dataset>:<group>:<local>")
    return parts[1]


def part_of(dataset: str, group: str) -> str:
    digest = hashlib.sha256(f"{SPLIT_SALT}:{dataset}:{group}".encode()).hexdigest()
    return "check" if int(digest[:8], 16) % 100 < CHECK_PERCENT else "tuning"


def source_chars(item: dict[str, Any]) -> int:
    return sum(len(s.get("text") or json.dumps(s.get("json"))) for s in item["sources"])


def read(dataset: str) -> list[dict[str, Any]]:
    path = EXTERNAL / f"{dataset}.dev.jsonl"
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def quotas(labels: list[str], total: int) -> dict[str, int]:
    base, extra = divmod(total, len(labels))
    return {label: base + (1 if i < extra else 0) for i, label in enumerate(labels)}


def build(per_dataset: int = PER_DATASET
          ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    splits: dict[str, Any] = {"rule": {
        "salt": SPLIT_SALT, "check_percent": CHECK_PERCENT,
        "formula": "int(sha256(f'{salt}:{dataset}:{group}').hexdigest()[:8], 16) % 100 "
                   "< check_percent -> check, else tuning; group = id.split(':')[1]",
    }, "datasets": {}}
    manifest: dict[str, Any] = {
        "script": "research/make_subset.py", "seed": SEED, "per_dataset": per_dataset,
        "max_source_chars": MAX_SOURCE_CHARS, "split": splits["rule"],
        "drawn_from": "the check part of each external dev set",
        "bias": "items with short sources are preferred (judging time grows with source "
                "length); figures describe this subset, not the datasets as a whole",
        "generators": GENERATOR_NOTE, "datasets": {}, "items": [],
    }
    buckets: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for dataset in DATASETS:
        items = read(dataset)
        parts: dict[str, list[str]] = {"tuning": [], "check": []}
        for item in items:
            parts[part_of(dataset, group_of(item["id"]))].append(item["id"])
        splits["datasets"][dataset] = parts
        check = [i for i in items if part_of(dataset, group_of(i["id"])) == "check"]
        labels = [label for label in LABELS if any(i["label"] == label for i in check)]
        quota = quotas(labels, per_dataset)
        info: dict[str, Any] = {"items": len(items), "tuning": len(parts["tuning"]),
                                "check": len(check), "labels": {}}
        seen: set[str] = set()
        for label in labels:
            pool = sorted((i for i in check if i["label"] == label), key=lambda i: i["id"])
            short = [i for i in pool if source_chars(i) <= MAX_SOURCE_CHARS]
            rng = random.Random(f"{SEED}:{dataset}:{label}")
            order = rng.sample(short, len(short))
            rest = sorted((i for i in pool if source_chars(i) > MAX_SOURCE_CHARS),
                          key=lambda i: (source_chars(i), i["id"]))
            chosen: list[dict[str, Any]] = []
            for candidate, why in [*((i, "random among short sources") for i in order),
                                   *((i, "shortest available (too few short ones)")
                                     for i in rest)]:
                if len(chosen) == quota[label]:
                    break
                key = hashlib.sha256(json.dumps(
                    [candidate["claim"], [s.get("text") for s in candidate["sources"]]],
                    ensure_ascii=False).encode()).hexdigest()
                if key in seen:
                    continue
                seen.add(key)
                chosen.append(candidate)
                manifest["items"].append({
                    "id": candidate["id"], "dataset": dataset, "label": label,
                    "source_chars": source_chars(candidate), "why": why,
                })
            buckets[(dataset, label)] = chosen
            info["labels"][label] = {
                "check_items": len(pool), "short_sources": len(short), "quota": quota[label],
                "chosen": len(chosen), "shortfall": quota[label] - len(chosen),
            }
        manifest["datasets"][dataset] = info
    subset: list[dict[str, Any]] = []
    depth = max(len(v) for v in buckets.values())
    for rank in range(depth):
        for dataset in DATASETS:
            for label in LABELS:
                bucket = buckets.get((dataset, label), [])
                if rank < len(bucket):
                    item = dict(bucket[rank])
                    generator = generator_of(item)
                    if generator:
                        item["generator"] = generator
                    subset.append(item)
    manifest["total"] = len(subset)
    order = {item["id"]: n for n, item in enumerate(subset)}
    manifest["items"].sort(key=lambda m: order[m["id"]])
    return splits, subset, manifest


def render() -> dict[Path, str]:
    splits, subset, manifest = build()
    _, large, large_manifest = build(PER_DATASET_LARGE)
    _, xl, xl_manifest = build(PER_DATASET_XL)
    _, everything, all_manifest = build(PER_DATASET_ALL)
    return {
        ROOT / "splits.json": json.dumps(splits, indent=1) + "\n",
        ROOT / "eval_subset.jsonl": _jsonl(subset),
        ROOT / "eval_subset.manifest.json": _pretty(manifest),
        ROOT / "eval_large.jsonl": _jsonl(large),
        ROOT / "eval_large.manifest.json": _pretty(large_manifest),
        ROOT / "eval_xl.jsonl": _jsonl(xl),
        ROOT / "eval_xl.manifest.json": _pretty(xl_manifest),
        ROOT / "eval_all.jsonl": _jsonl(everything),
        ROOT / "eval_all.manifest.json": _pretty(all_manifest),
    }


def _jsonl(items: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)


def _pretty(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def write_or_check(argv: list[str] | None, doc: str,
                   render_outputs: Callable[[], dict[Path, str]], up_to_date: str) -> int:
    """The command line of a script that writes generated files: write them, or with
    ``--check`` verify them (exit 1 naming the stale ones)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="verify the outputs instead of writing them")
    args = parser.parse_args(argv)
    outputs = render_outputs()
    if args.check:
        stale = [str(p) for p, text in outputs.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != text]
        if stale:
            print("out of date: " + ", ".join(stale), file=sys.stderr)
            return 1
        print(up_to_date)
        return 0
    for path, text in outputs.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT.parent)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return write_or_check(argv, __doc__, render, "gold subset and splits are up to date")


if __name__ == "__main__":
    sys.exit(main())
