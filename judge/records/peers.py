"""Evaluation datasets of other tools as answer records, and answer records back in their
schemas: RAGAS evaluation datasets (``user_input``, ``response``, ``retrieved_contexts``,
optional ``reference``; also the older ``question`` / ``answer`` / ``contexts`` /
``ground_truth`` names) and DeepEval test cases or goldens (``input``, ``actual_output``,
``retrieval_context``, optional ``expected_output`` and ``name``).

Each retrieved context becomes a text source ``C1``, ``C2``, ... in order. Their answers carry
no citation markers: such a row means "all the contexts are the sources of every sentence", so
the record says ``uncited = "all_sources"`` and every claim cites every context (it is judged
against all of them, and goes to review for what the judge finds, not for a missing
citation). A row's ``id`` (DeepEval: ``name``) becomes the answer id; without one the record's
content hash does.

Files: JSONL (one object per line), a JSON array, or CSV. RAGAS CSV list columns hold a JSON
or Python list, as ``EvaluationDataset.to_csv`` writes them. DeepEval's ``save_as`` (goldens,
and test cases saved as goldens with ``include_test_cases=True``) keeps ``retrieval_context`` a
list in JSON and joins it with ``|`` in JSONL and CSV; it is split on ``|`` as DeepEval's own
loaders split it, and a ``RetrievedContextData`` item (``deepeval_source=<name>,
deepeval_context=<text>``) becomes a source titled with its name.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from judge.errors import JudgeError
from judge.formats import DATASET_FORMATS
from judge.records.models import AnswerRecord, is_blank
from judge.records.mojibake import repair_record

PEER_FORMATS = DATASET_FORMATS
MAX_PEER_FILE_BYTES = 512 * 1024 * 1024

#: (question, answer, contexts, reference, id) keys per format, first match wins
_KEYS = {
    "ragas": (("user_input", "question"), ("response", "answer"),
              ("retrieved_contexts", "contexts"), ("reference", "ground_truth"), ("id",)),
    "deepeval": (("input",), ("actual_output",), ("retrieval_context",),
                 ("expected_output",), ("name", "id")),
}


class PeerFormatError(JudgeError, ValueError):
    """A file that is not in the named format; the message says where and why."""


def _rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(row number, object) of a JSONL, JSON array or CSV file."""
    if path.stat().st_size > MAX_PEER_FILE_BYTES:
        raise PeerFormatError(f"{path} is larger than {MAX_PEER_FILE_BYTES} bytes")
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        for i, row in enumerate(csv.DictReader(text.splitlines(keepends=True)), start=1):
            yield i, row
        return
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PeerFormatError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}"
                                  ) from exc
        yield from enumerate(data, start=1)
        return
    try:  # one JSON object: a dataset wrapped as {"test_cases": [...]}, or a single row
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None  # JSONL
    if isinstance(whole, dict):
        for key in ("test_cases", "goldens", "samples", "data"):
            if isinstance(whole.get(key), list):
                yield from enumerate(whole[key], start=1)
                return
        yield 1, whole
        return
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield i, json.loads(line)
            except json.JSONDecodeError as exc:
                raise PeerFormatError(f"{path} line {i}: invalid JSON: {exc.msg}") from exc


