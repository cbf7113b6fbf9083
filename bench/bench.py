"""Benchmarks (``make bench``): print figures side by side, assert nothing about time.

On the 20 peer answers (``shared/bench/peer_inputs.jsonl``, the inputs RAGAS 0.4.3 and
DeepEval 4.3.1 were measured on) against the shared OpenAI-compatible mock
(``shared/bench/peers/mock_server.py`` with ``bench/responder_cj.py``), which counts every call
and its cl100k tokens (chat framing and the JSON schema sent included):

1. ``tokens``: model calls, prompt and completion tokens per answer and per claim, free text
   (split and verify, one call, the hosted default) and with given claims, next to the
   recorded RAGAS / DeepEval figures; harness overhead with an instant mock (this process's
   CPU time per answer and per claim; the mock runs in its own process); the 0-call re-run.
   ``cache`` (:mod:`cache_share`): per strategy, the share of prompt tokens a provider's
   prompt cache (1,024-token minimum) would serve. ``gold`` (:mod:`one_call_gold`): the
   hosted default (one call) against two calls on the gold's free-text answers, the mock as
   a strong-model stand-in: claims, coverage, checks and labels alike, calls and tokens.
2. ``throughput``: 200 answers at 200 ms per call, concurrency 1 / 8 / 32 (``--levels``),
   against the bound ``concurrency / (calls per answer x 0.2 s)``, after one answer judged
   first (timed apart: what the first run of a process pays once, litellm's import above all).
3. ``scale``: CPU time per answer from 20 to 1,000 answers (instant mock): flat or not.
4. ``ray``: the Ray executor with 1 and 2 workers (200 answers at 200 ms).
5. ``embedded``: the embedded model's seconds per claim, ``probe`` (the default) beside
   ``scores``, and peak memory (``--embedded``; slow).
6. ``end_to_end``: answers judged end to end, split included, on ``make run``'s sample and
   on 100 Factcheck-GPT answers, with and without the speed settings, with each step's model
   time and the peak RSS (``--end-to-end``, :mod:`end_to_end`; very slow).

First of all, ``judge --help`` wall time (the target is under 0.5 s: the CLI imports no
store, scipy or litellm to start), median of 5 runs in fresh processes; then the CPU seconds
to prepare a 250k to 2M-character source (sentences, passages; target under 10 s for 2M on
one core, growing linearly); then ``judge fit`` on
100 reviewed claims (70 fitted, 30 held out; the target is under a minute on 2 cores), with
and without the learning curve, from a store the scripted model judged.

Times depend on the machine and on what else runs on it; ratios measured in one run hold
better. ``--sections tokens,scale`` picks sections; ``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench-mock")  # never leaves loopback

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(BENCH)]  # this checkout's judge, not an installed one

from peermock import Mock  # noqa: E402

from judge.api import judge_file  # noqa: E402
from judge.config import JudgeConfig  # noqa: E402
from judge.store import Store  # noqa: E402

#: Recorded per-answer figures of the peers on the same inputs and mock
#: (shared/bench/README.md, measured 2026-12-01).
PEERS = {
    "RAGAS 0.4.3": {"calls": 2.0, "prompt": 2236, "completion": 361, "overhead_ms": 12.5},
    "DeepEval 4.3.1": {"calls": 4.0, "prompt": 2660, "completion": 685, "overhead_ms": 151.0},
}
MODEL = "openai/gpt-4o-mini"
LATENCY_MS = 200.0


def shared_bench() -> Path | None:
    """``shared/bench`` beside the checkout (or above a worktree), or ``$CLAIM_JUDGE_BENCH``."""
    env = os.environ.get("CLAIM_JUDGE_BENCH")
    if env:
        return Path(env)
    for parent in ROOT.parents:
        candidate = parent / "shared" / "bench"
        if (candidate / "peer_inputs.jsonl").is_file():
            return candidate
    return None


def peer_records(path: Path, copies: int = 1, given: bool = False) -> list[dict[str, Any]]:
    """The peer answers as answer records (contexts → sources C1..). Copies beyond the first
    get a distinct id, question and source titles, so no call repeats another's."""
    from responder_cj import join_sentences

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    out = []
    for k in range(copies):
        for row in rows:
            contexts = list(dict.fromkeys(row["contexts"]))
            tag = f" (copy {k})" if k else ""
            record: dict[str, Any] = {
                "id": row["id"] + (f"#{k}" if k else ""),
                "question": row["question"] + tag,
                "answer": row["answer"],
                "sources": [
                    {"id": f"C{i + 1}", "text": text, **({"title": f"copy {k}"} if k else {})}
                    for i, text in enumerate(contexts)
                ],
            }
            if given:
                from responder import split_sentences

                sentences = list(enumerate(split_sentences(row["answer"]), start=1))
                record["claims"] = [{"text": t} for _, t in join_sentences(sentences)]
            out.append(record)
    return out


