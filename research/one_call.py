"""Does ``one_call`` (split and judge a free-text answer in one call) decide as well as a split
call followed by a verify call? Measured with the only model reachable here, the embedded 1.5B
model under the ``batch`` strategy (not its default profile, which asks ``scores`` questions
that ``one_call`` does not apply to), so the figures say how the two layouts compare for a
small model, not how a strong model would do.

The gold items hold one labelled claim each. Items whose answer is a single sentence (as the
program segments it) make the comparison clean: the answer's verdicts are that sentence's
claims, and the answer counts as ``supported`` when every one of them is (a ``judge_error`` or
any other label counts as not supported). A seeded, label-balanced sample of
``gold/eval_xl.jsonl`` (half supported, half not):

    python research/one_call.py [--answers 30] [--work DIR]
        [--output research/reports/one_call.json]

Both layouts judge the same answers (one store each in ``--work``, so an interrupted run
resumes); the report gives each layout's balanced accuracy on supported / not supported
(bootstrap interval), its seconds and calls per answer, its judge errors, and every answer
whose outcome differs between the two, with its gold label.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from calibration.stats import balanced_accuracy  # noqa: E402
from judge.api import judge_answers  # noqa: E402
from judge.config import load_config  # noqa: E402
from judge.records import AnswerRecord  # noqa: E402
from judge.split.claims import Splitter  # noqa: E402
from judge.store import Store  # noqa: E402

GOLD = ROOT.parent / "gold" / "eval_xl.jsonl"
SEED = "one-call-1"
#: the longest sources (characters in all) an item may have: the embedded model reads about
#: 66 tokens a second, so long sources would make each answer take minutes
MAX_SOURCE_CHARS = 2500


def sample(gold: Path, answers: int) -> list[dict[str, Any]]:
    """A seeded, label-balanced sample of single-sentence gold answers, as answer records
    with the gold label under ``gold``."""
    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines()]
    rows.sort(key=lambda r: hashlib.sha256(f"{SEED}:{r['id']}".encode()).hexdigest())
    picked: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for row in rows:
        record = {k: row[k] for k in ("id", "question", "answer", "sources", "generator")
                  if row.get(k) is not None}
        parsed = AnswerRecord.model_validate(record)
        if (len(Splitter.sentences(parsed)[0]) != 1
                or sum(len(s.content) for s in parsed.sources) > MAX_SOURCE_CHARS):
            continue
        side = picked[row["label"] == "supported"]
        if len(side) < answers // 2:
            side.append({**record, "gold": row["label"]})
    return [r for pair in zip(picked[True], picked[False], strict=False) for r in pair]


def judge(records: list[dict[str, Any]], one_call: bool, work: Path) -> dict[str, Any]:
    name = "one_call" if one_call else "two_calls"
    store = Store.open(work / f"{name}.db")
    config = load_config(None, strategy="batch", one_call=one_call)
    started = time.perf_counter()
    results = judge_answers(
        [{k: v for k, v in r.items() if k != "gold"} for r in records], config=config,
        db=store, progress=lambda done, total: print(f"\r{name}: {done}/{total} answers",
                                                     end="", flush=True))
    wall = time.perf_counter() - started
    print()
    store.close()
    return {
        "outcomes": [outcome([v.label for v in r.verdicts]) for r in results],
        "labels": [[v.label for v in r.verdicts] for r in results],
        "claims": [[v.claim for v in r.verdicts] for r in results],
        "judge_errors": sum(v.label == "judge_error" for r in results for v in r.verdicts),
        "calls": results.summary.model_calls,
        "wall_s": round(wall, 1),
    }


def outcome(labels: list[str]) -> str:
    """``supported`` when the answer has verdicts and every one is supported."""
    return "supported" if labels and all(label == "supported" for label in labels) else "not"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=30)
    parser.add_argument("--work", type=Path, default=Path("/tmp/claim-judge-one-call"))
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "one_call.json")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    records = sample(GOLD, args.answers)
    gold = ["supported" if r["gold"] == "supported" else "not" for r in records]
    print(f"{len(records)} single-sentence answers ({gold.count('supported')} supported)")
    runs = {name: judge(records, name == "one_call", args.work)
            for name in ("two_calls", "one_call")}
    differ = [
        {"answer": r["id"], "gold": r["gold"], "two_calls": a, "one_call": b,
         "two_calls_claims": ca, "one_call_claims": cb}
        for r, a, b, ca, cb in zip(records, runs["two_calls"]["labels"],
                                   runs["one_call"]["labels"], runs["two_calls"]["claims"],
                                   runs["one_call"]["claims"], strict=True)
        if outcome(a) != outcome(b)
    ]
    report = {
        "command": "python research/one_call.py " + " ".join(sys.argv[1:]),
        "model": load_config(None, strategy="batch").model,
        "answers": len(records),
        "layouts": {
            name: {
                "balanced_accuracy": balanced_accuracy(
                    gold, run["outcomes"], labels=("supported", "not")).model_dump(),
                "judge_errors": run["judge_errors"],
                "calls_per_answer": round(run["calls"] / len(records), 2),
                "s_per_answer": round(run["wall_s"] / len(records), 1),
            }
            for name, run in runs.items()
        },
        "differ": differ,
        "differ_right": {name: sum(outcome(d[name]) == ("supported" if d["gold"] == "supported"
                                                        else "not") for d in differ)
                         for name in ("two_calls", "one_call")},
    }
    args.output.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    for name, block in report["layouts"].items():
        ba = block["balanced_accuracy"]
        print(f"{name}: balanced accuracy {ba['value']:.3f} [{ba['ci_low']:.3f}, "
              f"{ba['ci_high']:.3f}], {block['calls_per_answer']} calls and "
              f"{block['s_per_answer']} s per answer, {block['judge_errors']} judge errors")
    print(f"{len(differ)} answers differ; right among them: {report['differ_right']}")
    print(f"report: {args.output}")


if __name__ == "__main__":
    main()
