"""A real OpenAI-compatible chat endpoint on 127.0.0.1 for tests, with switchable faults.

It answers ``POST /v1/chat/completions`` (and ``POST /v1/embeddings``, strategy probe) over
real HTTP (a stdlib threading server), with the
same transparent rule as :func:`tests.fakes.rule_responder` (one claim per answer sentence; a
claim is ``supported`` with itself as the quote when it occurs verbatim in a source), so the
product's litellm path (``openai/<name>`` with ``api_base``) is exercised end to end. Every
request is recorded. Faults are queued and served in order, one per request, before normal
answers resume::

    with OpenAIServer() as server:
        server.fault("status", status=503, times=2)      # two 503s, then normal answers
        server.fault("status", status=500, content="...") # an error with this message
        server.fault("status", status=429, retry_after=1)
        server.fault("status", status=401, echo=True)     # the message echoes the request's
                                                          # path and headers (the key too)
        server.fault("hang", seconds=30)                  # holds the request open
        server.fault("malformed")                         # a body that is not JSON
        server.fault("truncated")                         # finish_reason "length", cut JSON
        server.fault("content", content='{"nope": 1}')   # any content (wrong schema, ...)
        server.fault("model", model="openai/gpt-4o")     # answers as another model
        server.fault("logprobs", top={"A": 0.5, "B": -1}) # impossible log-probabilities
        server.fault("drop", keep=1)                      # the split (or judge) keeps 1 claim
        server.fault("skip", sentence=2, reason="advice") # the split skips sentence 2 (as advice)
        server.fault("rewrite", text="The moon is cheese.")  # the split rewrites every claim
        server.fault("nearest", candidates=[...])  # each claim becomes the source sentence
                                # closest to it (judge: the prompt's sources), judged supported
        server.fault("repeat")  # every claim says what the first one says (a true statement)
        server.fault("conflict")                          # every claim judged twice, differently
                                                          # (verify, and judge: one_call)
        server.fault("vector", vector=[float("nan")])     # /v1/embeddings: this vector instead
        # a fault can be limited to one kind of call: split, verify, judge, label, choice
        server.fault("content", content='{"claims": []}', only="split")
        # after=1: the first matching request is served normally, the fault hits the next
        # times=0: until cleared (an outage)
        server.fault("status", status=503, times=0)

Run standalone (for a subprocess under test): ``python -m tests.support.openai_server --port
0 [--latency S]`` prints ``PORT <n>`` and serves until killed; ``POST /_fault`` takes the same
keyword arguments as :meth:`OpenAIServer.fault` as JSON, ``POST /_clear`` drops queued faults,
``GET /_requests`` lists what was received.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from judge.text import split_sentences, tokens
from tests.fakes import (
    CHOICE,
    Reply,
    answer_lines,
    claim_in_evidence_vector,
    framed_sources,
    rule_responder,
    split_sentences_of,
    verbatim_judgement,
)

Responder = Callable[[str, list[dict[str, Any]]], "str | Reply | Exception"]

#: which kind of call a request is, from its response schema
KINDS = {"SplitOutput": "split", "SplitOutputV2": "split", "VerifyOutput": "verify",
         "CompactVerifyOutput": "verify", "JointOutput": "judge",
         "ClaimLabel": "label",
         CHOICE: "choice"}


@dataclass
class Fault:
    kind: str
    times: int = 1
    only: str | None = None
    status: int = 500
    retry_after: float | None = None
    seconds: float = 30.0
    content: str = ""
    model: str | None = None
    top: dict[str, float] = field(default_factory=dict)
    keep: int = 1
    vector: list[float] = field(default_factory=list)
    sentence: int = 2
    reason: str = "advice"
    text: str = ""
    #: sentences a "nearest" fault picks from (judge calls: the prompt's sources when empty)
    candidates: list[str] = field(default_factory=list)
    #: matching requests served normally before the fault applies
    after: int = 0
    #: a status fault's message echoes the request's path and headers, as some providers do
    echo: bool = False


def schema_of(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("json_schema"):
        return str(fmt["json_schema"].get("name", ""))
    if body.get("logprobs") and not fmt:
        return CHOICE
    return ""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (a timeout, a killed process) is no error of the server's."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class OpenAIServer:
    """Start with ``with OpenAIServer() as server`` (or :meth:`start`); ``server.base_url``
    is the ``api_base`` to give litellm."""

    def __init__(self, responder: Responder = rule_responder, host: str = "127.0.0.1",
                 port: int = 0, model: str | None = None) -> None:
        self.responder = responder
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.lock = threading.Lock()
        self.latency_s = 0.0
        #: the model ids ``GET /v1/models`` lists
        self.served_models = ["fake"]
        #: ``/v1/embeddings``: the vectors are multiplied by this (1: unit vectors)
        self.vector_scale = 1.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                if server.route(self, "GET", b""):
                    return
                if self.path.startswith("/_requests"):
                    with server.lock:
                        self._send(200, server.requests)
                elif self.path.startswith("/v1/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": name, "object": "model"} for name in server.served_models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if server.route(self, "POST", raw):
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "invalid JSON"}})
                    return
                if self.path.startswith("/_fault"):
                    server.fault(**body)
                    self._send(200, {"ok": True})
                    return
                if self.path.startswith("/_clear"):
                    server.clear()
                    self._send(200, {"ok": True})
                    return
                if self.path.rstrip("/").endswith("/embeddings"):
                    server._serve_embeddings(self, body)
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                server._serve_chat(self, body)

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                      raw: bytes | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

        self.httpd = _QuietServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    # -- control ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> OpenAIServer:
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def fault(self, kind: str, **options: Any) -> None:
        """Queue a fault (see the module docstring)."""
        with self.lock:
            self.faults.append(Fault(kind, **options))

    def clear(self) -> None:
        with self.lock:
            self.faults.clear()

    def calls(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Requests received (of one kind: split, verify, label, choice)."""
        with self.lock:
            return [r for r in self.requests if kind is None or r["kind"] == kind]

    # -- serving ----------------------------------------------------------------------------

    def route(self, handler: Any, method: str, raw: bytes) -> bool:
        """A subclass serves more paths here (True: served); ``raw`` is a POST's body."""
        return False

    def _take_fault(self, kind: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.only in (None, kind):
                    if fault.after > 0:  # not yet: this request is served normally
                        fault.after -= 1
                        return None
                    if fault.times > 0:  # 0: until cleared
                        fault.times -= 1
                        if fault.times == 0:
                            self.faults.remove(fault)
                    return fault
        return None

    def _serve_chat(self, handler: Any, body: dict[str, Any]) -> None:
        schema = schema_of(body)
        kind = KINDS.get(schema, schema or "other")
        messages = [{**m, "content": _text(m.get("content"))} for m in body.get("messages", [])]
        fault = self._take_fault(kind)
        with self.lock:
            self.requests.append({"kind": kind, "model": body.get("model"), "time": time.time(),
                                  "fault": fault.kind if fault else None, "body": body,
                                  "headers": dict(handler.headers)})
        if self.latency_s:
            time.sleep(self.latency_s)
        if fault is not None and fault.kind == "status":
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = f"{fault.retry_after:g}"
            message = fault.content or f"injected {fault.status}"
            if fault.echo:
                message += f"; request {handler.path} with headers {dict(handler.headers)}"
            handler._send(fault.status, {"error": {"message": message,
                                                   "type": "server_error"}}, headers)
            return
        if fault is not None and fault.kind == "hang":
            time.sleep(fault.seconds)
            handler._send(504, {"error": {"message": "hung"}})
            return
        if fault is not None and fault.kind == "malformed":
            handler._send(200, None, raw=b'{"id": "x", "choices": [ {"message": ')
            return
        reply = self._answer(schema, messages, fault)
        handler._send(200, self._completion(body, reply))

    def _serve_embeddings(self, handler: Any, body: dict[str, Any]) -> None:
        """``POST /v1/embeddings`` (strategy probe): each input's vector from
        :func:`tests.fakes.claim_in_evidence_vector`; faults: status, hang, malformed, and
        ``vector`` (this vector instead, e.g. with NaN or of another length)."""
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        fault = self._take_fault("embed")
        with self.lock:
            self.requests.append({"kind": "embed", "model": body.get("model"),
                                  "time": time.time(), "fault": fault.kind if fault else None,
                                  "body": body})
        if self.latency_s:
            time.sleep(self.latency_s)
        if fault is not None and fault.kind in ("status", "hang", "malformed"):
            if fault.kind == "status":
                handler._send(fault.status, {"error": {"message": fault.content
                                                   or f"injected {fault.status}",
                                                       "type": "server_error"}})
            elif fault.kind == "hang":
                time.sleep(fault.seconds)
                handler._send(504, {"error": {"message": "hung"}})
            else:
                handler._send(200, None, raw=b'{"object": "list", "data": [ {"embedding": ')
            return
        data = [{"object": "embedding", "index": k,
                 "embedding": list(fault.vector) if fault is not None and fault.kind == "vector"
                 else [self.vector_scale * v for v in claim_in_evidence_vector(str(text))]}
                for k, text in enumerate(inputs)]
        tokens = sum(len(str(t)) for t in inputs) // 4
        handler._send(200, {"object": "list", "data": data,
                            "model": (fault.model if fault is not None and fault.model else None)
                            or self.model or body.get("model"),
                            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def _answer(self, schema: str, messages: list[dict[str, Any]], fault: Fault | None) -> Reply:
        if fault is not None and fault.kind == "content":
            return Reply(fault.content)
        out = self.responder(schema, messages)
        if isinstance(out, Exception):
            return Reply(json.dumps({"error": str(out)}))
        reply = out if isinstance(out, Reply) else Reply(out)
        if fault is not None and fault.kind == "truncated":
            return Reply(reply.content[: max(1, len(reply.content) // 2)], finish_reason="length")
        if fault is not None and fault.kind == "model":
            return Reply(reply.content, reply.finish_reason, fault.model, reply.top_logprobs)
        if fault is not None and fault.kind == "logprobs":
            return Reply(reply.content, reply.finish_reason, reply.model, dict(fault.top))
        if fault is not None and fault.kind == "drop" and (
                schema.startswith("SplitOutput") or schema == "JointOutput"):
            data = json.loads(reply.content)
            data["claims"] = data["claims"][: fault.keep]
            return Reply(json.dumps(data, ensure_ascii=False))
        if fault is not None and fault.kind == "skip" and (
                schema.startswith("SplitOutput") or schema == "JointOutput"):
            data = json.loads(reply.content)
            data["claims"] = [c for c in data["claims"] if c["sentence"] != fault.sentence]
            data["skipped"] = [*data.get("skipped", []),
                               {"sentence": fault.sentence, "reason": fault.reason}]
            return Reply(json.dumps(data, ensure_ascii=False))
        if fault is not None and fault.kind == "rewrite" and (
                schema.startswith("SplitOutput") or schema == "JointOutput"):
            data = json.loads(reply.content)
            data["claims"] = [{**c, "text": fault.text} for c in data["claims"]]
            return Reply(json.dumps(data, ensure_ascii=False))
        if fault is not None and fault.kind in ("nearest", "repeat") and (
                schema.startswith("SplitOutput") or schema == "JointOutput"):
            return Reply(_substituted(fault, schema, messages, json.loads(reply.content)))
        if fault is not None and fault.kind == "conflict" and (
                schema.endswith("VerifyOutput") or schema == "JointOutput"):
            data = json.loads(reply.content)
            key = "claims" if schema == "JointOutput" else "judgements"
            twins = [{**j, "label": "contradicted" if j["label"] == "supported" else "supported",
                      "subtype": "numeric_or_version_error" if j["label"] == "supported"
                      else None} for j in data[key]]
            data[key] = [x for pair in zip(data[key], twins, strict=True) for x in pair]
            return Reply(json.dumps(data, ensure_ascii=False))
        return reply

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        choice: dict[str, Any] = {
            "index": 0, "finish_reason": reply.finish_reason,
            "message": {"role": "assistant", "content": reply.content},
        }
        if reply.token_logprobs is not None and body.get("logprobs"):
            choice["logprobs"] = {"content": [  # every token, as OpenAI gives them
                {"token": t, "logprob": v, "bytes": list(t.encode()), "top_logprobs": [
                    {"token": a, "logprob": w, "bytes": list(a.encode())}
                    for a, w in top.items()]}
                for t, v, top in reply.token_logprobs]}
        elif reply.top_logprobs is not None and body.get("logprobs"):
            top = [{"token": t, "logprob": v, "bytes": None}
                   for t, v in sorted(reply.top_logprobs.items(), key=lambda kv: -kv[1])]
            choice["logprobs"] = {"content": [{
                "token": reply.content, "logprob": reply.top_logprobs.get(reply.content, -50.0),
                "bytes": None, "top_logprobs": top}]}
        prompt = sum(len(_text(m.get("content"))) for m in body.get("messages", [])) // 4
        completion = max(1, len(reply.content) // 4)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": reply.model or self.model or body.get("model"),
            "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion,
                      **({} if reply.cached_tokens is None else
                         {"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}})},
        }


def _substituted(fault: Fault, schema: str, messages: list[dict[str, Any]],
                 data: dict[str, Any]) -> str:
    """A split (or ``judge_answer`` output) whose claims say something other than their
    sentences: "nearest" puts in each claim's place the candidate sentence sharing most words
    with it (a source's sentence: true, and judged ``supported`` by a ``judge`` call);
    "repeat" gives every sentence the first claim's statement (true when the first sentence
    is)."""
    user = messages[-1]["content"] if messages else ""
    sentences = dict(answer_lines(user) if schema == "JointOutput"
                     else [(int(n), t) for n, t in split_sentences_of(user)])
    sources = framed_sources(user)
    candidates = list(fault.candidates) or [
        body[s:e].strip() for _, body in sources for s, e in split_sentences(body)]
    first = None
    for claim in data["claims"]:
        text = claim.get("text") or sentences.get(claim["sentence"], "")
        if fault.kind == "nearest":
            words = set(tokens(text))
            text = max(candidates, key=lambda c: len(words & set(tokens(c))))
        else:
            first = first or text
            text = first
        claim["text"] = text
        if schema == "JointOutput":
            claim.update(verbatim_judgement(text.rstrip(".。"), sources))
    return json.dumps(data, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    args = parser.parse_args(argv)
    server = OpenAIServer(port=args.port).start()
    server.latency_s = args.latency
    print(f"PORT {server.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
