"""claim-judge: judge generated answers claim by claim against their sources.

The public surface is small; everything else is private to its module.
"""

from __future__ import annotations

import os

# litellm fetches a cost map from the network at import unless told otherwise; offline
# machines would stall. Set before anything imports litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from judge.config import DEFAULT_MODEL, JudgeConfig, judge_version  # noqa: E402
from judge.records import AnswerRecord, Citation, Source, read_records  # noqa: E402
from judge.verdicts import JUDGE_ERROR, Check, Claim, Evidence, Label, Subtype, Verdict  # noqa: E402

__all__ = [
    "DEFAULT_MODEL", "JUDGE_ERROR", "AnswerRecord", "Check", "Citation", "Claim", "Evidence",
    "JudgeConfig", "Label", "Source", "Subtype", "Verdict", "judge_version", "read_records",
]
__version__ = "0.1.0"