def _pick(row: dict[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if row.get(name) not in (None, ""):
            return row[name]
    return None


#: DeepEval's flat-cell delimiter (``deepeval.dataset.utils.DELIMITER``): ``save_as`` joins
#: ``retrieval_context`` with it in JSONL and CSV files, and its loaders split on it.
DEEPEVAL_DELIMITER = "|"
#: how DeepEval writes a ``RetrievedContextData`` item (its source and its text)
_DEEPEVAL_MARKER = re.compile(r"^deepeval_source=(?P<source>.*?),deepeval_context=(?P<context>.*)$",
                              re.DOTALL)


def _deepeval_contexts(value: Any, where: str) -> list[tuple[str | None, str]]:
    """(source name, text) of each retrieval context as DeepEval writes them: a list (JSON)
    or one text joined with ``|`` (JSONL, CSV), split as DeepEval's loaders split it; an
    item ``deepeval_source=<name>,deepeval_context=<text>`` is a context with its source."""
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(DEEPEVAL_DELIMITER) if value else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PeerFormatError(f"{where}: the contexts must be a list of texts")
    out: list[tuple[str | None, str]] = []
    for item in value:
        match = _DEEPEVAL_MARKER.match(item)
        out.append((match["source"] or None, match["context"]) if match else (None, item))
    return out


def _contexts(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # a CSV cell: a JSON or Python list
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PeerFormatError(f"{where}: the contexts must be a list of texts")
    return value


def peer_to_record(row: Any, fmt: str, where: str) -> dict[str, Any]:
    """One row of a RAGAS / DeepEval dataset as an answer record (a dict in the JSONL
    schema); raises :class:`PeerFormatError` with ``where`` in the message."""
    if not isinstance(row, dict):
        raise PeerFormatError(f"{where}: expected an object, got {type(row).__name__}")
    q_keys, a_keys, c_keys, r_keys, id_keys = _KEYS[fmt]
    answer = _pick(row, a_keys)
    if not isinstance(answer, str) or is_blank(answer):
        raise PeerFormatError(f"{where}: no answer text ({' / '.join(a_keys)})")
    raw = _pick(row, c_keys)
    contexts = [(title, text) for title, text in (
        _deepeval_contexts(raw, where) if fmt == "deepeval"
        else [(None, c) for c in _contexts(raw, where)]) if not is_blank(text)]
    if not contexts:
        raise PeerFormatError(
            f"{where}: no retrieved contexts ({' / '.join(c_keys)}); the judge needs sources")
    sources: list[dict[str, Any]] = []
    for i, (title, text) in enumerate(contexts, start=1):
        sources.append({"id": f"C{i}", "text": text} | ({"title": title} if title else {}))
    record: dict[str, Any] = {
        "answer": answer,
        "sources": sources,
        "uncited": "all_sources",
    }
    question, reference, ident = _pick(row, q_keys), _pick(row, r_keys), _pick(row, id_keys)
    if isinstance(question, str) and question.strip():
        record["question"] = question
    if isinstance(reference, str) and reference.strip():
        record["reference"] = reference
    if ident is not None:
        record["id"] = str(ident)
    record = repair_record(record)  # mojibake repaired, the originals kept
    AnswerRecord.model_validate(record)  # the limits of the JSONL schema
    return record


def read_peer_file(path: str | Path, fmt: str) -> list[dict[str, Any]]:
    """Every row of a RAGAS or DeepEval dataset file as an answer record; any bad row raises
    :class:`PeerFormatError` naming its row (nothing is half-converted)."""
    from pydantic import ValidationError

    if fmt not in PEER_FORMATS:
        raise PeerFormatError(f"format must be one of {', '.join(PEER_FORMATS)}, not {fmt!r}")
    path = Path(path)
    records, problems = [], []
    for number, row in _rows(path):
        try:
            records.append(peer_to_record(row, fmt, f"row {number}"))
        except PeerFormatError as exc:
            problems.append(str(exc))
        except ValidationError as exc:
            from judge.records.jsonl import explain

            problems.append(f"row {number}: {explain(exc)}")
    if problems:
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise PeerFormatError(f"{len(problems)} bad row(s) in {path} ({fmt}):\n"
                              + "\n".join(problems[:20]) + more)
    if not records:
        raise PeerFormatError(f"{path} holds no rows")
    return records


def record_to_peer(record: AnswerRecord, fmt: str) -> dict[str, Any]:
    """An answer record in the RAGAS (``SingleTurnSample``) or DeepEval (golden) schema.
    JSON sources become their JSON text."""
    contexts = [s.content for s in record.sources]
    if fmt == "ragas":
        row: dict[str, Any] = {"id": record.answer_id, "user_input": record.question,
                               "retrieved_contexts": contexts, "response": record.answer}
        if record.reference is not None:
            row["reference"] = record.reference
        return row
    if fmt == "deepeval":
        return {"name": record.answer_id, "input": record.question or "",
                "actual_output": record.answer, "expected_output": record.reference,
                "retrieval_context": contexts}
    raise PeerFormatError(f"format must be one of {', '.join(PEER_FORMATS)}, not {fmt!r}")


def peer_lines(records: Iterable[AnswerRecord], fmt: str) -> Iterator[str]:
    """RAGAS as JSONL (``EvaluationDataset.from_jsonl`` reads it); DeepEval as a JSON array
    (``add_test_cases_from_json_file`` / ``add_goldens_from_json_file`` read it)."""
    if fmt == "ragas":
        for record in records:
            yield json.dumps(record_to_peer(record, fmt), ensure_ascii=False) + "\n"
        return
    rows = [record_to_peer(r, fmt) for r in records]
    yield json.dumps(rows, ensure_ascii=False, indent=1) + "\n"
