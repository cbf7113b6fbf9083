"""End to end on the embedded judge, split included (issue 36): answers and claims a minute,
the model time of each step, and the peak RSS, for the default config (in a first process,
which evaluates the split's instructions and saves their state, and in a later one, which
restores it: judge.models.prefix_files) beside the same config without its two speed settings
(``reuse_instructions``, ``split_atomic``), and with ``--slots N`` the default with N answers at
once decoded together (``CLAIM_JUDGE_SLOTS=N``, ``concurrency = N``).

    python bench/end_to_end.py [--inputs sample,factcheck] [--factcheck-answers 100]
        [--slots N] [--no-baseline] [--json FILE]

(``make bench BENCH_ARGS=--end-to-end`` runs it after the other sections.) Inputs: ``make
run``'s sample (``gold/samples/answers.jsonl``, 9 answers) and the first distinct answers of
Factcheck-GPT's dev file, each with the evidence passages of its claims as sources. Each
setting runs in a fresh process (the model loaded once, its load time reported apart), on a
fresh store, so the peak RSS is that run's alone. A step's model time is the runtime's own
(generation for the split, the forward pass for the probe), without the wait for it. Times
depend on what else runs on the machine: run it on an idle one, and read the ratios first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "gold" / "samples" / "answers.jsonl"
FACTCHECK = ROOT / "gold" / "external" / "factcheck_gpt.dev.jsonl"
#: setting: (config overrides, environment)
#: the instructions' states (judge.models.prefix_files) go to a fresh folder of the run, named
#: in place of ``{states}``: the first process evaluates the instructions, saves them and
#: records their sha256 in its store; the next ones restore them, their fresh stores given
#: that record (what a user's second run on the same store gets)
STATES = "CLAIM_JUDGE_PREFIX_FILES"
SETTINGS: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "default, first process": ({}, {STATES: "{states}"}),
    "default": ({}, {STATES: "{states}"}),
    "without the speed settings": ({"reuse_instructions": False, "split_atomic": False},
                                   {STATES: "0"}),
}


def factcheck_answers(limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` distinct Factcheck-GPT answers, sources = their claims' passages
    (a source id over the records' limit, a URL, is shortened as ``judge eval-gold`` does)."""
    sys.path.insert(0, str(ROOT))
    from judge.evaluation.matching import short_source_id

    answers: dict[str, dict[str, Any]] = {}
    for line in FACTCHECK.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        key = item["id"].split(":")[1].split("s")[0]
        if key not in answers:
            if len(answers) >= limit:
                continue
            answers[key] = {"id": f"fc-{key}", "question": item["question"],
                            "answer": item["answer"], "sources": []}
        sources = answers[key]["sources"]
        for source in item["sources"]:
            short = short_source_id(source["id"], set())
            if short not in {s["id"] for s in sources}:
                sources.append({**source, "id": short})
    return list(answers.values())