def write_jsonl(records: list[dict[str, Any]], folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n",
                    encoding="utf-8")
    return path


def run(mock: Mock, path: Path, db: Path, label: str, latency_ms: float = 0.0,
        **settings: Any) -> dict[str, Any]:
    """Judge a file against the mock; wall and CPU time of this process, and the mock's
    counters for the calls made."""
    extra = {k: settings.pop(k) for k in ("executor", "ray_address", "workers")
             if k in settings}
    config = JudgeConfig(model=MODEL, api_base=mock.base_url, **settings)
    mock.label(label, latency_ms)
    store = Store.open(db)
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        summary = judge_file(path, config=config, db=store, **extra).summary
    finally:
        store.close()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = mock.stats(label)
    mock.label("idle")
    return {"answers": summary.answers, "claims": summary.claims, "made": summary.model_calls,
            "judge_errors": summary.judge_errors, "wall_s": wall, "cpu_s": cpu,
            "calls": stats.get("calls", 0.0), "prompt": stats.get("prompt_tokens", 0.0),
            "completion": stats.get("completion_tokens", 0.0),
            "schema": stats.get("schema_tokens", 0.0), "busy_s": stats.get("busy_ms", 0.0) / 1e3,
            "split_prompt": stats.get("statements.prompt_tokens", 0.0),
            "verify_prompt": stats.get("verdicts.prompt_tokens", 0.0)}


def per(value: float, n: float) -> float:
    return value / n if n else float("nan")


# -- sections -------------------------------------------------------------------------------


