"""The loopback OpenAI-compatible server of :mod:`tests.support.openai_server` with the files
and batches endpoints (``judge run --batch-api``), and faults of its own.

Beside ``POST /v1/chat/completions`` it answers ``POST /v1/files`` (multipart, purpose
``batch``), ``GET /v1/files/{id}`` and ``/v1/files/{id}/content``, ``POST /v1/batches``,
``GET /v1/batches/{id}`` and ``GET /v1/batches`` (the list). A batch's requests are answered
by the same responder as the online calls (so verdicts can be compared), all at once on the
first retrieve ``batch_delay_s`` after it was created. Faults are queued and taken by the
next batch created::

    with BatchServer() as server:
        server.batch_fault("expire", keep=0.5)    # expires with the first half answered
        server.batch_fault("fail_share", share=0.3)  # 30 % of its requests fail (error file)
        server.batch_fault("never")               # in_progress for ever
        server.batch_fault("failed")              # the whole batch fails validation

``server.batch_lines`` counts every request line received in a batch file (by custom id),
``server.calls()`` the online chat calls, as for :class:`OpenAIServer`.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.support.openai_server import KINDS, OpenAIServer, _text, schema_of


@dataclass
class BatchFault:
    kind: str  # expire | fail_share | never | failed
    keep: float = 0.5
    share: float = 0.3


@dataclass
class Batch:
    id: str
    input_file_id: str
    endpoint: str
    metadata: dict[str, Any]
    created_at: float
    fault: BatchFault | None
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0,
                                                            "failed": 0})

    def as_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "object": "batch", "endpoint": self.endpoint,
               "input_file_id": self.input_file_id, "completion_window": "24h",
               "status": self.status, "output_file_id": self.output_file_id,
               "error_file_id": self.error_file_id, "created_at": int(self.created_at),
               "request_counts": dict(self.counts), "metadata": self.metadata or None,
               "errors": None}
        if self.status == "failed":
            out["errors"] = {"object": "list", "data": [
                {"code": "invalid_request", "message": "injected: the batch failed validation",
                 "line": 1}]}
        return out


class BatchServer(OpenAIServer):
    """:class:`OpenAIServer` with the files and batches endpoints."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.files: dict[str, tuple[str, bytes]] = {}  # id -> (purpose, content)
        self.batches: dict[str, Batch] = {}
        self.batch_faults: list[BatchFault] = []
        #: custom id -> how many times it was received in a batch file
        self.batch_lines: Counter[str] = Counter()
        #: seconds after its creation before a batch is answered
        self.batch_delay_s = 0.0

    def batch_fault(self, kind: str, **options: Any) -> None:
        with self.lock:
            self.batch_faults.append(BatchFault(kind, **options))

    # -- routes -------------------------------------------------------------------------------

    def route(self, handler: Any, method: str, raw: bytes) -> bool:
        path = handler.path.split("?")[0].rstrip("/")
        parts = path.split("/")
        if "files" not in parts and "batches" not in parts:
            return False
        at = parts.index("files") if "files" in parts else parts.index("batches")
        rest = parts[at + 1:]
        if parts[at] == "files":
            if method == "POST" and not rest:
                handler._send(200, self._upload(handler.headers.get("Content-Type", ""), raw))
            elif method == "GET" and len(rest) == 2 and rest[1] == "content":
                found = self.files.get(rest[0])
                if found is None:
                    handler._send(404, {"error": {"message": f"no file {rest[0]}"}})
                else:
                    handler._send(200, None, raw=found[1])
            elif method == "GET" and len(rest) == 1 and rest[0] in self.files:
                handler._send(200, self._file_object(rest[0]))
            else:
                handler._send(404, {"error": {"message": "not found"}})
            return True
        if method == "POST" and not rest:
            handler._send(200, self._create(json.loads(raw or b"{}")))
        elif method == "GET" and not rest:
            with self.lock:
                data = [b.as_dict() for b in self.batches.values()]
            handler._send(200, {"object": "list", "data": data[::-1], "has_more": False})
        elif method == "GET" and len(rest) == 1 and rest[0] in self.batches:
            handler._send(200, self._retrieve(rest[0]))
        else:
            handler._send(404, {"error": {"message": "not found"}})
        return True

    def _file_object(self, file_id: str) -> dict[str, Any]:
        purpose, content = self.files[file_id]
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at":
                int(time.time()), "filename": f"{file_id}.jsonl", "purpose": purpose,
                "status": "processed"}

    def _upload(self, content_type: str, raw: bytes) -> dict[str, Any]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        purpose, content = "batch", b""
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True) or b""
            if name == "purpose":
                purpose = payload.decode()
            elif name == "file":
                content = payload
        file_id = f"file-{uuid.uuid4().hex[:16]}"
        with self.lock:
            self.files[file_id] = (purpose, content)
        return self._file_object(file_id)

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            fault = self.batch_faults.pop(0) if self.batch_faults else None
            batch = Batch(f"batch_{uuid.uuid4().hex[:16]}", body["input_file_id"],
                          body.get("endpoint", ""), body.get("metadata") or {}, time.time(),
                          fault)
            lines = self._lines(batch.input_file_id)
            batch.counts["total"] = len(lines)
            for line in lines:
                self.batch_lines[line["custom_id"]] += 1
            self.batches[batch.id] = batch
        return batch.as_dict()

    def _lines(self, file_id: str) -> list[dict[str, Any]]:
        _, content = self.files[file_id]
        return [json.loads(x) for x in content.decode().splitlines() if x.strip()]

    def _retrieve(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if batch.status in ("validating", "in_progress") and \
                time.time() - batch.created_at >= self.batch_delay_s:
            self._finish(batch)
        elif batch.status == "validating":
            batch.status = "in_progress"
        return batch.as_dict()

    def _finish(self, batch: Batch) -> None:
        fault = batch.fault
        if fault is not None and fault.kind == "never":
            batch.status = "in_progress"
            return
        if fault is not None and fault.kind == "failed":
            batch.status = "failed"
            return
        lines = self._lines(batch.input_file_id)
        answered = len(lines)
        if fault is not None and fault.kind == "expire":
            answered = int(len(lines) * fault.keep)
        failing = int(len(lines) * fault.share) if fault and fault.kind == "fail_share" else 0
        out, errors = [], []
        for k, line in enumerate(lines):
            ident = f"batch_req_{uuid.uuid4().hex[:12]}"
            if k >= answered:
                errors.append({"id": ident, "custom_id": line["custom_id"], "response": None,
                               "error": {"code": "batch_expired", "message":
                                         "This request could not be executed before the "
                                         "completion window expired."}})
            elif k < failing:
                errors.append({"id": ident, "custom_id": line["custom_id"], "response": {
                    "status_code": 500, "request_id": ident,
                    "body": {"error": {"message": "injected: the server had an error",
                                       "type": "server_error"}}}, "error": None})
            else:
                out.append({"id": ident, "custom_id": line["custom_id"], "response": {
                    "status_code": 200, "request_id": ident,
                    "body": self.complete(line["body"])}, "error": None})
        batch.counts.update(completed=len(out), failed=len(errors))
        if out:
            batch.output_file_id = self._store_file(out)
        if errors:
            batch.error_file_id = self._store_file(errors)
        batch.status = "expired" if fault is not None and fault.kind == "expire" \
            else "completed"

    def _store_file(self, rows: list[dict[str, Any]]) -> str:
        file_id = f"file-{uuid.uuid4().hex[:16]}"
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
        self.files[file_id] = ("batch_output", data)
        return file_id

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """A chat completion's body, as the online endpoint answers it (no faults)."""
        schema = schema_of(body)
        messages = [{**m, "content": _text(m.get("content"))} for m in body.get("messages", [])]
        assert KINDS.get(schema, "other") != "other" or schema == "", schema
        return self._completion(body, self._answer(schema, messages, None))


def vllm_output(requests: str, complete: Any) -> str:
    """What ``vllm run-batch -i requests.jsonl -o out.jsonl`` writes for a batch input file
    (one line per request, in order): ``complete(body)`` answers a request's body."""
    out = []
    for line in requests.splitlines():
        if not line.strip():
            continue
        request = json.loads(line)
        out.append({"id": f"vllm-{uuid.uuid4().hex}", "custom_id": request["custom_id"],
                    "response": {"status_code": 200, "request_id": f"vllm-batch-{uuid.uuid4().hex}",
                                 "body": complete(request["body"])}, "error": None})
    return "".join(json.dumps(r) + "\n" for r in out)
