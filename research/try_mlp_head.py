"""An experiment (issue 49): does a head with one hidden layer (32 tanh units) transfer better
than the linear one? Leave-one-dataset-out on the collected pool, as
research/readers_transfer.py measures the linear head (same weighting, same label sets).

    python research/try_mlp_head.py 1 10      # the L2 strengths to try

Result (2026-12-05, the first 3,398 pool claims, `last` at block 21, dataset+label): binary
0.669 / AUC 0.723 at L2 1 and 0.669 / 0.728 at 10, against the linear head's 0.687 / 0.776:
not adopted (reports/try_mlp_head_3398.log).
"""

import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from research.readers_transfer import POOL, Pool, figures, fit_inputs, load_pool  # noqa: E402


def fit_predict_mlp(pool: Pool, x: np.ndarray, rest: np.ndarray, held: np.ndarray,
                    lam: float, weighting: str, hidden: int = 32, seed: int = 0
                    ) -> np.ndarray:
    """P(label) of the held claims from a one-hidden-layer head fitted on the rest (weighted
    cross-entropy over each claim's allowed labels, L2 on the weights, L-BFGS)."""
    xs, xh, w = fit_inputs(pool, x, rest, held, weighting)
    w = w / w.sum()
    allowed = pool.allowed[rest].astype(float)
    n, d = xs.shape
    k = allowed.shape[1]
    shapes = [(d, hidden), (hidden,), (hidden, k), (k,)]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(t: np.ndarray) -> list[np.ndarray]:
        out, at = [], 0
        for shape, size in zip(shapes, sizes, strict=True):
            out.append(t[at:at + size].reshape(shape))
            at += size
        return out

    rng = np.random.default_rng(seed)
    start = np.concatenate([rng.normal(scale=1 / np.sqrt(d), size=sizes[0]), np.zeros(hidden),
                            rng.normal(scale=1 / np.sqrt(hidden), size=sizes[2]), np.zeros(k)])

    def loss(t: np.ndarray) -> tuple[float, np.ndarray]:
        w1, b1, w2, b2 = unpack(t)
        h = np.tanh(xs @ w1 + b1)
        s = h @ w2 + b2
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p_allowed = (p * allowed).sum(1)
        value = (-(w * np.log(np.clip(p_allowed, 1e-12, None))).sum()
                 + lam / 2 * ((w1 ** 2).sum() + (w2 ** 2).sum()) / n)
        g = w[:, None] * (p - p * allowed / p_allowed[:, None])
        gh = (g @ w2.T) * (1 - h ** 2)
        grad = [xs.T @ gh + lam * w1 / n, gh.sum(0), h.T @ g + lam * w2 / n, g.sum(0)]
        return float(value), np.concatenate([v.ravel() for v in grad])

    fitted = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 300})
    w1, b1, w2, b2 = unpack(fitted.x)
    s = np.tanh(xh @ w1 + b1) @ w2 + b2
    p = np.exp(s - s.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)  # type: ignore[no-any-return]


def main() -> int:
    pool = load_pool([Path(__file__).resolve().parent / "vectors" / "L21"], POOL)
    x = pool.x("last")
    names = sorted(set(pool.datasets.tolist()))
    for lam in [float(a) for a in sys.argv[1:]]:
        started, res = time.time(), {}
        with threadpool_limits(limits=1, user_api="blas"):
            for ds in names:
                held = np.flatnonzero(pool.datasets == ds)
                rest = np.flatnonzero(pool.datasets != ds)
                res[ds] = figures(pool, held,
                                  fit_predict_mlp(pool, x, rest, held, lam, "dataset+label"))
        binary = np.mean([v["binary_ba"][0] for v in res.values()])
        auc = np.mean([v["auc"][0] for v in res.values()])
        four = np.nanmean([v["four_ba"][0] for v in res.values() if "four_ba" in v])
        print(f"mlp l2={lam} LODO bin {binary:.3f} auc {auc:.3f} 4-lab {four:.3f} "
              f"({time.time() - started:.0f} s) " + " ".join(
                  f"{k[:8]}={v['binary_ba'][0]:.2f}/{v['auc'][0]:.2f}" for k, v in res.items()),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
