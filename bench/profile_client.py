"""Where the client's time goes at concurrency 32 (``python bench/profile_client.py``, or
``make bench BENCH_ARGS=--profile``): 200 peer answers at 200 ms per call against the mock,
under cProfile, after a warm-up run (imports and first calls left out). Prints the rate
against the bound ``concurrency / (calls per answer x 0.2 s)``, this process's CPU time per
call, and its own time grouped by package (litellm, instructor, sqlite, this project's
modules, ...). Asserts nothing; ratios hold better than times on a busy machine.

cProfile sees only the thread that enables it: litellm's ``acompletion`` runs each call's
``completion()`` on a worker thread of the event loop, so the work submitted to thread pools
is profiled too, per thread, and added in (its share printed apart). Times are wall-clock
(cProfile's default timer): a function that releases the GIL (a SQLite statement, a socket
send, a hash) is charged the wait to get it back.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
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


class WorkerProfiles:
    """While active, every function submitted to a thread pool runs under a profiler of its
    thread (one per thread, kept in :attr:`profiles`)."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self._local = threading.local()
        self._lock = threading.Lock()
        self._submit = ThreadPoolExecutor.submit

    def __enter__(self) -> WorkerProfiles:
        original, outer = self._submit, self

        def submit(pool: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            def profiled(*a: Any, **k: Any) -> Any:
                profile = getattr(outer._local, "profile", None)
                if profile is None:
                    profile = outer._local.profile = cProfile.Profile()
                    with outer._lock:
                        outer.profiles.append(profile)
                profile.enable()
                try:
                    return fn(*a, **k)
                finally:
                    profile.disable()
            return original(pool, profiled, *args, **kwargs)

        ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        ThreadPoolExecutor.submit = self._submit  # type: ignore[method-assign]


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
            with WorkerProfiles() as workers:
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
    main_thread = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    for each in workers.profiles:
        stats.add(each)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    print(f"worker threads (litellm's completion() of each call): {1 - main_thread / total:.0%} "
          "of the profiled time")
    for key, own in groups(stats):
        print(f"{own / total:>6.1%}  {key}")
    return {"rate": rate, "bound": bound, "cpu_ms_per_call": r["cpu_s"] * 1e3 / r["calls"]}


if __name__ == "__main__":
    main()
