"""Degenerate vectors are refused where the probe decides (``ProbeHead.refusal``): all zeros,
constant, or far outside what the vectors the head was fitted on reach (``Reach``, recorded by
every fit; for a head that records none, what its standardisation allows). The packaged
default head keeps its bytes and still reads the real vectors of normal claims
(``tests/data/probe_v6_vectors.jsonl``: 14 vectors the packaged model gave, read after block
21 by ``judge eval-gold`` with the embedded default, for claims of ``gold/ocnli_check*.jsonl``,
``gold/regression.jsonl``, ``gold/samples/gold.jsonl`` and the four dev sets: the 4 farthest
out by each measure of 101 and others drawn at random)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.decide.probe_head import (
    BUILTIN_DIR,
    REACH_MARGIN,
    REACH_UNKNOWN,
    ProbeHead,
    ProbeHeadError,
    Reach,
    from_dict,
    load_head,
)
from judge.fitting.probe import fit_head, fit_probe_rule
from judge.models.vectors import decode, degenerate
from judge.verdicts import LABELS

V6 = "qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v6"
REAL = Path(__file__).resolve().parent.parent / "data" / "probe_v6_vectors.jsonl"


def packaged(name: str) -> ProbeHead:
    path = BUILTIN_DIR / f"{name}.json"
    return load_head(f"builtin:{name}", hashlib.sha256(path.read_bytes()).hexdigest())


def real_vectors() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REAL.read_text(encoding="utf-8").splitlines()]


def plain_head(dim: int, about: dict[str, Any] | None = None, reach: Reach | None = None
               ) -> ProbeHead:
    return ProbeHead(tuple(LABELS), np.zeros(dim), np.ones(dim), np.zeros((4, dim)),
                     np.zeros(4), about or {}, fitted_range=reach)


def test_all_zero_and_constant_vectors_are_degenerate_whatever_their_length() -> None:
    for dim in (3, 1536, 4608):  # nothing assumes 1,536 numbers
        assert "all zeros" in (degenerate(np.zeros(dim, dtype=np.float16)) or "")
        assert "constant" in (degenerate(np.full(dim, 0.25)) or "")
        almost = np.zeros(dim)
        almost[-1] = 1e-3
        assert degenerate(almost) is None
    assert "all zeros" in (degenerate([-0.0, 0.0]) or "")  # negative zero is zero
    assert degenerate([7.0]) is None  # one number is no pattern


def test_the_reach_is_recorded_in_the_head_file_and_read_back() -> None:
    reach = Reach.of(np.array([[1.0, -3.0, 0.5], [0.0, 2.0, -1.0]]))
    assert reach == Reach(3.0, pytest.approx(math.sqrt(10.25 / 3), rel=1e-5))
    head = plain_head(3, {"n": 2}, reach)
    data = json.loads(head.dumps())
    assert data["range"] == {"peak": 3.0, "spread": reach.spread}
    assert from_dict(data).fitted_range == reach
    # a head without it is written as before (no key), so its bytes do not change
    assert "range" not in json.loads(plain_head(3).dumps())
    for bad in ({"peak": 1.0}, {"peak": -1.0, "spread": 1.0}, {"peak": "inf", "spread": 1.0}):
        with pytest.raises(ProbeHeadError, match="range"):
            from_dict({**data, "range": bad})


@pytest.mark.parametrize("name", [V6, "qwen2.5-coder-1.5b-q4km-probe-v1"])
def test_packaged_heads_keep_their_bytes_and_are_bounded_by_their_standardisation(
    name: str
) -> None:
    head = packaged(name)
    path = BUILTIN_DIR / f"{name}.json"
    assert head.dumps().encode("utf-8") == path.read_bytes()
    assert head.fitted_range is None
    # no component of any of its n fitted vectors lies beyond sqrt(n - 1) deviations
    assert head.reach() == Reach(math.sqrt(head.about["n"] - 1), math.sqrt(head.about["n"] - 1))
    assert packaged("uniform").reach() is None


def test_the_default_head_reads_the_real_vectors_of_normal_claims() -> None:
    head = packaged(V6)
    rows = real_vectors()
    assert len(rows) == 14 and {r["dataset"] for r in rows} >= {
        "ocnli", "ocnli_tw", "regression", "begin", "dialfact", "factcheck_gpt"}
    languages = set()
    for row in rows:
        vector = decode(row)
        assert vector.size == head.dim
        assert head.refusal(vector, row["read"]) is None, row["gold_id"]
        z = head.standardised(vector, [row["read"]])
        # far inside the bound: the farthest real vector is within a tenth of it
        assert np.abs(z).max() < (REACH_MARGIN * head.reach().peak) / 10  # type: ignore[union-attr]
        languages.add(head.shift.language(row["read"]) if head.shift else None)
    assert "zh" in languages and None in languages  # shifted and unshifted both read


def test_the_default_head_refuses_what_is_not_a_hidden_state() -> None:
    head = packaged(V6)
    row = real_vectors()[0]
    vector = decode(row).astype(np.float64)
    rng = np.random.default_rng(0)
    widest = int(np.argmax(head.scale))  # the component that varied most in the fit
    cases = [
        ("all zeros", np.zeros(head.dim)),
        ("constant", np.full(head.dim, float(vector.mean()))),
        ("far outside", vector * 10),  # a provider that scales its vectors
        # noise of a hidden state's norm
        ("far outside", rng.normal(size=head.dim) * np.linalg.norm(vector) / math.sqrt(head.dim)),
        ("far outside", vector + np.eye(head.dim)[widest] * 2000),  # one absurd component
    ]
    for says, bad in cases:
        problem = head.refusal(bad.astype(np.float16), row["read"])
        assert problem is not None and says in problem, (says, problem)
    with pytest.raises(ProbeHeadError, match="the model gave 3"):
        head.refusal(np.array([1.0, 2.0, 3.0]), row["read"])


def test_a_recorded_reach_is_what_bounds_a_vector() -> None:
    head = plain_head(4, {"n": 1000}, Reach(2.0, 1.0))
    assert head.refusal(np.array([7.9, 0.0, 0.0, 1.0])) is None  # within 4 x the peak 2
    assert "its largest standardised component is 8.1," in (head.refusal(
        np.array([8.1, 0.0, 0.0, 1.0])) or "")
    # each component within the peak bound, the whole vector beyond the spread bound (4 x 1)
    spread = head.refusal(np.array([4.5, 4.5, -4.5, 4.4]))
    assert spread and "root mean square is 4.475" in spread and "fitted on reach 1 " in spread
    # a head that records none and does not standardise by its own fit
    loose = plain_head(2, {"n": 1000, "shrunk_toward": "default"})
    assert loose.reach() == Reach(REACH_UNKNOWN, REACH_UNKNOWN)
    assert loose.refusal(np.array([REACH_MARGIN * REACH_UNKNOWN - 1, 0.0])) is None
    assert "its standardisation allows 100" in (loose.refusal(
        np.array([REACH_MARGIN * REACH_UNKNOWN + 1, 0.0])) or "")


def test_a_fit_records_how_far_its_vectors_reach() -> None:
    rng = np.random.default_rng(1)
    dim = 6
    x = rng.normal(3.0, 2.0, (80, dim))
    y = np.arange(80) % 4
    x[np.arange(80), y] += 3.0
    head = fit_head(x, y, 10.0)
    z = (x - x.mean(0)) / x.std(0)
    assert head.fitted_range == Reach(float(f"{np.abs(z).max():.6g}"),
                                      float(f"{np.sqrt((z ** 2).mean(1)).max():.6g}"))
    assert all(head.refusal(v) is None for v in x)  # every fitted vector reads
    # the whole fit (the head it writes, with its about and a language shift) keeps it
    fitted = fit_probe_rule(x, y, [k % 5 for k in range(80)], about={"name": "t"})
    assert isinstance(fitted.model, ProbeHead) and fitted.model.fitted_range == head.fitted_range
    assert json.loads(fitted.model.dumps())["range"] == head.fitted_range.as_dict()  # type: ignore[union-attr]
    # a domain's head reads what its prior read too: the wider of the two
    prior = plain_head(dim, reach=Reach(50.0, 0.5))
    domain = fit_head(x[:40], y[:40], 10.0, prior=prior)
    own = Reach.of(x[:40])  # the prior standardises by mean 0, scale 1
    assert domain.fitted_range == Reach(50.0, max(0.5, own.spread))