def bench_tokens(mock: Mock, peer: Path, tmp: Path, figures: dict[str, Any]) -> None:
    free = write_jsonl(peer_records(peer), tmp, "free.jsonl")
    given = write_jsonl(peer_records(peer, given=True), tmp, "given.jsonl")
    warm = write_jsonl(peer_records(peer)[:1], tmp, "warm.jsonl")
    run(mock, warm, tmp / "warm.db", "warmup")  # imports, clients, schemas: untimed
    print("\n== tokens and overhead: 20 peer answers, instant mock, concurrency 1 ==")
    print(f"{'system':<28}{'calls/ans':>10}{'prompt/ans':>11}{'compl/ans':>10}"
          f"{'claims/ans':>11}{'CPU ms/ans':>11}{'CPU ms/claim':>13}{'wall-mock ms/ans':>17}")
    rows = {}
    from judge.config import HOSTED_PROFILE

    for name, path, settings in (
            ("claim-judge (free text)", free, {}),
            ("claim-judge (one call)", free, {"one_call": True}),
            ("claim-judge (hosted default)", free, dict(HOSTED_PROFILE)),
            ("claim-judge (given claims)", given, {})):
        r = run(mock, path, tmp / f"{name}.db", name, **settings)
        n, c = r["answers"], r["claims"]
        rows[name] = r
        print(f"{name:<28}{per(r['calls'], n):>10.2f}{per(r['prompt'], n):>11.0f}"
              f"{per(r['completion'], n):>10.0f}{per(c, n):>11.2f}"
              f"{per(r['cpu_s'] * 1e3, n):>11.1f}{per(r['cpu_s'] * 1e3, c):>13.2f}"
              f"{per((r['wall_s'] - r['busy_s']) * 1e3, n):>17.1f}")
    claims_per_answer = per(rows["claim-judge (free text)"]["claims"],
                            rows["claim-judge (free text)"]["answers"])
    for name, p in PEERS.items():
        print(f"{name + ' (recorded)':<28}{p['calls']:>10.2f}{p['prompt']:>11.0f}"
              f"{p['completion']:>10.0f}{claims_per_answer:>11.2f}{'':>11}"
              f"{p['overhead_ms'] / claims_per_answer:>13.2f}{p['overhead_ms']:>17.1f}")
    r = rows["claim-judge (free text)"]
    print(f"split / verify prompt tokens per answer: {per(r['split_prompt'], r['answers']):.0f} /"
          f" {per(r['verify_prompt'], r['answers']):.0f}; JSON schema tokens per answer "
          f"{per(r['schema'], r['answers']):.0f}")
    again = run(mock, free, tmp / "claim-judge (free text).db", "rerun")
    print(f"re-run of the same batch: {again['made']} model calls, {again['wall_s']:.2f} s")
    ragas = PEERS["RAGAS 0.4.3"]
    n = r["answers"]
    g = rows["claim-judge (given claims)"]
    ng = g["answers"]
    o = rows["claim-judge (one call)"]
    no = o["answers"]
    h = rows["claim-judge (hosted default)"]
    nh = h["answers"]
    targets = {
        "prompt tokens <= 1.0x RAGAS, hosted default (issue 50)": per(h["prompt"], nh)
        / ragas["prompt"],
        "calls/answer, hosted default": per(h["calls"], nh),
        "calls/answer, free text <= 2.0": per(r["calls"], n),
        "calls/answer, given claims <= 1.0": per(g["calls"], ng),
        "calls/answer, free text in one call": per(o["calls"], no),
        "prompt tokens <= 0.8x RAGAS, free text": per(r["prompt"], n) / ragas["prompt"],
        "prompt tokens <= 0.8x RAGAS, free text in one call": per(o["prompt"], no)
        / ragas["prompt"],
        "prompt tokens <= 0.8x RAGAS, given claims": per(g["prompt"], ng) / ragas["prompt"],
        "completion tokens <= 1.0x RAGAS, free text": per(r["completion"], n)
        / ragas["completion"],
        "completion tokens <= 1.0x RAGAS, given claims": per(g["completion"], ng)
        / ragas["completion"],
        "completion tokens <= 1.0x RAGAS, free text in one call": per(o["completion"], no)
        / ragas["completion"],
        # same inputs, same claims per answer: the per-claim ratio is the per-answer ratio
        "overhead per claim <= 0.5x RAGAS (recorded; CPU ms), free text":
        per(r["cpu_s"] * 1e3, n) / ragas["overhead_ms"],
        "overhead per claim <= 0.5x RAGAS (recorded; CPU ms), given claims":
        per(g["cpu_s"] * 1e3, ng) / ragas["overhead_ms"],
        "overhead per claim <= 0.5x RAGAS (recorded; CPU ms), free text in one call":
        per(o["cpu_s"] * 1e3, no) / ragas["overhead_ms"],
    }
    for key, value in targets.items():
        print(f"  {key}: {value:.2f}")
    figures["tokens"] = {"runs": rows, "rerun_calls": again["made"], "targets": targets}


def concurrencies(text: str) -> tuple[int, ...]:
    """``--levels``: comma-separated positive concurrencies, refused by argparse otherwise."""
    try:
        levels = tuple(int(n) for n in text.split(",") if n.strip())
    except ValueError:
        levels = ()
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated positive integers")
    return levels


