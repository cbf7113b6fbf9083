"""claim-judge: judge generated answers claim by claim against their sources, and tell people
exactly which claims to look at.

The public surface (documented in ``docs/python-api.md``)::

    judge.judge_answers(records, *, config=None, db=None, concurrency=None, on_error="raise")
    judge.judge_file(path, ...)
    judge.eval_gold(gold, *, config=None, db=None)
    judge.calibrate(gold, *, db, judge_version=None)
    judge.drift(version_a, version_b, *, db, gold=None, records=None)
    judge.fit(gold=None, *, db, output=None, domain=None, holdout=0.3, adopt=False, ...)
    judge.load_config(path=None, **overrides)
    judge.read_dataset(path, format)            # RAGAS / DeepEval files as answer records
    judge.export(db, output, format="jsonl", *, run_id=None, queue=None, reveal=False)
    judge.import_reviews(path, format, *, db, queue=None)   # Label Studio / Argilla

and the types they take and return (``AnswerRecord``, ``JudgeConfig``, ``AnswerResult``,
``Verdict``, ``Label``, ...). Names are imported on first use, so ``import judge`` stays cheap
(no litellm, no scipy until a function needs them).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# litellm fetches a cost map from the network at import unless told otherwise; offline
# machines would stall. Set before anything imports litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")



def _package_version() -> str:
    """The installed distribution's version: pyproject.toml's ``version`` is the one source."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("claim-judge")
    except PackageNotFoundError:  # a checkout on sys.path without an install
        return "0+unknown"


__version__ = _package_version()

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "judge_answers": "judge.api",
    "judge_file": "judge.api",
    "eval_gold": "judge.api",
    "calibrate": "judge.api",
    "drift": "judge.api",
    "fit": "judge.api",
    "FitResult": "judge.fitting.run",
    "AnswerResult": "judge.api",
    "JudgeResults": "judge.api",
    "RecordsError": "judge.api",
    "RunStopped": "judge.api",
    "CalibrationResult": "judge.api",
    "DriftResult": "judge.api",
    "export": "judge.api",
    "read_dataset": "judge.api",
    "import_reviews": "judge.api",
    "load_config": "judge.config",
    "JudgeConfig": "judge.config",
    "DEFAULT_MODEL": "judge.config",
    "judge_version": "judge.config",
    "AnswerRecord": "judge.records",
    "Citation": "judge.records",
    "Source": "judge.records",
    "read_records": "judge.records",
    "Verdict": "judge.verdicts",
    "Claim": "judge.verdicts",
    "Evidence": "judge.verdicts",
    "Check": "judge.verdicts",
    "Label": "judge.verdicts",
    "Subtype": "judge.verdicts",
    "JUDGE_ERROR": "judge.verdicts",
    "Store": "judge.store",
}

__all__ = [
    "AnswerRecord",
    "AnswerResult",
    "CalibrationResult",
    "Check",
    "Citation",
    "Claim",
    "DEFAULT_MODEL",
    "DriftResult",
    "Evidence",
    "FitResult",
    "JUDGE_ERROR",
    "JudgeConfig",
    "JudgeResults",
    "Label",
    "RecordsError",
    "RunStopped",
    "Source",
    "Store",
    "Subtype",
    "Verdict",
    "calibrate",
    "drift",
    "eval_gold",
    "export",
    "import_reviews",
    "fit",
    "judge_answers",
    "judge_file",
    "judge_version",
    "load_config",
    "read_dataset",
    "read_records",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)


if TYPE_CHECKING:
    from judge.api import (
        AnswerResult,
        CalibrationResult,
        DriftResult,
        JudgeResults,
        RecordsError,
        RunStopped,
        calibrate,
        drift,
        eval_gold,
        export,
        fit,
        import_reviews,
        judge_answers,
        judge_file,
        read_dataset,
    )
    from judge.config import DEFAULT_MODEL, JudgeConfig, judge_version, load_config
    from judge.fitting.run import FitResult
    from judge.records import AnswerRecord, Citation, Source, read_records
    from judge.store import Store
    from judge.verdicts import JUDGE_ERROR, Check, Claim, Evidence, Label, Subtype, Verdict
