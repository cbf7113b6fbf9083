"""Cutting a GGUF after its first N blocks (``probe_layers``): a small GGUF written here byte by
byte, cut, and read back; the tensors kept are byte for byte the original's, aligned, and the
metadata says the new block count. The real model's cut is in test_embedded_probe.py."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from judge.models.gguf_layers import GGUFError, read_layout, truncated_copy


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, kind: int, value: bytes) -> bytes:
    return _string(key) + struct.pack("<I", kind) + value


def toy_gguf(path: Path, blocks: int = 3, alignment: int = 32, count_type: int = 4) -> dict:
    """A GGUF v3 of architecture ``toy`` with ``blocks`` blocks of two tensors each, plus token
    embeddings and a final norm; the tensors' bytes are distinct and of odd sizes. Returns
    name -> bytes."""
    names = ["token_embd.weight"] + [f"blk.{b}.{part}.weight" for b in range(blocks)
                                     for part in ("attn_q", "ffn_up")] + ["output_norm.weight"]
    payload = {name: bytes((k * 37 + j) % 251 for j in range(5 + 3 * k))
               for k, name in enumerate(names)}
    count = struct.pack("<I" if count_type == 4 else "<Q", blocks)
    meta = [
        _kv("general.architecture", 8, _string("toy")),
        _kv("general.alignment", 4, struct.pack("<I", alignment)),
        _kv("toy.block_count", count_type, count),
        _kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2) + _string("a") + _string("<|x|>")),
        _kv("toy.scores", 9, struct.pack("<IQ", 6, 3) + struct.pack("<3f", 0.5, 1.5, -2.0)),
    ]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(names), len(meta)) + b"".join(meta)
    table, at = b"", 0
    placed = []
    # the data is laid out in reverse order of the table, as a writer may do
    for name in reversed(names):
        placed.append((name, at))
        at = -(-(at + len(payload[name])) // alignment) * alignment
    offsets = dict(placed)
    for name in names:
        table += _string(name) + struct.pack("<I", 1) + struct.pack("<Q", len(payload[name]))
        table += struct.pack("<IQ", 24, offsets[name])  # I8: one byte a value
    body = head + table
    body += b"\0" * (-len(body) % alignment)
    data = bytearray()
    for name, offset in placed:
        data += b"\0" * (offset - len(data)) + payload[name]
    path.write_bytes(body + bytes(data))
    return payload


def _tensor_bytes(path: Path) -> dict[str, bytes]:
    layout = read_layout(path)
    raw = path.read_bytes()
    out = {}
    for tensor in layout.tensors:
        assert (layout.data_start + tensor.offset) % layout.alignment == 0
        start = layout.data_start + tensor.offset
        out[tensor.name] = raw[start:start + tensor.size]
    return out


@pytest.mark.parametrize(("alignment", "count_type"), [(32, 4), (64, 10)])
def test_a_cut_keeps_the_first_blocks_byte_for_byte(
    tmp_path: Path, alignment: int, count_type: int
) -> None:
    source = tmp_path / "toy.gguf"
    payload = toy_gguf(source, blocks=3, alignment=alignment, count_type=count_type)
    cut = truncated_copy(source, tmp_path / "cut" / "toy.first2.gguf", 2)
    layout = read_layout(cut)
    assert (layout.architecture, layout.block_count, layout.alignment) == ("toy", 2, alignment)
    kept = _tensor_bytes(cut)
    assert sorted(kept) == sorted(n for n in payload if not n.startswith("blk.2."))
    for name, data in kept.items():
        assert data[:len(payload[name])] == payload[name]
        assert not data[len(payload[name]):].strip(b"\0")  # only padding after it
    # the other metadata is carried over unchanged, the block count is the only change
    before = {key: raw for key, raw, _, _ in read_layout(source).metadata}
    after = {key: raw for key, raw, _, _ in layout.metadata}
    assert before.keys() == after.keys()
    assert [k for k in before if before[k] != after[k]] == ["toy.block_count"]
    # cutting again gives the same bytes (the file's identity is the source and N)
    again = truncated_copy(source, tmp_path / "again.gguf", 2)
    assert again.read_bytes() == cut.read_bytes()


def test_cuts_that_cannot_be_made_are_refused_and_leave_nothing(tmp_path: Path) -> None:
    source = tmp_path / "toy.gguf"
    toy_gguf(source, blocks=3)
    for layers in (0, 3, 4):
        with pytest.raises(GGUFError, match="between 1 and 2"):
            truncated_copy(source, tmp_path / "out.gguf", layers)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGML" + source.read_bytes()[4:])
    with pytest.raises(GGUFError, match="not a GGUF"):
        truncated_copy(bad, tmp_path / "out.gguf", 1)
    short = tmp_path / "short.gguf"
    short.write_bytes(source.read_bytes()[:40])
    with pytest.raises(GGUFError, match="truncated"):
        truncated_copy(short, tmp_path / "out.gguf", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.gguf", "short.gguf", "toy.gguf"]


def test_the_runtime_cuts_once_reuses_and_reports_what_it_cannot_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from judge.models import embedded, gguf_layers

    source = tmp_path / "toy.gguf"
    toy_gguf(source, blocks=3)
    monkeypatch.setenv(embedded.ENV_GGUF, str(source))
    monkeypatch.setenv(embedded.ENV_CACHE, str(tmp_path / "cache"))
    cut = embedded.layered_file(2)
    assert cut.parent == tmp_path / "cache" and read_layout(cut).block_count == 2
    written = cut.stat().st_mtime_ns
    assert embedded.layered_file(2).stat().st_mtime_ns == written  # reused
    with pytest.raises(embedded.EmbeddedModelError, match="between 1 and 2"):
        embedded.layered_file(3)

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gguf_layers, "truncated_copy", full)
    with pytest.raises(embedded.EmbeddedModelError, match="No space left.*CLAIM_JUDGE_CACHE"):
        embedded.layered_file(1)
