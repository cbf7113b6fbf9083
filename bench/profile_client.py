"""Where the client's time goes at concurrency 32 (``python bench/profile_client.py``, or
``make bench BENCH_ARGS=--profile``): 200 peer answers at 200 ms per call against the mock,
under cProfile, after a warm-up run (imports and first calls left out). Prints the rate
against the bound ``concurrency / (calls per answer x 0.2 s)``, this process's CPU time per
call, and its own time grouped by package (litellm, instructor, sqlite, this project's
modules, ...). Asserts nothing; ratios hold better than times on a busy machine.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

from peermock import Mock  # noqa: E402

import bench  # noqa: E402


def groups(stats: pstats.Stats, top: int = 15) -> list[tuple[str, float]]:
    """Own time by package (site-packages' top folder, this project's subpackage, stdlib)."""
    found: Counter[str] = Counter()
    for (path, _, name), row in stats.stats.items():  # type: ignore[attr-defined]
        own = row[2]
        if "site-packages/" in path:
            key = path.split("site-packages/")[1].split("/")[0]
        elif f"{os.sep}judge{os.sep}" in path:
            key = "judge." + path.split(f"{os.sep}judge{os.sep}")[1].split(os.sep)[0]
        elif path.startswith(("~", "<")):
            key = "builtin: " + name.split(" of ")[0][:40]
        else:
            key = "stdlib: " + Path(path).stem
        found[key] += own
    return found.most_common(top)


def main(concurrency: int = 32, copies: int = 10) -> dict[str, Any]:
    shared = bench.shared_bench()
    if shared is None:
        print("shared/bench not found (set CLAIM_JUDGE_BENCH)")
        return {}
    peer = shared / "peer_inputs.jsonl"
    sys.path.append(str(shared / "peers"))
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        with Mock(shared / "peers", tmp / "mock.jsonl") as mock:
            warm = bench.write_jsonl(bench.peer_records(peer, 1), tmp, "warm.jsonl")
            bench.run(mock, warm, tmp / "warm.db", "warm", 0.0, concurrency=8)
            path = bench.write_jsonl(bench.peer_records(peer, copies), tmp, "profile.jsonl")
            print(f"\n== client profile: {20 * copies} answers at {bench.LATENCY_MS:.0f} ms, "
                  f"concurrency {concurrency}; load {os.getloadavg()[0]:.1f} on "
                  f"{os.cpu_count()} CPUs ==")
            profile = cProfile.Profile()
            started = time.perf_counter()
            profile.enable()
            r = bench.run(mock, path, tmp / "profile.db", "profile", bench.LATENCY_MS,
                          concurrency=concurrency)
            profile.disable()
            wall = time.perf_counter() - started
    calls = r["calls"] / max(1, r["answers"])
    rate = r["answers"] / wall
    bound = concurrency / (calls * bench.LATENCY_MS / 1e3)
    print(f"{rate:.2f} answers/s of a bound of {bound:.2f} ({rate / bound:.0%}, under the "
          f"profiler); {r['cpu_s'] * 1e3 / max(1, r['calls']):.1f} ms of CPU per call")
    stats = pstats.Stats(profile)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    for key, own in groups(stats):
        print(f"{own / total:>6.1%}  {key}")
    return {"rate": rate, "bound": bound, "cpu_ms_per_call": r["cpu_s"] * 1e3 / r["calls"]}


if __name__ == "__main__":
    main()
