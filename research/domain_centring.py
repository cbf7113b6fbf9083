"""Does centring each dataset's vectors on its own mean help the head transfer (issue 49)?
Leave one dataset out, from the shards of research/collect_readers.py, 0 model calls.

    python research/domain_centring.py [--vectors research/vectors/L21] [--l2 1000]
        [--output research/reports/domain_centring.json]

The head (reader ``last``, weighted per dataset and label, as research/readers_transfer.py)
is fitted on the seven other datasets, each centred on its own mean vector, and read on the
dataset left out centred on: the mean of the seven (``none``: nothing known of the new
domain), the mean of a random 20, 50 or 200 of its claims (``s20``...: a team's unlabelled
batch; labels are never read for a centre), or of all its claims (``all``). ``plain`` is the
head as fitted today (no centring). A centre moves every score of a dataset by the same
amount, so the ROC AUC within a dataset changes only with the head's weights; the balanced
accuracy also moves with where the domain's scores fall against the head's threshold.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from research import readers_transfer as rt  # noqa: E402
from research.collect_readers import POOL  # noqa: E402

SAMPLES = (20, 50, 200)


def centring_lodo(pool: rt.Pool, l2: float, samples: tuple[int, ...] = SAMPLES,
                  seed: int = 0) -> dict[str, dict[str, Any]]:
    """For each dataset left out, the figures of today's head (``plain``) and of the head
    fitted on the other datasets each centred on its own mean, read on the one left out
    centred on each centre of the module docstring."""
    x = pool.x("last")
    names = sorted(set(pool.datasets.tolist()))
    means = {ds: x[pool.datasets == ds].mean(0) for ds in names}
    rng = np.random.default_rng(seed)
    plain = rt.lodo_probs(pool, x, "dataset+label", l2)
    results: dict[str, Any] = {}
    for ds in names:
        held = np.flatnonzero(pool.datasets == ds)
        rest = np.flatnonzero(pool.datasets != ds)
        centred = x.copy()
        for other in names:
            if other != ds:
                centred[pool.datasets == other] -= means[other]
        centres = {"none": np.mean([means[o] for o in names if o != ds], axis=0)}
        for k in samples:
            pick = rng.choice(held, size=min(k, len(held)), replace=False)
            centres[f"s{k}"] = x[pick].mean(0)
        centres["all"] = means[ds]
        row = {"plain": rt.figures(pool, held, plain[held])}
        for name, centre in centres.items():
            xv = centred.copy()
            xv[held] = x[held] - centre
            row[name] = rt.figures(pool, held, rt.fit_predict(
                pool, xv, rest, held, l2, "dataset+label"))
        results[ds] = row
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vectors", type=Path, default=ROOT / "vectors" / "L21")
    parser.add_argument("--l2", type=float, default=1000.0)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    pool = rt.load_pool([args.vectors], POOL)
    with threadpool_limits(limits=1, user_api="blas"):
        results = centring_lodo(pool, args.l2)
    for ds, row in results.items():
        print(ds, " ".join(f"{k}={v['binary_ba'][0]:.3f}/{v['auc'][0]:.3f}"
                           for k, v in row.items()), flush=True)
    names = sorted(results)
    means_row = {k: (round(float(np.mean([results[d][k]["binary_ba"][0] for d in names])), 4),
                     round(float(np.mean([results[d][k]["auc"][0] for d in names])), 4))
                 for k in results[names[0]]}
    print("mean binary BA / AUC:", means_row)
    if args.output:
        args.output.write_text(json.dumps({
            "command": "python " + " ".join(shlex.quote(a) for a in
                                             ["research/domain_centring.py",
                                              *(argv or sys.argv[1:])]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"), "n": len(pool.ids),
            "l2": args.l2, "lodo": results, "mean": means_row}, indent=1) + "\n",
            encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
