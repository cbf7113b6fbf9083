"""The embedded model's runtime: xllamacpp (llama.cpp's server, in process) with the settings
that keep its outputs a function of their prompts, its slots (:mod:`judge.models.slots`) and
its identity (:class:`RuntimeInfo`). :mod:`judge.models.embedded` loads and holds the
runtimes."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judge.models.prefix_files import PrefixFiles, cpu_identity
from judge.models.slots import SlotPool

#: How llama.cpp loads the weights: read into memory rather than mapped, since it repacks most
#: of them for its CPU kernels anyway and a mapping keeps the file's pages resident beside the
#: repacked copy (about 0.4 GB more RSS a runtime; the same numbers and speed,
#: tests/models/test_embedded_probe.py compares the two).
LOAD_MODE = "LLAMA_LOAD_MODE_NONE"

#: Most slots a runtime may have (``CLAIM_JUDGE_SLOTS``).
MAX_SLOTS = 8
ENV_SLOTS = "CLAIM_JUDGE_SLOTS"


class EmbeddedModelError(RuntimeError):
    """The embedded model could not be provided (missing packages, bad file, runtime failure)."""


@dataclass(frozen=True)
class RuntimeInfo:
    """What is loaded, for logs and for ``system_fingerprint``."""

    path: Path
    gguf_id: str
    xllamacpp_version: str
    n_ctx: int
    n_threads: int
    prompt_cache: bool
    load_seconds: float
    slots: int = 1

    @property
    def fingerprint(self) -> str:
        """With several slots an output can depend on what it was decoded with: said here,
        so the calls record it."""
        batched = f"+slots{self.slots}" if self.slots > 1 else ""
        return f"xllamacpp-{self.xllamacpp_version}+{self.gguf_id}{batched}"


def positive_int(name: str, raw: str | None, default: int) -> int:
    """``raw``, the value of the environment variable ``name``, as a positive integer
    (``default`` when it is unset or empty)."""
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise EmbeddedModelError(f"{name}={raw!r} is not an integer") from exc
    if value <= 0:
        raise EmbeddedModelError(f"{name}={raw!r} must be positive")
    return value


def slots_wanted() -> int:
    """``$CLAIM_JUDGE_SLOTS`` (1 to ``MAX_SLOTS``), default 1."""
    slots = positive_int(ENV_SLOTS, os.environ.get(ENV_SLOTS), 1)
    if slots > MAX_SLOTS:
        raise EmbeddedModelError(f"{ENV_SLOTS}={str(slots)!r} is more than {MAX_SLOTS} slots")
    return slots


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Runtime:
    """The loaded xllamacpp server: its requests take the module's ``TURNS`` and a slot."""

    def __init__(
        self, path: Path, gguf_id: str, n_ctx: int, n_threads: int, prompt_cache: bool,
        slots: int = 1, prefix_folder: Path | None = None, token_states: bool = False,
    ) -> None:
        started = time.perf_counter()
        try:
            import xllamacpp as xlc
        except ImportError as exc:
            raise EmbeddedModelError(
                "the embedded model needs the 'xllamacpp' runtime; install the 'embedded' extra "
                "(pip install 'claim-judge[embedded]')"
            ) from exc

        params = xlc.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = slots
        # the slots share the context (a long request may use all of it); with one slot the
        # same numbers as a runtime of one
        params.kv_unified = True
        params.n_predict = -1
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        # Deterministic defaults; requests override temperature and seed.
        params.sampling.temp = 0.0
        params.sampling.seed = 0
        # Don't let llama.cpp shrink the context to "fit" memory behind our back.
        params.fit_params = False
        params.cache_prompt = prompt_cache
        # No copies of earlier prompts in RAM: a cached prefix is only ever the slot's own, which
        # is what lets judge.models.shared_prefix fix the split points.
        params.cache_ram_mib = 0
        params.ui = False
        params.load_mode = getattr(xlc.llama_load_mode, LOAD_MODE)
        # One context serves both generation and the probe's hidden states (strategy "probe"):
        # with embeddings on, llama.cpp still generates, with the same log-probabilities (a
        # test compares them), and a second context would double the memory. The vector is the
        # last token's final hidden state, unnormalised (with ``probe_layers`` the probe reads
        # a copy of the model cut after block N, in a runtime of its own: see load()).
        params.embedding = True
        # token_states: every token's state (llama.cpp's /embedding route, pooling none), of
        # which the last row is the LAST pooling's vector to the bit (judge.models.readers)
        params.pooling_type = (xlc.llama_pooling_type.LLAMA_POOLING_TYPE_NONE if token_states
                               else xlc.llama_pooling_type.LLAMA_POOLING_TYPE_LAST)
        if token_states:
            # every token's state comes out of one physical batch: at llama.cpp's 512 a probe
            # prompt longer than that (1,500 characters of Chinese evidence is ~1,000 tokens)
            # was refused. A prompt within 512 tokens is evaluated by the same graph, so its
            # states do not change (tests/models/test_token_states.py)
            params.n_batch = n_ctx
            params.n_ubatch = n_ctx
        params.embd_normalize = -1
        params.endpoint_slots = False
        params.endpoint_metrics = False
        params.verbosity = 0
        # xllamacpp also opens an HTTP listener on 127.0.0.1 (random port); lock it with a
        # throw-away key so other local users cannot drive the model through it.
        self._key = uuid.uuid4().hex + uuid.uuid4().hex
        params.api_keys = [self._key]
        if prefix_folder is not None:  # the instructions' states (judge.models.prefix_files,
            # which makes the folder when it first saves)
            params.slot_save_path = str(prefix_folder) + os.sep
        try:
            self._server = xlc.Server(params)
        except Exception as exc:
            raise EmbeddedModelError(f"xllamacpp could not load {path}: {exc}") from exc
        self.info = RuntimeInfo(
            path=path,
            gguf_id=gguf_id,
            xllamacpp_version=str(getattr(xlc, "__version__", "unknown")),
            n_ctx=n_ctx,
            n_threads=n_threads,
            prompt_cache=prompt_cache,
            load_seconds=time.perf_counter() - started,
            slots=slots,
        )
        files = None
        if prefix_folder is not None and getattr(self._server, "listening_address", None):
            identity = f"{self.info.fingerprint} threads-{n_threads} {cpu_identity()}"
            files = PrefixFiles(prefix_folder, identity, self._slot_action)
        self._slots = SlotPool(slots, self._call, files)

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        mode = request.get("shared_prefix")
        with self._slots.one() as (prefix, call):
            if mode:
                rest = {k: v for k, v in request.items() if k != "shared_prefix"}
                return (prefix.instructions(rest) if mode == "instructions"
                        else prefix.chat(rest))
            prefix.forget()
            return call("handle_chat_completions",
                        {**request, "cache_prompt": self.info.prompt_cache})

    def embed(self, text: str) -> dict[str, Any]:
        """The last token's hidden state for ``text`` (no chat template), evaluated afresh:
        every slot's cache is dropped first, so a vector never depends on what ran before."""
        with self._slots.every():
            return self._call("handle_embeddings", {"input": text})

    def token_states(self, text: str) -> tuple[np.ndarray, list[Any]]:
        """Every token's hidden state for ``text`` (one row a token, float32) and the
        tokenizer's pieces (strings, or byte lists where a piece is not whole UTF-8), evaluated
        afresh like :meth:`embed`. Needs a runtime loaded with ``token_states``."""
        with self._slots.every():
            pieces = self._listener("/tokenize", {"content": text, "with_pieces": True})
            answer = self._listener("/embedding", {"content": text})
        tokens = pieces.get("tokens") if isinstance(pieces, dict) else None
        rows = (answer[0].get("embedding") if isinstance(answer, list) and answer
                and isinstance(answer[0], dict) else None)
        if not isinstance(tokens, list) or not isinstance(rows, list):
            raise EmbeddedModelError(f"unexpected per-token answer: {str(answer)[:200]}")
        states = np.asarray(rows, dtype=np.float32)
        if states.ndim != 2 or states.shape[0] != len(tokens):
            raise EmbeddedModelError(f"{len(tokens)} tokens but hidden states of shape "
                                     f"{states.shape}")
        return states, [t.get("piece") if isinstance(t, dict) else None for t in tokens]

    def _listener(self, path: str, body: dict[str, Any]) -> Any:
        """A request to the runtime's own listener on 127.0.0.1 (no proxy), with its key."""
        address = getattr(self._server, "listening_address", None)
        if not address:
            raise EmbeddedModelError("the runtime has no local listener for per-token states")
        request = urllib.request.Request(
            f"{address}{path}", data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"Bearer {self._key}",
                     "Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=600) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise EmbeddedModelError(f"the runtime refused {path} (HTTP {exc.code}): "
                                     f"{detail}") from exc

    def _slot_action(self, slot: int, action: str, filename: str) -> dict[str, Any]:
        """llama.cpp's slot ``save`` or ``restore`` of ``filename`` in the prefix folder,
        through the runtime's own listener on 127.0.0.1 (no proxy), with its key."""
        request = urllib.request.Request(
            f"{self._server.listening_address}/slots/{slot}?action={action}",
            data=json.dumps({"filename": filename}).encode(), method="POST",
            headers={"Authorization": f"Bearer {self._key}",
                     "Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=120) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return {"error": f"HTTP {exc.code}"}
        return answer if isinstance(answer, dict) else {"error": "unexpected answer"}

    def _call(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        """One request to the runtime (``handle_chat_completions``, ``handle_completions``)."""
        result = getattr(self._server, method)(request)
        if isinstance(result, (str, bytes)):
            result = json.loads(result)
        if not isinstance(result, dict):
            raise EmbeddedModelError(f"unexpected runtime answer of type {type(result).__name__}")
        return result


