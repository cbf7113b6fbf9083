"""A GGUF that stops after its first N transformer blocks, for reading an earlier layer's
hidden state (strategy ``probe`` with ``probe_layers``).

llama.cpp gives the embeddings of the last layer only (after the final norm). A copy of the
model file that keeps the token embeddings, the final norm, the output matrix and blocks
``0 .. N-1`` (and says ``<arch>.block_count = N``) computes exactly the first N blocks of the
original, then the final norm: the hidden state after block N, in N/L of the time.

The copy is written by this module (GGUF v2/v3: header, metadata, tensor table, aligned data;
the tensors' bytes are copied unchanged), next to the model in the cache folder, atomically.
The copy is a function of the source's bytes and N, so :func:`cut_sha256` gives the hash it
must have without writing it (:func:`judge.models.embedded.layered_file` checks a cut against
that, or against the hash pinned for the packaged model). Nothing is quantised or converted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["GGUFError", "GGUFLayout", "check_gguf", "cut_sha256", "read_layout", "truncated_copy"]

MAGIC = b"GGUF"
#: byte sizes of GGUF's fixed-size metadata value types
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY, _UINT32, _UINT64 = 8, 9, 4, 10
_BLOCK = re.compile(r"blk\.(\d+)\.")
_COPY = 8 * 1024 * 1024


class GGUFError(ValueError):
    """The file is not a GGUF this module can read, or cannot be cut where asked."""


@dataclass(frozen=True)
class _Tensor:
    name: str
    info: bytes  # the tensor's whole entry in the table, offset excluded
    offset: int  # from the start of the data section
    size: int  # bytes to the next tensor (or the end of the file), its padding included


@dataclass(frozen=True)
class GGUFLayout:
    """What the copy needs of a GGUF: its header fields, metadata entries and tensor table."""

    version: int
    architecture: str
    block_count: int
    alignment: int
    metadata: list[tuple[str, bytes, int, int]]  # key, raw entry, value offset, value type
    tensors: list[_Tensor]
    data_start: int


class _Reader:
    def __init__(self, fh: BinaryIO, path: Path) -> None:
        self.fh = fh
        self.path = path
        self.pos = 0

    def take(self, n: int) -> bytes:
        data = self.fh.read(n)
        if len(data) != n:
            raise GGUFError(f"{self.path}: truncated GGUF (wanted {n} bytes at {self.pos})")
        self.pos += n
        return bytes(data)

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def string(self) -> bytes:
        n = self.u64()
        if n > 1 << 24:
            raise GGUFError(f"{self.path}: implausible string length {n} at {self.pos}")
        return self.take(n)

    def value(self, kind: int) -> bytes:
        """The raw bytes of one metadata value of type ``kind``."""
        if kind in _FIXED:
            return self.take(_FIXED[kind])
        if kind == _STRING:
            raw = self.string()
            return struct.pack("<Q", len(raw)) + raw
        if kind == _ARRAY:
            inner, count = self.u32(), self.u64()
            head = struct.pack("<IQ", inner, count)
            if inner in _FIXED:
                return head + self.take(_FIXED[inner] * count)
            return head + b"".join(self.value(inner) for _ in range(count))
        raise GGUFError(f"{self.path}: unknown metadata type {kind} at {self.pos}")


def read_layout(path: Path) -> GGUFLayout:
    """The layout of ``path`` (header, metadata and tensor table; the data is not read)."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        reader = _Reader(fh, path)
        if reader.take(4) != MAGIC:
            raise GGUFError(f"{path} is not a GGUF file")
        version = reader.u32()
        if version not in (2, 3):
            raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
        n_tensors, n_meta = reader.u64(), reader.u64()
        metadata: list[tuple[str, bytes, int, int]] = []
        values: dict[str, tuple[int, bytes]] = {}
        for _ in range(n_meta):
            key = reader.string()
            kind = reader.u32()
            raw_value = reader.value(kind)
            head = struct.pack("<Q", len(key)) + key + struct.pack("<I", kind)
            name = key.decode("utf-8", "replace")
            metadata.append((name, head + raw_value, len(head), kind))
            values[name] = (kind, raw_value)
        entries: list[tuple[str, bytes, int]] = []
        for _ in range(n_tensors):
            tensor = reader.string()
            dims = reader.u32()
            shape = reader.take(8 * dims)
            dtype = reader.take(4)
            offset = reader.u64()
            info = struct.pack("<Q", len(tensor)) + tensor + struct.pack("<I", dims) + shape
            entries.append((tensor.decode("utf-8", "replace"), info + dtype, offset))
        table_end = reader.pos
    alignment = _int_value(values, "general.alignment", path) if "general.alignment" in values \
        else 32
    if alignment <= 0 or alignment & (alignment - 1):
        raise GGUFError(f"{path}: alignment {alignment} is not a power of two")
    architecture = _text_value(values, "general.architecture", path)
    block_count = _int_value(values, f"{architecture}.block_count", path)
    data_start = -(-table_end // alignment) * alignment
    ends = sorted({offset for _, _, offset in entries}) + [size - data_start]
    following = {offset: ends[k + 1] for k, offset in enumerate(ends[:-1])}
    tensors = [_Tensor(name, info, offset, following[offset] - offset)
               for name, info, offset in entries]
    return GGUFLayout(version, architecture, block_count, alignment, metadata, tensors,
                      data_start)


def _int_value(values: dict[str, tuple[int, bytes]], key: str, path: Path) -> int:
    if key not in values:
        raise GGUFError(f"{path}: no {key!r} in the metadata")
    kind, raw = values[key]
    if kind == _UINT32:
        return int(struct.unpack("<I", raw)[0])
    if kind == _UINT64:
        return int(struct.unpack("<Q", raw)[0])
    raise GGUFError(f"{path}: {key!r} is not an unsigned integer (type {kind})")


def _text_value(values: dict[str, tuple[int, bytes]], key: str, path: Path) -> str:
    if key not in values or values[key][0] != _STRING:
        raise GGUFError(f"{path}: no text {key!r} in the metadata")
    return values[key][1][8:].decode("utf-8")


#: ggml tensor types: (values per block, bytes per block)
_TYPE_SIZES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
               8: (32, 34), 9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144),
               13: (256, 176), 14: (256, 210), 15: (256, 292), 24: (1, 1), 25: (1, 2),
               26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2)}


