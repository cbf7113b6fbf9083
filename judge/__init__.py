"""claim-judge: judge generated answers claim by claim against their sources, and tell people
exactly which claims to look at.

The public surface (documented in ``docs/python-api.md``)::

    judge.judge_answers(records, *, config=None, db=None, **options)   # options: JudgeOptions
    judge.judge_file(path, *, config=None, db=None, **options)
    judge.eval_gold(gold, *, config=None, db=None)
    judge.calibrate(gold, *, db, judge_version=None)
    judge.drift(version_a, version_b, *, db, gold=None, records=None)
    judge.fit(gold=None, *, db, output=None, domain=None, holdout=0.3, adopt=False, ...)
    judge.answer(answer_id, *, db, judge_version=None)    # one stored answer and its verdicts
    judge.build_queue(run_ids=None, *, db, options=None)  # the review loop
    judge.record_review(subject, label, *, db, annotator, ...)
    judge.adjudicate(subject, label, *, db, adjudicator, reason, ...)
    judge.export_gold(output=None, *, db, queue=None)
    judge.load_config(path=None, **overrides)
    judge.version_of(config)                    # the judge version id, with no model call
    judge.read_dataset(path, fmt)               # RAGAS / DeepEval files as answer records
    judge.export(output, fmt="jsonl", *, db, run_id=None, queue=None, reveal=False)
    judge.import_reviews(path, fmt, *, db, queue=None)   # Label Studio / Argilla

and the types they take and return (``AnswerRecord``, ``JudgeConfig``, ``AnswerResult``,
``Verdict``, ``Label``, ...). Names are imported on first use, so ``import judge`` stays cheap
(no litellm, no scipy until a function needs them). Every error raised on purpose is a
:class:`JudgeError`.

Import rules: each package's docstring says what it may import ("May import ...; never
...", checked by ``tests/test_layout.py``); the top-level modules (``api``, ``reading``,
``reviewing``, ``version``, ``pipeline``) sit above the packages they use. Leaves that every
package may import: errors, formats, hashing, labels, language, masking, text.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from typing import TYPE_CHECKING, Any

# litellm fetches a cost map from the network at import unless told otherwise; offline
# machines would stall. Set before anything imports litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

#: the distribution's name; ``judge.__version__`` is its installed version (pyproject.toml
#: holds the one number)
DISTRIBUTION = "claim-judge"

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
    "JudgeOptions": "judge.runs.options",
    "BatchMode": "judge.runs.deferred",
    "version_of": "judge.version",
    "answer": "judge.reading",
    "AnswerView": "judge.reading",
    "ClaimVerdict": "judge.reading",
    "build_queue": "judge.reviewing",
    "record_review": "judge.reviewing",
    "adjudicate": "judge.reviewing",
    "export_gold": "judge.reviewing",
    "QueueOptions": "judge.reviewing",
    "QueueSummary": "judge.reviewing",
    "GoldSummary": "judge.reviewing",
    "ImportResult": "judge.review.exchange",
    "JudgeError": "judge.errors",
    "NotFound": "judge.errors",
    "EvaluationError": "judge.evaluation",
    "CalibrationRefused": "judge.evaluation",
    "GoldRejected": "judge.evaluation.gold",
    "FitError": "judge.fitting",
    "FitRefused": "judge.fitting",
    "QueueError": "judge.review.queue",
    "ReviewError": "judge.review.reviews",
    "PeerFormatError": "judge.records.peers",
    "PromptError": "judge.models.prompts",
}

__all__ = [
    "AnswerRecord",
    "AnswerResult",
    "AnswerView",
    "BatchMode",
    "CalibrationRefused",
    "CalibrationResult",
    "Check",
    "Citation",
    "Claim",
    "ClaimVerdict",
    "DEFAULT_MODEL",
    "DriftResult",
    "EvaluationError",
    "Evidence",
    "FitError",
    "FitRefused",
    "FitResult",
    "GoldRejected",
    "GoldSummary",
    "ImportResult",
    "JUDGE_ERROR",
    "JudgeConfig",
    "JudgeError",
    "JudgeOptions",
    "JudgeResults",
    "Label",
    "NotFound",
    "PeerFormatError",
    "PromptError",
    "QueueError",
    "QueueOptions",
    "QueueSummary",
    "RecordsError",
    "ReviewError",
    "RunStopped",
    "Source",
    "Store",
    "Subtype",
    "Verdict",
    "__version__",
    "adjudicate",
    "answer",
    "build_queue",
    "calibrate",
    "drift",
    "eval_gold",
    "export",
    "export_gold",
    "fit",
    "import_reviews",
    "judge_answers",
    "judge_file",
    "judge_version",
    "load_config",
    "read_dataset",
    "read_records",
    "record_review",
    "version_of",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        try:
            value: Any = importlib.metadata.version(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:  # a checkout that is not installed
            value = "0+unknown"
        globals()[name] = value
        return value
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
    from judge.errors import JudgeError, NotFound
    from judge.evaluation import CalibrationRefused, EvaluationError
    from judge.evaluation.gold import GoldRejected
    from judge.fitting import FitError, FitRefused
    from judge.fitting.run import FitResult
    from judge.models.prompts import PromptError
    from judge.reading import AnswerView, ClaimVerdict, answer
    from judge.records import AnswerRecord, Citation, Source, read_records
    from judge.records.peers import PeerFormatError
    from judge.review.exchange import ImportResult
    from judge.review.queue import QueueError
    from judge.review.reviews import ReviewError
    from judge.reviewing import (
        GoldSummary,
        QueueOptions,
        QueueSummary,
        adjudicate,
        build_queue,
        export_gold,
        record_review,
    )
    from judge.runs.deferred import BatchMode
    from judge.runs.options import JudgeOptions
    from judge.store import Store
    from judge.verdicts import JUDGE_ERROR, Check, Claim, Evidence, Label, Subtype, Verdict
    from judge.version import version_of

    __version__: str
