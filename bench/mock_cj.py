"""The shared peer mock (``shared/bench/peers/mock_server.py``) with this repo's
``bench/responder_cj.py`` installed, which answers verify_claims v1 and v2, and with the
OpenAI files and batches endpoints (``judge run --batch-api``).

    python bench/mock_cj.py --peers ../shared/bench/peers --port 8765 --log /tmp/mock.jsonl

Every other argument goes to mock_server.py; the peers' requests are answered by the shared
responder unchanged. A batch's requests are answered as the chat endpoint answers them (the
same responder, the same cl100k counts, under the current label) when the batch is created;
the label's counters then also hold ``batch_requests``. ``POST /v1/files`` takes the input
file (multipart), ``POST /v1/batches`` makes a batch of it, ``GET /v1/batches/{id}`` says it
is completed, ``GET /v1/files/{id}/content`` returns the output file.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from fastapi import Request, Response  # module-level: FastAPI reads the annotations


def answer(mock_server: Any, state: Any, body: dict[str, Any]) -> dict[str, Any]:
    """A chat completion's body for a batch request, counted as the chat endpoint counts."""
    import responder

    content, info = responder.answer(body)
    usage = mock_server.count_prompt(body)
    completion = mock_server.ntok(content)
    state.record({"label": state.label, "endpoint": "batch", "ts": time.time(),
                  "model": body.get("model"), "recognised": info, "response": content,
                  "params": {k: body.get(k) for k in ("temperature", "max_tokens", "seed")
                             if k in body},
                  "usage": {**usage, "completion_tokens": completion}, "server_ms": 0.0})
    with state.lock:
        state.stats[state.label]["batch_requests"] += 1
    return {"id": "chatcmpl-" + uuid.uuid4().hex, "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model") or "mock",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": completion,
                      "total_tokens": usage["prompt_tokens"] + completion}}


def add_batches(app: Any, mock_server: Any, state: Any) -> None:
    files: dict[str, bytes] = {}
    batches: dict[str, dict[str, Any]] = {}

    @app.post("/v1/files")
    async def upload(request: Request) -> dict[str, Any]:
        raw = await request.body()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode() + raw)
        content = b""
        for part in message.iter_parts():
            if part.get_param("name", header="content-disposition") == "file":
                content = part.get_payload(decode=True) or b""
        file_id = f"file-{uuid.uuid4().hex[:16]}"
        files[file_id] = content
        return {"id": file_id, "object": "file", "bytes": len(content), "purpose": "batch",
                "created_at": int(time.time()), "filename": "input.jsonl",
                "status": "processed"}

    @app.get("/v1/files/{file_id}/content")
    async def content(file_id: str) -> Response:
        return Response(files[file_id], media_type="application/jsonl")

    @app.post("/v1/batches")
    async def create(request: Request) -> dict[str, Any]:
        body = await request.json()
        lines = [json.loads(x) for x in files[body["input_file_id"]].decode().splitlines()
                 if x.strip()]
        out = [{"id": f"batch_req_{uuid.uuid4().hex[:12]}", "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": uuid.uuid4().hex,
                             "body": answer(mock_server, state, line["body"])}, "error": None}
               for line in lines]
        output = f"file-{uuid.uuid4().hex[:16]}"
        files[output] = "".join(json.dumps(r) + "\n" for r in out).encode()
        batch = {"id": f"batch_{uuid.uuid4().hex[:16]}", "object": "batch",
                 "endpoint": body.get("endpoint"), "input_file_id": body["input_file_id"],
                 "completion_window": "24h", "status": "completed", "output_file_id": output,
                 "error_file_id": None, "created_at": int(time.time()),
                 "request_counts": {"total": len(out), "completed": len(out), "failed": 0},
                 "metadata": body.get("metadata"), "errors": None}
        batches[batch["id"]] = batch
        return batch

    @app.get("/v1/batches/{batch_id}")
    async def retrieve(batch_id: str) -> dict[str, Any]:
        return batches[batch_id]

    @app.get("/v1/batches")
    async def listed() -> dict[str, Any]:
        return {"object": "list", "data": list(batches.values())[::-1], "has_more": False}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--peers", required=True)
    known, rest = parser.parse_known_args()
    sys.path[:0] = [str(Path(__file__).resolve().parent), known.peers]
    import responder_cj  # bench/responder_cj.py (this repo's copy)

    responder_cj.install()
    import mock_server
    import uvicorn

    options = argparse.ArgumentParser()
    options.add_argument("--host", default="127.0.0.1")
    options.add_argument("--port", type=int, default=8765)
    options.add_argument("--log", default="mock-requests.jsonl")
    options.add_argument("--latency-ms", type=float, default=0.0)
    args = options.parse_args(rest)
    state = mock_server.State(args.log, args.latency_ms)
    app = mock_server.build_app(state)
    add_batches(app, mock_server, state)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
