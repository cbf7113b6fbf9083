"""Reading records: the input models (:mod:`judge.records.models`) and reading them with
numbered errors (:mod:`judge.records.jsonl`). May import the leaves only (see :mod:`judge`)."""

from judge.records.jsonl import (
    AcceptedLine,
    RejectedLine,
    parse_line,
    read_jsonl,
    read_records,
    validate_record,
    without_duplicates,
)
from judge.records.models import AnswerRecord, Citation, ClaimInput, Source

__all__ = [
    "AcceptedLine", "AnswerRecord", "Citation", "ClaimInput", "RejectedLine", "Source",
    "parse_line", "read_jsonl", "read_records", "validate_record", "without_duplicates",
]
