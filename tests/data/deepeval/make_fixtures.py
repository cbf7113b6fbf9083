"""Writes the DeepEval fixtures beside this script with DeepEval's own save code.

Run in a throwaway venv that has DeepEval (not claim-judge's venv):

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install deepeval
    DEEPEVAL_TELEMETRY_OPT_OUT=YES /tmp/peers/bin/python tests/data/deepeval/make_fixtures.py

The files committed here were written by deepeval 4.3.1 (see VERSION). ``save_as`` saves
goldens; test cases are saved as goldens with ``include_test_cases=True`` (DeepEval has no
other file writer for them). JSON keeps ``retrieval_context`` a list; JSONL and CSV join it
with ``|`` (deepeval.dataset.utils.DELIMITER); a ``RetrievedContextData`` item is written as
``deepeval_source=<source>,deepeval_context=<text>``.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")

import deepeval  # noqa: E402
from deepeval.dataset import EvaluationDataset, Golden  # noqa: E402
from deepeval.test_case import LLMTestCase, RetrievedContextData  # noqa: E402

HERE = Path(__file__).resolve().parent

CONTEXTS = ["HTTP 401 means the request is unauthenticated.",
            "HTTP 403 means authenticated but not allowed; retrying does not help."]

GOLDENS = [
    Golden(input="What does 401 mean?", name="golden-401",
           actual_output="HTTP 401 means the request is unauthenticated.",
           expected_output="Unauthenticated.", retrieval_context=CONTEXTS),
    Golden(input="403 和 401 的差別？", name="golden-403",
           actual_output="403 表示權限不足，重試無效。",
           retrieval_context=["403 表示權限不足，重試無效。", "401 表示未認證。"]),
]

TEST_CASES = [
    LLMTestCase(input="Should I retry a 403?",
                actual_output="HTTP 403 means authenticated but not allowed.",
                retrieval_context=[
                    RetrievedContextData(source="rfc9110.txt", context=CONTEXTS[1]),
                    CONTEXTS[0],
                ]),
]


def main() -> None:
    goldens = EvaluationDataset(goldens=GOLDENS)
    cases = EvaluationDataset()
    for case in TEST_CASES:
        cases.add_test_case(case)
    for file_type in ("json", "jsonl", "csv"):
        goldens.save_as(file_type, str(HERE), file_name="goldens")
        # an empty golden list is refused: the test cases ride with one golden
        mixed = EvaluationDataset(goldens=GOLDENS[:1])
        for case in TEST_CASES:
            mixed.add_test_case(case)
        mixed.save_as(file_type, str(HERE), file_name="test_cases", include_test_cases=True)
    (HERE / "VERSION").write_text(f"deepeval {deepeval.__version__}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