def child(inputs: Path, overrides: dict[str, Any], db: Path) -> dict[str, Any]:
    """One run in this process: load the model, judge ``inputs``, read the figures."""
    sys.path.insert(0, str(ROOT))
    from judge.api import judge_file
    from judge.config import JudgeConfig
    from judge.models import embedded, runtime
    from judge.store import Store

    config = JudgeConfig.load().model_copy(update=overrides)
    # the runtime's own seconds: the time some request of the kind ran (requests decoded
    # together on several slots count once)
    busy: dict[str, float] = {"chat": 0.0, "embed": 0.0}
    running: dict[str, list[float]] = {"chat": [0, 0.0], "embed": [0, 0.0]}
    lock = threading.Lock()

    def timed(kind: str, method: Any) -> Any:
        def run(self: Any, *args: Any) -> Any:
            with lock:
                if running[kind][0] == 0:
                    running[kind][1] = time.perf_counter()
                running[kind][0] += 1
            try:
                return method(self, *args)
            finally:
                with lock:
                    running[kind][0] -= 1
                    if running[kind][0] == 0:
                        busy[kind] += time.perf_counter() - running[kind][1]
        return run

    runtime.Runtime.chat = timed("chat", runtime.Runtime.chat)  # type: ignore[method-assign]
    runtime.Runtime.embed = timed("embed", runtime.Runtime.embed)  # type: ignore[method-assign]
    started = time.perf_counter()
    # in the order the product loads them (judge.models.preflight first loads the cut
    # runtime), which decides the whole model's context (judge.models.embedded.SPLIT_N_CTX)
    embedded.load(layers=config.probe_layers)
    embedded.load()
    load_s = time.perf_counter() - started
    store = Store.open(db)
    started = time.perf_counter()
    summary = judge_file(inputs, config=config, db=store).summary
    wall = time.perf_counter() - started
    calls = {row["purpose"]: row["n"] for row in
             store.db.query("select purpose, count(*) n from calls group by purpose")}
    # the runtime's own time (a call's latency also holds its wait for the runtime)
    steps = {purpose: {"calls": n, "model_s": round(busy["embed" if purpose == "probe"
                                                         else "chat"], 1)}
             for purpose, n in calls.items()}
    store.close()
    return {"answers": summary.answers, "claims": summary.claims, "wall_s": round(wall, 1),
            "load_s": round(load_s, 1), "steps": steps,
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def run_child(inputs: Path, overrides: dict[str, Any], db: Path, env: dict[str, str],
              what: str) -> dict[str, Any]:
    """Judge ``inputs`` in a fresh process (:func:`child`) with ``overrides`` and ``env`` into
    ``db``; its figures. ``what`` names the run in the error when it fails."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(inputs), json.dumps(overrides), str(db)],
        capture_output=True, text=True, check=False, env={**os.environ, **env})
    if done.returncode != 0:
        raise SystemExit(f"{what}: the run failed:\n{done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def seed_states(db: Path, recorded: Path) -> None:
    """Give the new store ``db`` the instructions' states the store ``recorded`` holds: a
    state is restored only when the run's store recorded it (judge.models.prefix_files)."""
    sys.path.insert(0, str(ROOT))
    from judge.store import Store

    source, target = Store.open(recorded), Store.open(db)
    target.db["prefix_states"].insert_all(source.db["prefix_states"].rows, replace=True)
    source.close()
    target.close()


def run(name: str, records: list[dict[str, Any]], tmp: Path,
        settings: dict[str, tuple[dict[str, Any], dict[str, str]]]) -> dict[str, Any]:
    inputs = tmp / f"{name}.jsonl"
    inputs.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                      encoding="utf-8")
    out: dict[str, Any] = {}
    first: Path | None = None  # the store of the first process that saved the states
    for setting, (overrides, env) in settings.items():
        db = tmp / f"{name}-{len(out)}.db"
        states = any("{states}" in v for v in env.values())
        if states and first is not None:
            seed_states(db, first)
        env = {k: v.replace("{states}", str(tmp / f"{name}-states")) for k, v in env.items()}
        got = run_child(inputs, overrides, db, env, f"{name}, {setting}")
        if states and first is None:
            first = db
        out[setting] = got
        claims = max(got["claims"], 1)
        model = sum(s["model_s"] for s in got["steps"].values())
        split = got["steps"].get("split", {"calls": 0, "model_s": 0.0})
        probe = got["steps"].get("probe", {"calls": 0, "model_s": 0.0})
        print(f"{name}, {setting}: {got['answers']} answers, {got['claims']} claims in "
              f"{got['wall_s']:.0f} s = {got['wall_s'] / claims:.2f} s a claim end to end "
              f"({60 * got['answers'] / max(got['wall_s'], 1e-9):.1f} answers, "
              f"{60 * got['claims'] / max(got['wall_s'], 1e-9):.1f} claims a minute; model "
              f"load {got['load_s']:.0f} s apart); split {split['calls']} calls "
              f"{split['model_s']:.0f} s ({split['model_s'] / max(model, 1e-9):.0%} of the "
              f"model time), probe {probe['calls']} calls {probe['model_s']:.0f} s = "
              f"{probe['model_s'] / max(probe['calls'], 1):.2f} s a claim; peak RSS "
              f"{got['peak_rss_mib']} MiB", flush=True)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", default="sample,factcheck",
                        help="comma-separated, of sample, factcheck")
    parser.add_argument("--factcheck-answers", type=int, default=100,
                        help="how many Factcheck-GPT answers (default 100)")
    parser.add_argument("--slots", type=int, default=0,
                        help="also run the default with N answers at once on N slots")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the run without the speed settings (halves the time)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        inputs, overrides, db = args.child
        print(json.dumps(child(Path(inputs), json.loads(overrides), Path(db))))
        return {}
    print(f"\n== end to end on the embedded judge ({os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}) ==")
    figures: dict[str, Any] = {}
    settings = dict(SETTINGS)
    if args.no_baseline:
        settings.pop("without the speed settings")
    if args.slots > 1:
        settings[f"default, {args.slots} slots"] = (
            {"concurrency": args.slots},
            {"CLAIM_JUDGE_SLOTS": str(args.slots), STATES: "{states}"})
    with tempfile.TemporaryDirectory() as folder:
        for name in [s for s in args.inputs.split(",") if s]:
            if name == "sample":
                records = [json.loads(line) for line in
                           SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
            elif name == "factcheck":
                records = factcheck_answers(args.factcheck_answers)
            else:
                raise SystemExit(f"unknown input {name!r}: sample or factcheck")
            figures[name] = run(name, records, Path(folder), settings)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