def bench_throughput(mock: Mock, peer: Path, tmp: Path, figures: dict[str, Any],
                     levels: tuple[int, ...] = (1, 8, 32), copies: int = 10) -> None:
    path = write_jsonl(peer_records(peer, copies), tmp, "throughput.jsonl")
    print(f"\n== throughput: {20 * copies} answers at {LATENCY_MS:.0f} ms per call ==")
    # what a process pays once (litellm's import, its client, the schemas), timed apart and
    # left out of the rates: the first run in a fresh process pays it, a long one hardly
    first = write_jsonl(peer_records(peer, 1)[:1], tmp, "throughput-first.jsonl")
    started = time.perf_counter()
    run(mock, first, tmp / "tp-first.db", "tp-first", LATENCY_MS, concurrency=1)
    out: dict[str, Any] = {"first_answer_s": time.perf_counter() - started}
    print(f"first answer in this process: {out['first_answer_s']:.2f} s (its imports, client "
          "and schemas; the rates below leave it out)")
    print(f"{'concurrency':>11}{'answers/s':>11}{'bound':>8}{'of bound':>10}{'calls/ans':>10}"
          f"{'CPU ms/call':>12}")
    runs = [(str(level), level, {}) for level in levels]
    runs += [(f"{level} one call", level, {"one_call": True})
             for level in dict.fromkeys((levels[0], levels[-1]))]
    for name, level, settings in runs:
        r = run(mock, path, tmp / f"tp{name}.db", f"tp{name}", LATENCY_MS, concurrency=level,
                **settings)
        calls = per(r["calls"], r["answers"])
        rate = r["answers"] / r["wall_s"]
        bound = level / (calls * LATENCY_MS / 1e3)
        out[name] = {**r, "rate": rate, "bound": bound}
        print(f"{name:>11}{rate:>11.2f}{bound:>8.2f}{rate / bound:>10.0%}{calls:>10.2f}"
              f"{per(r['cpu_s'] * 1e3, r['calls']):>12.1f}")
    figures["throughput"] = out


