"""Population estimates from a stratified review sample with honest weights.

Humans label every claim of some strata (e.g. everything the checks or the judge flagged)
and a seeded random sample of others (e.g. 20 of the 64 passed claims). Each labelled item of
stratum ``h`` stands for ``weight_h = N_h / n_h`` claims (``N_h`` claims in the stratum,
``n_h`` labelled): 64 / 20 = 3.2 for the passed sample, 1 for a fully labelled stratum.

Estimator: every rate is a ratio of weighted sums, ``R = sum(w y x) / sum(w x)`` where ``x``
marks the items in the rate's denominator (the *domain*, e.g. gold non-supported claims for
the lenient rate) and ``y`` the hits. For a plain share (domain = all) this is the usual
stratified proportion ``sum_h W_h p_h`` with ``W_h = N_h / N``.

Variance: the linearised (Taylor) variance of the stratified ratio with finite population
correction, ``V = sum_h N_h**2 (1 - n_h / N_h) s_h**2 / n_h / X**2`` with ``s_h**2`` the
sample variance (ddof 1) of ``z = x (y - R)`` in stratum ``h`` and ``X = sum(w x)``. For a
plain share it reduces to ``sum_h W_h**2 (1 - f_h) s_h**2 / n_h``. A fully labelled stratum
(``f_h = 1``) adds no variance. A sampled stratum with a single labelled item has no variance
estimate: the interval is then ``nan``.

Interval: Wilson score interval with the effective sample size ``n_eff = R (1 - R) / V``
(Korn–Graubard style, without a degrees-of-freedom adjustment). When that is undefined:
if every stratum is fully labelled the estimate is a census of the population and the
interval is the point itself; otherwise (``R`` is 0 or 1, or no within-stratum variation)
the design effect is taken as 1 and the Wilson interval uses the ``n`` labelled items. The
``ci_method`` of each estimate says which rule was used.

Strata that exist in the population but were not sampled at all cannot be represented: they
are listed in :class:`SamplingDesign` and excluded from every estimate (the estimates cover
``SamplingDesign.population`` claims, not the whole run).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import computed_field, model_validator

from calibration.labels import UNSPECIFIED, check_same_length
from calibration.results import NAN, Estimate, Num, ResultModel
from calibration.stats import wilson_bounds

_TOLERANCE = 1e-6


class Stratum(ResultModel):
    """One stratum of the review design: ``size`` claims exist, ``sample_size`` were labelled."""

    name: str
    size: int
    sample_size: int

    @model_validator(mode="after")
    def _sample_within_stratum(self) -> Stratum:
        if not 0 <= self.sample_size <= self.size:
            raise ValueError(f"stratum {self.name!r}: need 0 <= sample_size <= size, got "
                             f"{self.sample_size} of {self.size}")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def weight(self) -> Num:
        """Claims each labelled item stands for (``nan`` when nothing was labelled)."""
        return self.size / self.sample_size if self.sample_size else NAN

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> Literal["fully_labelled", "sampled", "not_sampled"]:
        if self.sample_size == 0:
            return "not_sampled"
        return "fully_labelled" if self.sample_size >= self.size else "sampled"


class SamplingDesign(ResultModel):
    """The strata behind a set of labelled items, and what was and was not sampled.

    ``population`` is the number of claims the estimates cover (strata with labelled items);
    ``not_covered`` the claims in strata that were not sampled at all.
    """

    strata: list[Stratum]
    notes: list[str] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fully_labelled(self) -> list[str]:
        return [s.name for s in self.strata if s.status == "fully_labelled"]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def sampled(self) -> list[str]:
        return [s.name for s in self.strata if s.status == "sampled"]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def not_sampled(self) -> list[str]:
        return [s.name for s in self.strata if s.status == "not_sampled"]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def population(self) -> int:
        return sum(s.size for s in self.strata if s.sample_size)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def not_covered(self) -> int:
        return sum(s.size for s in self.strata if not s.sample_size)

    def stratum(self, name: str) -> Stratum:
        for s in self.strata:
            if s.name == name:
                return s
        raise KeyError(f"stratum {name!r} is not part of the sampling design")


class WeightedEstimate(Estimate):
    """A design-weighted rate. ``n`` counts the labelled items in the denominator;
    ``weighted_total`` estimates how many population claims the denominator holds and
    ``weighted_count`` how many of them are hits; ``ci_method`` names the interval rule."""

    weighted_count: Num = NAN
    weighted_total: Num = NAN
    ci_method: str = ""


def sampling_design(
    strata: Sequence[str | None],
    weights: Sequence[float],
    *,
    population: Mapping[str, int] | None = None,
) -> SamplingDesign:
    """Derive the strata from the labelled items' stratum names and weights.

    Without ``population`` the stratum size is ``weight * (items in the stratum)``, which must
    be a whole number. With ``population`` (stratum name → claims in the stratum) the sizes
    come from it, strata without items are reported as not sampled, and a weight that does
    not match ``size / items`` (e.g. a sampled item was later dropped) is corrected to
    ``size / items`` with a note. Items without a stratum form the ``"(unspecified)"``
    stratum. Weights must be equal within a stratum and at least 1.
    """
    check_same_length(strata=strata, weights=weights)
    names = [s if s is not None else UNSPECIFIED for s in strata]
    grouped: dict[str, list[float]] = {}
    for name, weight in zip(names, weights, strict=True):
        grouped.setdefault(name, []).append(float(weight))
    population = dict(population or {})
    out: list[Stratum] = []
    notes: list[str] = []
    for name, ws in grouped.items():
        w = ws[0]
        if any(not math.isclose(x, w, rel_tol=1e-9) for x in ws):
            raise ValueError(f"stratum {name!r}: items carry different weights {sorted(set(ws))}")
        if not w >= 1 - _TOLERANCE:
            raise ValueError(f"stratum {name!r}: weight {w} < 1 (more labelled than exist)")
        n_h = len(ws)
        implied = w * n_h
        if name in population:
            size = int(population.pop(name))
            if size < n_h:
                raise ValueError(f"stratum {name!r}: {n_h} labelled items but size {size}")
            if abs(implied - size) > _TOLERANCE * max(1.0, size):
                notes.append(
                    f"stratum {name!r}: items carry weight {w:g} but {n_h} of {size} claims "
                    f"are labelled; using weight {size / n_h:.4g}"
                )
        else:
            size = round(implied)
            if abs(implied - size) > _TOLERANCE * max(1.0, implied):
                raise ValueError(
                    f"stratum {name!r}: weight {w:g} × {n_h} items = {implied:g} is not a whole "
                    "number of claims; pass the stratum sizes as population="
                )
        out.append(Stratum(name=name, size=size, sample_size=n_h))
    for name, size in population.items():
        if size > 0:
            out.append(Stratum(name=name, size=int(size), sample_size=0))
    design = SamplingDesign(strata=out)
    for s in design.strata:
        if s.status == "sampled" and s.sample_size == 1:
            notes.append(f"stratum {s.name!r}: one labelled item of {s.size}; no variance "
                         "estimate, intervals are undefined")
    if design.sampled:
        notes.append(
            "sampled strata (items weighted by size / sample size): "
            + ", ".join(f"{s.name} {s.sample_size}/{s.size}, weight {s.weight:.4g}"
                        for s in design.strata if s.status == "sampled")
        )
    if design.fully_labelled:
        notes.append("fully labelled strata (weight 1): " + ", ".join(design.fully_labelled))
    if design.not_sampled:
        notes.append(
            f"not sampled, not represented in any estimate ({design.not_covered} claims): "
            + ", ".join(design.not_sampled)
        )
    return SamplingDesign(strata=out, notes=notes)


def weighted_rate(
    hits: Sequence[bool],
    strata: Sequence[str | None],
    design: SamplingDesign,
    *,
    domain: Sequence[bool] | None = None,
    confidence: float = 0.95,
) -> WeightedEstimate:
    """Population share of ``hits`` among the items in ``domain`` (all items by default).

    ``hits``, ``strata`` and ``domain`` are parallel, one entry per labelled item; every
    stratum must be in ``design`` with ``sample_size`` equal to its number of items.
    """
    check_same_length(hits=hits, strata=strata, domain=domain)
    names = [s if s is not None else UNSPECIFIED for s in strata]
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    for name, given in counts.items():
        stratum = design.stratum(name)
        if stratum.sample_size != given:
            raise ValueError(f"stratum {name!r}: design says {stratum.sample_size} labelled "
                             f"items, {given} given")
    x = np.array([True] * len(hits) if domain is None else list(domain), dtype=float)
    y = np.array(list(hits), dtype=float) * x
    w = np.array([design.stratum(name).weight for name in names], dtype=float)
    n = int(x.sum())
    total = float((w * x).sum())
    count = float((w * y).sum())
    if n == 0 or total <= 0:
        return WeightedEstimate(value=NAN, n=n, weighted_count=count, weighted_total=total,
                                ci_method="undefined: no items in the denominator")
    r = count / total
    z = x * (y - r)
    variance = 0.0
    for name in counts:
        stratum = design.stratum(name)
        fpc = 1 - stratum.sample_size / stratum.size
        if fpc <= 0:
            continue
        if stratum.sample_size < 2:
            variance = NAN
            break
        z_h = z[[i for i, s in enumerate(names) if s == name]]
        variance += stratum.size**2 * fpc * float(np.var(z_h, ddof=1)) / stratum.sample_size
    variance /= total**2
    if variance < 1e-12:  # rounding residue of a zero variance (z constant in each stratum)
        variance = 0.0
    census = all(design.stratum(name).status == "fully_labelled" for name in counts)
    if math.isnan(variance):
        low, high, method = NAN, NAN, "undefined: a sampled stratum has a single labelled item"
    elif 0 < r < 1 and variance > 0:
        n_eff = r * (1 - r) / variance
        low, high = wilson_bounds(r, n_eff, confidence)
        method = f"Wilson, effective n {n_eff:.1f} from the stratified variance with FPC"
    elif census:
        low, high, method = r, r, "census: every stratum fully labelled, no sampling error"
    else:
        low, high = wilson_bounds(r, n, confidence)
        method = "Wilson on the labelled items (variance estimate is 0; design effect taken as 1)"
    return WeightedEstimate(value=r, ci_low=low, ci_high=high, n=n, weighted_count=count,
                            weighted_total=total, ci_method=method)


def weighted_shares(
    values: Sequence[str],
    strata: Sequence[str | None],
    design: SamplingDesign,
    *,
    categories: Sequence[str] | None = None,
    confidence: float = 0.95,
) -> dict[str, WeightedEstimate]:
    """Population share of each category of ``values`` (e.g. each gold label).
    ``categories`` fixes the keys and their order (default: values in first-seen order)."""
    keys = list(categories) if categories is not None else list(dict.fromkeys(values))
    return {
        key: weighted_rate([v == key for v in values], strata, design, confidence=confidence)
        for key in keys
    }
