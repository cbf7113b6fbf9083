"""The bench asks whether this code's ``judge_file`` takes an option before a section uses it
(a bench may run on an older commit). The options became one ``JudgeOptions`` TypedDict, and
a look at the signature's parameters alone then said the Ray executor was missing, so the ray
section printed "this code has no Ray executor" and measured nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("claim_judge_bench", BENCH / "bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_the_options_the_ray_section_passes_are_seen_and_an_unknown_one_is_not() -> None:
    bench = _bench()
    for option in ("executor", "workers", "ray_address", "max_calls"):
        assert bench.takes_option(option), option
    assert not bench.takes_option("no_such_option")
