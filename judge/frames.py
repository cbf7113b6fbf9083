"""Results as a pandas DataFrame (``JudgeResults.to_pandas()``), one row per claim, as RAGAS
users get theirs: pandas is optional (``pip install 'claim-judge[pandas]'``) and imported only
here, when a frame is asked for.

An answer with no claim (refused as self-grading, rejected, pending) is one row with its
status and no claim, so nothing of the input vanishes from the frame.

A top-level module; it imports nothing of the package (the results come as arguments).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: the columns, in order
COLUMNS = (
    "answer_id", "status", "answer_status", "claim_id", "claim", "label", "subtype", "support",
    "strength", "review", "review_reasons", "evidence", "checks", "rationale", "error",
    "refused_reason", "judge_version",
)


def rows(results: Iterable[Any]) -> list[dict[str, Any]]:
    """One dict per claim (and one per answer without claims), with the :data:`COLUMNS`."""
    out: list[dict[str, Any]] = []
    for answer in results:
        base = {"answer_id": answer.answer_id, "status": answer.status,
                "answer_status": answer.answer_status, "refused_reason": answer.refused_reason,
                "judge_version": answer.judge_version}
        if not answer.verdicts:
            out.append({c: base.get(c, answer.error if c == "error" else None)
                        for c in COLUMNS})
            continue
        for verdict in answer.verdicts:
            row = verdict.model_dump(mode="json")
            out.append({c: row[c] if c in row else base.get(c) for c in COLUMNS})
    return out


def to_pandas(results: Iterable[Any]) -> Any:
    """The :class:`~judge.api.AnswerResult` items as a ``pandas.DataFrame``, one row per claim
    (:data:`COLUMNS`)."""
    try:
        import pandas as pd  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:  # the optional extra
        raise ImportError("to_pandas() needs pandas: pip install 'claim-judge[pandas]'"
                          ) from exc
    return pd.DataFrame(rows(results), columns=list(COLUMNS))
