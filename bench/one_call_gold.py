"""Does the hosted default (one call per free-text answer, issue 50) lose what the separate split
and verify calls check? Measured on the gold's answers with the mock as a strong-model stand-in
(``make bench``, section ``gold``; or alone: ``python bench/one_call_gold.py [--limit N]``).

There is no strong model here. The stand-in is the peers' loopback mock with this repo's
responder (``bench/responder_cj.py``), which answers the split, the verify call and the one
call by the same rules (a claim per sentence, joined after an abbreviation; ``supported`` with
a 12-word quote of the best-matching source sentence). So what is compared is everything the
*program* does with the two layouts, not a model's judgement: whether the one-call path
reaches the same claims (texts, the citations each keeps), the same coverage (sentences
skipped or left uncovered), the same deterministic checks (cited source exists, quote found
and where, numbers) and the same labels, and what each costs in calls and prompt tokens. A
difference would be something the one-call path loses by construction; agreement says
nothing about how a real model splits and judges in one call instead of two (`judge drift`
between the two judge versions on a team's own answers says that).

Inputs: every distinct free-text answer of ``gold/eval_xl.jsonl`` (the check subset: an
answer with the sources its gold claims were judged against; 355 answers) and ``make run``'s
sample answers (``gold/samples/answers.jsonl``, with citation markers), judged as free text
(their gold claims left out) by the library's two-call default and by the hosted default.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

from peermock import Mock  # noqa: E402

import bench  # noqa: E402

GOLD = ROOT / "gold" / "eval_xl.jsonl"
SAMPLE = ROOT / "gold" / "samples" / "answers.jsonl"


def gold_answers(limit: int | None = None) -> list[dict[str, Any]]:
    """The distinct free-text answers of the gold (with their sources) and the sample's."""
    from judge.evaluation.matching import short_source_id

    seen: dict[str, dict[str, Any]] = {}
    for line in GOLD.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if not item.get("answer"):
            continue
        key = json.dumps([item["answer"], item["sources"]], sort_keys=True)
        if key in seen:
            continue
        taken: set[str] = set()
        sources = []
        for source in item["sources"]:
            short = short_source_id(source["id"], taken)
            taken.add(short)
            sources.append({**source, "id": short})
        seen[key] = {"id": f"gold-{len(seen)}", "question": item.get("question"),
                     "answer": item["answer"], "sources": sources}
    records = list(seen.values())[:limit] if limit else list(seen.values())
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record.pop("claims", None)  # judged as free text
        record.pop("generator", None)
        record.pop("expected_status", None)
        records.append(record)
    return [{k: v for k, v in r.items() if v is not None} for r in records]


def outcome(db: Path) -> dict[str, dict[str, Any]]:
    """Per answer: its claims (text, citations, origin), the skipped sentences, each claim's
    label, checks and evidence found, as stored."""
    from judge.store import Store

    store = Store.open(db)
    try:
        out: dict[str, dict[str, Any]] = {}
        for row in store.verdict_rows():
            answer = out.setdefault(row["answer_id"], {"claims": [], "labels": [],
                                                       "checks": [], "skipped": []})
            answer["claims"].append((row["claim"], sorted(c["source"] if isinstance(c, dict)
                                                          else c for c in row["citations"]),
                                     row["origin"]))
            answer["labels"].append(row["label"])
            answer["checks"].append(sorted((c["name"], c["target"], c["outcome"])
                                           for c in row["checks"]))
        for answer_id, answer in out.items():
            answer["skipped"] = sorted((s["sentence"], s["reason"])
                                       for s in store.split_skips(answer_id))
        return out
    finally:
        store.close()


def spaced(claims: Any) -> Any:
    """Claims with each text's runs of spaces (any Unicode space) read as one: the two-call
    stand-in's split writes every claim out with single spaces, the one call leaves a claim
    that is its whole sentence to the program, which keeps the sentence as written."""
    if not claims:
        return claims
    return [(" ".join(text.split()), cites, origin) for text, cites, origin in claims]


def bench_gold(mock: Mock, tmp: Path, figures: dict[str, Any], limit: int | None = None
               ) -> None:
    from judge.config import HOSTED_PROFILE

    records = gold_answers(limit)
    path = bench.write_jsonl(records, tmp, "gold-free.jsonl")
    print(f"\n== the hosted default against two calls on {len(records)} gold answers, free "
          "text, the mock as a strong-model stand-in ==")
    runs = {"two calls (split v2 + verify v2)": {}, "hosted default (one call)":
            dict(HOSTED_PROFILE)}
    got: dict[str, dict[str, dict[str, Any]]] = {}
    print(f"{'judge':<34}{'calls/ans':>10}{'prompt/ans':>11}{'claims':>8}{'errors':>8}")
    for k, (name, settings) in enumerate(runs.items()):
        db = tmp / f"gold{k}.db"
        r = bench.run(mock, path, db, f"gold{k}", **settings)
        got[name] = outcome(db)
        print(f"{name:<34}{bench.per(r['calls'], r['answers']):>10.2f}"
              f"{bench.per(r['prompt'], r['answers']):>11.0f}{r['claims']:>8}"
              f"{r['judge_errors']:>8}")
        figures.setdefault("gold", {})[name] = r
    two, one = got.values()
    same = {aspect: sum(1 for a in two if one.get(a, {}).get(aspect) == two[a][aspect])
            for aspect in ("claims", "skipped", "checks", "labels")}
    spacing = sum(1 for a in two if one.get(a, {}).get("claims") != two[a]["claims"]
                  and spaced(one.get(a, {}).get("claims")) == spaced(two[a]["claims"]))
    total = len(two)
    print(f"answers alike, of {total}: claims (text, citations, origin) {same['claims']} "
          f"(and {spacing} whose claims differ only in the spaces inside a claim's text), "
          f"skipped sentences {same['skipped']}, checks {same['checks']}, labels "
          f"{same['labels']}")
    cited = sum(1 for a in two.values() for _, cites, _ in a["claims"] if cites)
    print(f"claims that cite a source (two calls): {cited}; failed checks: "
          f"{sum(o == 'fail' for a in two.values() for c in a['checks'] for *_, o in c)} "
          f"(two calls), "
          f"{sum(o == 'fail' for a in one.values() for c in a['checks'] for *_, o in c)} "
          "(one call)")
    for answer_id in [a for a in two if one.get(a) != two[a]][:5]:
        print(f"  differs: {answer_id}: {json.dumps(two[answer_id])[:300]} | "
              f"{json.dumps(one.get(answer_id))[:300]}")
    figures.setdefault("gold", {})["alike"] = {**same, "answers": total, "spacing": spacing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, help="the first N gold answers only")
    args = parser.parse_args()
    shared = bench.shared_bench()
    if shared is None:
        raise SystemExit("shared/bench not found (set CLAIM_JUDGE_BENCH)")
    sys.path.append(str(shared / "peers"))
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        with Mock(shared / "peers", tmp / "mock.jsonl") as mock:
            bench_gold(mock, tmp, figures, args.limit)


if __name__ == "__main__":
    main()