def _tensor_bytes(tensor: _Tensor) -> int | None:
    """The bytes a tensor's data takes by its shape and type (None: a type not known here)."""
    name_len = struct.unpack_from("<Q", tensor.info)[0]
    dims = struct.unpack_from("<I", tensor.info, 8 + name_len)[0]
    shape = struct.unpack_from(f"<{dims}Q", tensor.info, 12 + name_len)
    dtype = struct.unpack_from("<I", tensor.info, len(tensor.info) - 4)[0]
    if dtype not in _TYPE_SIZES:
        return None
    per_block, block_bytes = _TYPE_SIZES[dtype]
    count = 1
    for n in shape:
        count *= n
    return -(-count // per_block) * block_bytes


def check_gguf(path: Path) -> GGUFLayout:
    """The layout of ``path`` when it reads as a whole GGUF file: a GGUF header, metadata and
    tensor table, and every tensor's data inside the file (``GGUFError`` naming what is
    wrong: not a GGUF, truncated, a tensor past the end)."""
    layout = read_layout(path)
    if not layout.tensors:
        raise GGUFError(f"{path}: a GGUF without tensors is no model")
    for tensor in layout.tensors:
        wanted = _tensor_bytes(tensor)
        if tensor.size <= 0 or (wanted is not None and wanted > tensor.size):
            raise GGUFError(f"{path}: truncated GGUF (tensor "
                            f"{tensor.name} needs {wanted or 1} bytes, the file holds "
                            f"{max(tensor.size, 0)})")
    return layout


def _cut(source: Path, layers: int) -> Iterator[bytes]:
    """The bytes of ``source`` cut after its first ``layers`` blocks, in order (``GGUFError``
    when ``layers`` is not between 1 and the model's block count minus 1)."""
    layout = read_layout(source)
    if not 1 <= layers < layout.block_count:
        raise GGUFError(f"{source.name} has {layout.block_count} blocks: probe_layers must be "
                        f"between 1 and {layout.block_count - 1} (got {layers})")
    kept = [t for t in layout.tensors
            if not (m := _BLOCK.match(t.name)) or int(m.group(1)) < layers]
    align = layout.alignment
    header = bytearray(MAGIC + struct.pack("<IQQ", layout.version, len(kept),
                                           len(layout.metadata)))
    count_key = f"{layout.architecture}.block_count"
    for key, raw, value_at, kind in layout.metadata:
        entry = bytearray(raw)
        if key == count_key:
            struct.pack_into("<I" if kind == _UINT32 else "<Q", entry, value_at, layers)
        header += entry
    placed: list[tuple[_Tensor, int]] = []
    at = 0
    for tensor in kept:
        header += tensor.info + struct.pack("<Q", at)
        placed.append((tensor, at))
        at = -(-(at + tensor.size) // align) * align
    header += b"\0" * (-len(header) % align)
    yield bytes(header)
    written = len(header)
    base = len(header)
    with source.open("rb") as src:
        for tensor, offset in placed:
            if base + offset > written:
                yield b"\0" * (base + offset - written)
                written = base + offset
            src.seek(layout.data_start + tensor.offset)
            left = tensor.size
            while left:
                chunk = src.read(min(_COPY, left))
                if not chunk:
                    raise GGUFError(f"{source}: tensor {tensor.name} runs past the file")
                yield chunk
                written += len(chunk)
                left -= len(chunk)


def cut_sha256(source: Path, layers: int) -> str:
    """The sha256 :func:`truncated_copy` would give the cut, computed without writing it."""
    hasher = hashlib.sha256()
    for chunk in _cut(source, layers):
        hasher.update(chunk)
    return hasher.hexdigest()


def truncated_copy(source: Path, dest: Path, layers: int) -> Path:
    """Write ``dest``: ``source`` with its first ``layers`` blocks only (``GGUFError`` when
    ``layers`` is not between 1 and the model's block count minus 1). Atomic: a temporary file
    next to ``dest``, fsynced, renamed into place."""
    chunks = _cut(source, layers)
    first = next(chunks)  # the layout is read and checked before anything is written
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o644)
            out.write(first)
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return dest