def bench_scale(mock: Mock, peer: Path, tmp: Path, figures: dict[str, Any],
                sizes: tuple[int, ...] = (20, 100, 1000)) -> None:
    print("\n== cost per answer by batch size (instant mock, concurrency 8) ==")
    print(f"{'answers':>8}{'CPU ms/ans':>11}{'wall ms/ans':>12}{'calls/ans':>10}")
    out = {}
    for size in sizes:
        records = peer_records(peer, max(1, -(-size // 20)))[:size]
        path = write_jsonl(records, tmp, f"scale{size}.jsonl")
        r = run(mock, path, tmp / f"scale{size}.db", f"scale{size}", concurrency=8)
        out[size] = r
        n = r["answers"]
        print(f"{size:>8}{per(r['cpu_s'] * 1e3, n):>11.1f}"
              f"{per(r['wall_s'] * 1e3, n):>12.1f}{per(r['calls'], n):>10.2f}")
    figures["scale"] = out


def takes_option(name: str) -> bool:
    """Whether this code's ``judge_file`` takes the option ``name`` (a bench may run on an older
    commit): as a parameter, or, since the options became one TypedDict, as one of its keys."""
    import inspect

    if name in inspect.signature(judge_file).parameters:
        return True
    try:
        from judge.runs.options import JudgeOptions
    except ImportError:
        return False
    return name in JudgeOptions.__annotations__


def bench_ray(mock: Mock, peer: Path, tmp: Path, figures: dict[str, Any],
              copies: int = 10) -> None:
    """The Ray executor with 1 and 2 workers, 32 answers in flight in all (32 / workers each),
    on a local Ray instance of 2 CPUs. The workers' start (a process each, importing the
    package) is timed apart, with a one-answer run, and left out of the rate."""
    if not takes_option("executor"):
        print("\n== ray: this code has no Ray executor ==")
        return
    import ray

    path = write_jsonl(peer_records(peer, copies), tmp, "ray.jsonl")
    one = write_jsonl(peer_records(peer, 1)[:1], tmp, "ray-one.jsonl")
    print(f"\n== Ray executor: {20 * copies} answers at {LATENCY_MS:.0f} ms, 32 in flight ==")
    print(f"{'workers':>8}{'start s':>9}{'answers/s':>11}{'bound':>8}{'of bound':>10}")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    out = {}
    try:
        for workers in (1, 2):
            level = 32 // workers
            start = run(mock, one, tmp / f"ray-one{workers}.db", f"ray-one{workers}",
                        concurrency=level, executor="ray", workers=workers)["wall_s"]
            r = run(mock, path, tmp / f"ray{workers}.db", f"ray{workers}", LATENCY_MS,
                    concurrency=level, executor="ray", workers=workers)
            calls = per(r["calls"], r["answers"])
            rate = r["answers"] / max(r["wall_s"] - start, 1e-9)
            bound = 32 / (calls * LATENCY_MS / 1e3)
            out[workers] = {**r, "start_s": start, "rate": rate, "bound": bound}
            print(f"{workers:>8}{start:>9.1f}{rate:>11.2f}{bound:>8.2f}{rate / bound:>10.0%}")
    finally:
        ray.shutdown()
    figures["ray"] = out


#: the peers' venv (shared/bench/peers/setup.sh) and the environment of its env.sh
PEER_VENV = Path(os.environ.get("PEERBENCH_VENV", "/tmp/peerbench"))


def bench_peers(mock: Mock, peer: Path, tmp: Path, figures: dict[str, Any]) -> None:
    """RAGAS and DeepEval faithfulness on the same 20 answers against the same mock in this
    run (their own venv, ``PEERBENCH_VENV``), beside this project's figures of the tokens
    section: the same-run ratios of the targets."""
    python = PEER_VENV / "bin" / "python"
    peers_dir = peer.parent / "peers"
    if not python.exists():
        print(f"\n== peers: no venv at {PEER_VENV}; make it with {peers_dir / 'setup.sh'} "
              "(the recorded figures are used instead) ==")
        return
    env = dict(os.environ, **sourced(peers_dir / "env.sh", PEER_VENV))
    print("\n== peers in the same run: 20 peer answers, instant mock, one answer at a time ==")
    print(f"{'system':<28}{'calls/ans':>10}{'prompt/ans':>11}{'compl/ans':>10}"
          f"{'CPU ms/ans':>11}{'wall ms/ans':>12}{'errors':>8}")
    out: dict[str, Any] = {}
    for system in ("ragas", "deepeval"):
        result = tmp / f"peer-{system}.json"
        done = subprocess.run(
            [str(python), "runner.py", "--system", system, "--base-url",
             mock.base_url.removesuffix("/v1"), "--inputs", str(peer),
             "--run-id", f"same-run-{system}", "--out", str(result)],
            cwd=peers_dir, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{system}: failed ({done.stderr.strip().splitlines()[-1:]})")
            continue
        rows = json.loads(result.read_text())["rows"]
        n = len(rows)

        def mean(values: list[float], n: int = n) -> float:
            return sum(values) / n

        out[system] = {
            "answers": n, "errors": sum(bool(r["error"]) for r in rows),
            "calls": mean([r["mock"].get("calls", 0) for r in rows]),
            "prompt": mean([r["mock"].get("prompt_tokens", 0) for r in rows]),
            "completion": mean([r["mock"].get("completion_tokens", 0) for r in rows]),
            "cpu_ms": mean([r["client_cpu_ms"] for r in rows]),
            "wall_ms": mean([r["wall_ms"] for r in rows]),
        }
        o = out[system]
        print(f"{system:<28}{o['calls']:>10.2f}{o['prompt']:>11.0f}{o['completion']:>10.0f}"
              f"{o['cpu_ms']:>11.1f}{o['wall_ms']:>12.1f}{o['errors']:>8}")
    runs = figures.get("tokens", {}).get("runs", {})
    for name, r in runs.items():
        n = r["answers"]
        print(f"{name:<28}{per(r['calls'], n):>10.2f}{per(r['prompt'], n):>11.0f}"
              f"{per(r['completion'], n):>10.0f}{per(r['cpu_s'] * 1e3, n):>11.1f}"
              f"{per(r['wall_s'] * 1e3, n):>12.1f}{r['judge_errors']:>8}")
    if "ragas" in out and runs:
        ragas = out["ragas"]
        print("same-run ratios to RAGAS (same answers; per claim = per answer):")
        for name, r in runs.items():
            n = r["answers"]
            print(f"  {name}: prompt tokens {per(r['prompt'], n) / ragas['prompt']:.2f}x, "
                  f"completion {per(r['completion'], n) / ragas['completion']:.2f}x, "
                  f"CPU per answer {per(r['cpu_s'] * 1e3, n) / ragas['cpu_ms']:.2f}x")
    figures["peers"] = out


def sourced(script: Path, venv: Path) -> dict[str, str]:
    """The ``export`` lines of a shell script such as peers/env.sh, as variables."""
    import shlex

    env = {"PEERBENCH_VENV": str(venv)}
    for line in script.read_text(encoding="utf-8").splitlines():
        if not line.startswith("export "):
            continue
        for word in shlex.split(line[len("export "):], comments=True):
            key, _, value = word.partition("=")
            if value.startswith("${PEERBENCH_VENV:-"):
                value = str(venv)
            env[key] = value.replace("$PEERBENCH_VENV", str(venv))
    return env


def bench_embedded(peer: Path, tmp: Path, figures: dict[str, Any], answers: int = 4) -> None:
    """Seconds per claim of the embedded model on the first peer answers of 5 to 6 given
    claims (model load excluded): the default (``probe``: one forward pass per claim, the
    hidden state read by the head) beside the same probe with the prompt before it
    (``probe_claim`` v1, without the question's last turn), the probe that reads the last
    layer (the whole model), the ``scores`` strategy (one choice call per claim), and
    ``scores`` with the excerpts shared by the claims of an answer (``excerpts = "answer"``),
    with the labels that differ and the process's peak RSS."""
    import resource

    from judge.config import load_config
    from judge.models import embedded

    records = [r for r in peer_records(peer, given=True) if 5 <= len(r["claims"]) <= 6]
    path = write_jsonl(records[:answers], tmp, "embedded.jsonl")
    chars = [sum(len(s["text"]) for s in r["sources"]) for r in records[:answers]]
    print(f"\n== embedded model: {answers} peer answers of 5-6 given claims "
          f"(sources {min(chars)}-{max(chars)} characters) ==")
    scores = ROOT / "research" / "configs" / "scores_v1_linear_t244_text.toml"
    last_layer = ROOT / "research" / "configs" / "probe_v1.toml"
    prompt_v1 = ROOT / "research" / "configs" / "probe_first21.toml"
    setups = {
        "probe (default)": load_config(None),
        "probe, prompt v1 (no question)": load_config(prompt_v1),
        "probe, last layer (v1)": load_config(last_layer),
        "scores": load_config(scores, prompts={"split_claims": "v2", "choose_label": "v1"}),
        "scores, excerpts per answer": load_config(scores, excerpts="answer"),
    }
    labels: dict[str, list[str]] = {}
    out: dict[str, Any] = {}
    try:
        for name, config in setups.items():
            embedded.unload()
            embedded.load(layers=config.probe_layers)  # the runtime this config reads
            store = Store.open(tmp / f"embedded-{len(out)}.db")
            started = time.perf_counter()
            results = judge_file(path, config=config, db=store)
            wall = time.perf_counter() - started
            store.close()
            n = results.summary.claims
            labels[name] = [v.label for r in results for v in r.verdicts]
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            out[name] = {"claims": n, "wall_s": wall, "s_per_claim": per(wall, n),
                         "peak_rss_mb_so_far": rss}
            print(f"{name}: {n} claims in {wall:.0f} s, {per(wall, n):.2f} s per claim "
                  f"(peak RSS of the process so far {rss:.0f} MB)")
    finally:
        embedded.unload()
    first = labels["probe (default)"]
    for name, got in labels.items():
        if name != "probe (default)":
            flips = sum(a != b for a, b in zip(first, got, strict=True))
            print(f"labels that differ from the default's, {name}: {flips} of {len(first)}")
    figures["embedded"] = out


SECTIONS = ("tokens", "cache", "gold", "peers", "throughput", "scale", "ray", "batches")


def bench_batches(mock: Mock, peer: Path, tmp: Path, figures: dict[str, Any]) -> None:
    """The three ways to send the calls (:mod:`batches`): online, batch API, batch file."""
    import batches

    batches.bench_batches(mock, write_jsonl(peer_records(peer), tmp, "ways.jsonl"), tmp,
                          figures)


def bench_fit() -> None:
    from judge.api import eval_gold, fit
    from tests.fakes import FakeLLM, install
    from tests.fit.synthetic import (
        gold_items,
        install_letters,
        letters_for,
        scores_config,
        write_gold,
    )

    items = gold_items(100)
    install_letters(install(FakeLLM()), letters_for(items))
    with tempfile.TemporaryDirectory() as tmp:
        gold = write_gold(Path(tmp) / "gold.jsonl", items)
        db = Path(tmp) / "fit.db"
        eval_gold(gold, config=scores_config(), db=db)
        for curve in (False, True):
            started = time.perf_counter()
            result = fit(gold, db=db, curve=curve)
            wall = time.perf_counter() - started
            print(f"judge fit on {result.fitted.n + result.holdout['n']} reviewed claims"  # type: ignore[index]
                  f"{' with the learning curve' if curve else ''}: {wall:.1f} s, "
                  f"{result.model_calls} model calls")


def long_source(chars: int = 2_000_000) -> str:
    """A source of ``chars`` characters: English paragraphs with abbreviations, decimals and
    one paragraph of a tenth of the text on a single line (the case pysbd is slowest on)."""
    import random

    rng = random.Random(0)
    phrase = ("the judge stores each call whole with its prompt so that Dr. Smith of the U.S. "
              "Army can replay it on Oct. 5 at 3 p.m. in St. Louis with version 3.2 of it")
    words = phrase.split()

    def sentence() -> str:
        text = " ".join(rng.choice(words) for _ in range(rng.randint(6, 24)))
        return text[0].upper() + text[1:] + rng.choice([".", ".", ".", "?", "!"])

    def paragraph(n: int) -> str:
        return " ".join(sentence() for _ in range(n))

    parts = [paragraph(chars // 10 // 90)]  # about a tenth: one line
    size = len(parts[0])
    while size < chars:
        parts.append(paragraph(rng.randint(2, 10)))
        size += len(parts[-1]) + 2
    return "\n\n".join(parts)[:chars]


def bench_prepare() -> None:
    """Preparing a 2M-character source (sentence splitting, passages and their tokens, the
    normalised text): seconds of CPU, target under 10 s on one core; and how the time grows
    with the length (linear: about 2x per doubling)."""
    from judge.text import prepare_source

    for chars in (250_000, 500_000, 1_000_000, 2_000_000):
        text = long_source(chars)
        started = time.process_time()
        prepare_source(text)
        cpu = time.process_time() - started
        target = " (target < 10 s)" if chars == 2_000_000 else ""
        print(f"prepare a {chars:,}-character source: {cpu:.1f} s CPU{target}")


def bench_help() -> None:
    import statistics
    import subprocess

    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "judge", "--help"], cwd=ROOT, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - started)
    print(f"judge --help: median {statistics.median(times):.2f} s over 5 runs "
          f"(min {min(times):.2f} s; target < 0.5 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated, of {', '.join(SECTIONS)}")
    parser.add_argument("--embedded", action="store_true", help="also time the embedded model")
    parser.add_argument("--end-to-end", action="store_true",
                        help="also judge answers end to end, split included, on the embedded "
                             "model (bench/end_to_end.py; slow)")
    parser.add_argument("--levels", default=(1, 8, 32), type=concurrencies,
                        help="the throughput section's concurrencies (comma-separated; "
                             "one_call at the first and the last)")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--profile", action="store_true",
                        help="only profile the client at concurrency 32 (profile_client.py)")
    args = parser.parse_args()
    if args.profile:
        import profile_client

        profile_client.main()
        return
    bench_help()
    bench_prepare()
    bench_fit()
    shared = shared_bench()
    if shared is None:
        print("shared/bench not found (set CLAIM_JUDGE_BENCH); nothing to compare against")
        return
    peer = shared / "peer_inputs.jsonl"
    sys.path.append(str(shared / "peers"))  # responder.split_sentences for given claims
    sections = [s for s in args.sections.split(",") if s]
    figures: dict[str, Any] = {"cpus": os.cpu_count()}
    print(f"claim-judge at {ROOT}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        with Mock(shared / "peers", tmp / "mock.jsonl") as mock:
            for section in sections:
                if section == "cache":  # bench/cache_share.py: a provider's prompt cache
                    from cache_share import bench_cache

                    bench_cache(mock, peer, tmp, figures)
                    continue
                if section == "gold":  # bench/one_call_gold.py: what one call loses
                    from one_call_gold import bench_gold

                    bench_gold(mock, tmp, figures)
                    continue
                if section == "throughput":
                    bench_throughput(mock, peer, tmp, figures, args.levels)
                    continue
                {"tokens": bench_tokens, "peers": bench_peers, "scale": bench_scale,
                 "ray": bench_ray, "batches": bench_batches}[section](mock, peer, tmp, figures)
        if args.embedded:
            bench_embedded(peer, tmp, figures)
    if args.end_to_end:
        import end_to_end

        figures["end_to_end"] = end_to_end.main([])
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
