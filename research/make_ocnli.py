"""Write the Chinese gold drawn from OCNLI (issue 33): the tuning / check split of
``gold/external/ocnli.dev.jsonl`` grouped by premise, a seeded label-balanced draw from each
part, and a Traditional-script copy of each draw made with OpenCC (``s2twp``).

    python research/make_ocnli.py [--check]

* ``gold/ocnli_check.jsonl`` / ``gold/ocnli_check.zh-tw.jsonl``: ``PER_LABEL`` pairs per label
  from the *check* part (Simplified as upstream; Traditional: dataset ``ocnli_tw``).
* ``research/ocnli_tuning.jsonl`` / ``research/ocnli_tuning.zh-tw.jsonl``: the same draw from
  the *tuning* part, for choosing how the judge reads Chinese.
* ``gold/ocnli_confirm.jsonl`` / ``gold/ocnli_confirm.zh-tw.jsonl``: a second draw from the
  *check* part (issue 49, session 6), made after the check draw had been read, to confirm the
  rule for a head per language stated beforehand in research/README.md: every pair of the
  check part outside the check draw whose premise is in neither earlier draw, label-balanced
  (as many per label as the rarest label has, ``CONFIRM_SEED``).
* ``gold/ocnli.manifest.json``: the split rule, the seeds, the counts, OpenCC's version.

The split is the external sets' rule (:func:`research.make_subset.part_of`, 50% check by a
salted hash of the group), the group being the premise (``prem_id``, the id's middle part),
so pairs sharing a premise never sit on both sides. OCNLI is CC BY-NC 2.0: it is used to
*measure* and for research only; nothing fitted on it ships (gold/external/README.md).

The Traditional copy converts the pair's text (premise, hypothesis) and nothing else: each
item keeps its group and local id under the dataset ``ocnli_tw`` (``ocnli_tw:<group>:<n>``)
and its source ids (``premise:<group>``), so the two scripts can be judged into one store and
compared pair by pair. OpenCC converts phrases, so a few texts change length (16 of the 3,576
texts, e.g. ``U盘`` -> ``隨身碟``) and a few are converted wrongly (``境内存在`` ->
``境記憶體在``): machine-converted text with the same human labels.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from make_subset import (  # noqa: E402
    CHECK_PERCENT,
    SPLIT_SALT,
    group_of,
    part_of,
    write_or_check,
)

SOURCE = ROOT.parent / "gold" / "external" / "ocnli.dev.jsonl"
SEED = 20261203
CONFIRM_SEED = 20261206
PER_LABEL = 100
LABELS = ("supported", "contradicted", "not_in_source")
OPENCC_CONFIG = "s2twp"


def read() -> list[dict[str, Any]]:
    with open(SOURCE, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def converter() -> tuple[Any, str]:
    """OpenCC's converter for :data:`OPENCC_CONFIG` and OpenCC's version."""
    try:
        import opencc
    except ImportError as exc:  # a dev dependency: pip install -e '.[dev]'
        raise SystemExit("research/make_ocnli.py needs OpenCC: pip install opencc") from exc
    return opencc.OpenCC(OPENCC_CONFIG), getattr(opencc, "__version__", "?")


def traditional(item: dict[str, Any], cc: Any) -> dict[str, Any]:
    """The item in Traditional script (zh-TW phrases): text converted, ids kept but the
    dataset's."""
    _, group, local = item["id"].split(":", 2)
    out = dict(item, id=f"ocnli_tw:{group}:{local}", dataset="ocnli_tw",
               claim=cc.convert(item["claim"]), answer=cc.convert(item["answer"]))
    out["sources"] = [dict(s, text=cc.convert(s["text"])) for s in item["sources"]]
    return out


def draw(items: list[dict[str, Any]], part: str, seed: int) -> list[dict[str, Any]]:
    """``PER_LABEL`` items per label of ``part``, seeded, in file order."""
    rng = random.Random(f"{seed}:{part}")
    chosen: set[str] = set()
    for label in LABELS:
        pool = [i["id"] for i in items if i["label"] == label
                and part_of("ocnli", group_of(i["id"])) == part]
        chosen.update(rng.sample(pool, min(PER_LABEL, len(pool))))
    return [i for i in items if i["id"] in chosen]


def confirm_draw(items: list[dict[str, Any]], check: list[dict[str, Any]],
                 seed: int) -> list[dict[str, Any]]:
    """The confirming draw: check-part pairs whose premise the check draw does not hold,
    the same number per label (the rarest label's count), seeded, in file order."""
    taken = {group_of(i["id"]) for i in check}
    rest = [i for i in items if part_of("ocnli", group_of(i["id"])) == "check"
            and group_of(i["id"]) not in taken]
    per_label = min(sum(i["label"] == label for i in rest) for label in LABELS)
    rng = random.Random(f"{seed}:confirm")
    chosen: set[str] = set()
    for label in LABELS:
        chosen.update(rng.sample([i["id"] for i in rest if i["label"] == label], per_label))
    return [i for i in items if i["id"] in chosen]


def render() -> dict[Path, str]:
    items = read()
    cc, opencc_version = converter()
    parts = {part: [i for i in items if part_of("ocnli", group_of(i["id"])) == part]
             for part in ("tuning", "check")}
    out: dict[Path, str] = {}
    manifest: dict[str, Any] = {
        "script": "research/make_ocnli.py", "source": "gold/external/ocnli.dev.jsonl",
        "licence": "CC BY-NC 2.0 (measure and research only; nothing fitted on it ships)",
        "split": {"salt": SPLIT_SALT, "check_percent": CHECK_PERCENT,
                  "group": "the premise (id.split(':')[1])"},
        "seed": SEED, "per_label": PER_LABEL,
        "traditional": {"converter": f"OpenCC {OPENCC_CONFIG}",
                        "opencc_version": opencc_version},
        "parts": {}, "files": {},
    }
    targets = {"check": ROOT.parent / "gold" / "ocnli_check",
               "tuning": ROOT / "ocnli_tuning"}
    draws = {part: draw(items, part, SEED) for part in parts}
    draws["confirm"] = confirm_draw(items, draws["check"], CONFIRM_SEED)
    manifest["confirm"] = {
        "seed": CONFIRM_SEED, "part": "check",
        "rule": "check-part pairs whose premise is not in the check draw, the rarest label's "
                "count per label; made 2026-12-06, after the check draw was read",
        "per_label": len(draws["confirm"]) // len(LABELS)}
    targets["confirm"] = ROOT.parent / "gold" / "ocnli_confirm"
    for part, chosen in draws.items():
        rows = parts.get(part, [])
        if rows:
            manifest["parts"][part] = {
                "pairs": len(rows), "premises": len({group_of(i["id"]) for i in rows}),
                "labels": {label: sum(i["label"] == label for i in rows) for label in LABELS}}
        zh_tw = [traditional(i, cc) for i in chosen]
        base = targets[part]
        for path, rows_out in ((base.with_suffix(".jsonl"), chosen),
                               (base.with_suffix(".zh-tw.jsonl"), zh_tw)):
            out[path] = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in rows_out)
            manifest["files"][str(path.relative_to(ROOT.parent))] = {
                "part": "check" if part == "confirm" else part, "items": len(rows_out),
                "labels": {label: sum(i["label"] == label for i in rows_out)
                           for label in LABELS}}
    out[ROOT.parent / "gold" / "ocnli.manifest.json"] = json.dumps(
        manifest, indent=1, ensure_ascii=False) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    return write_or_check(argv, __doc__, render, "OCNLI split and draws are up to date")


if __name__ == "__main__":
    sys.exit(main())
