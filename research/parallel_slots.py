"""Does decoding several answers at once on the embedded runtime's slots change what the
judge says, and what does it save (issue 36)? The same answers are judged end to end with
the default config on one slot, one answer at a time (every output a function of its prompt),
and on N slots with N answers at a time (``CLAIM_JUDGE_SLOTS=N``, ``concurrency = N``: the
splits of different answers decoded together); the claims of each answer, the labels of the
claims both runs found, the seconds and the peak RSS are compared.

    python research/parallel_slots.py [--slots 2,3] [--factcheck-answers 10]
        [--output research/reports/parallel_slots.json]

Inputs: ``make run``'s sample and the first distinct Factcheck-GPT answers (long, none
atomic: every one is split), as ``bench/end_to_end.py`` builds them; each run in a fresh
process on a fresh store (that script's child).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.end_to_end import SAMPLE, factcheck_answers, run_child  # noqa: E402
from judge.store import Store  # noqa: E402


def judged(inputs: Path, slots: int, db: Path) -> dict[str, Any]:
    """Judge ``inputs`` with the default config on ``slots`` slots in a fresh process."""
    figures = run_child(inputs, {"concurrency": slots}, db,
                        {"CLAIM_JUDGE_SLOTS": str(slots)}, f"{slots} slots")
    store = Store.open(db)
    figures["claims_by_answer"] = by_answer(store)
    figures["fingerprints"] = sorted({row["system_fingerprint"] or "" for row in
                                      store.db["calls"].rows_where("purpose = 'split'")})
    store.close()
    return figures


def by_answer(store: Store) -> dict[str, list[list[str]]]:
    """answer id -> [claim, label] in the order of the answer."""
    out: dict[str, list[list[str]]] = {}
    for row in store.verdict_rows():
        out.setdefault(row["answer_id"], []).append([row["claim"], row["label"]])
    return out


def compare(one: dict[str, list[list[str]]], many: dict[str, list[list[str]]]
            ) -> dict[str, Any]:
    """How the answers' claims and labels on several slots differ from one slot's."""
    same_split = changed_labels = matched = 0
    differing: list[dict[str, Any]] = []
    for answer, claims in one.items():
        other = many.get(answer, [])
        if [c for c, _ in claims] == [c for c, _ in other]:
            same_split += 1
        else:
            differing.append({"answer": answer, "one_slot": [c for c, _ in claims],
                              "several": [c for c, _ in other]})
        labels = {claim: label for claim, label in other}
        for claim, label in claims:
            if claim in labels:
                matched += 1
                changed_labels += labels[claim] != label
    return {"answers": len(one), "same_claims": same_split,
            "claims_one_slot": sum(len(c) for c in one.values()),
            "claims_several": sum(len(c) for c in many.values()),
            "claims_in_both": matched, "labels_changed_among_them": changed_labels,
            "differing_answers": differing}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", default="2", help="comma-separated slot counts, e.g. 2,3")
    parser.add_argument("--factcheck-answers", type=int, default=10,
                        help="how many Factcheck-GPT answers (default 10)")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "research" / "reports" / "parallel_slots.json")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.slots.split(",") if n]
    sets = {
        "sample": [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()
                   if line.strip()],
        "factcheck": factcheck_answers(args.factcheck_answers),
    }
    report: dict[str, Any] = {"cpus": os.cpu_count(), "load": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory() as folder:
        for name, records in sets.items():
            inputs = Path(folder) / f"{name}.jsonl"
            inputs.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                      for r in records), encoding="utf-8")
            runs = {n: judged(inputs, n, Path(folder) / f"{name}-{n}.db") for n in [1, *counts]}
            report[name] = {}
            for n, run in runs.items():
                claims = max(run["claims"], 1)
                row = {k: run[k] for k in ("answers", "claims", "wall_s", "steps",
                                           "peak_rss_mib", "fingerprints")}
                row["s_a_claim"] = round(run["wall_s"] / claims, 2)
                if n > 1:
                    row["against_one_slot"] = compare(runs[1]["claims_by_answer"],
                                                      run["claims_by_answer"])
                report[name][f"{n} slots"] = row
                against = row.get("against_one_slot") or {}
                print(f"{name}, {n} slot(s): {run['answers']} answers, {run['claims']} claims, "
                      f"{run['wall_s']:.0f} s = {row['s_a_claim']:.2f} s a claim, peak RSS "
                      f"{run['peak_rss_mib']} MiB"
                      + (f"; the same claims as one slot in {against['same_claims']} of "
                         f"{against['answers']} answers, labels changed on "
                         f"{against['labels_changed_among_them']} of the "
                         f"{against['claims_in_both']} claims both found" if against else ""),
                      flush=True)
    args.output.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
