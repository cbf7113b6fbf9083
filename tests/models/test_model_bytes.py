"""Verified model bytes: the packaged model file and every cut of it are hashed when a process
first loads them; a file edited in place (size kept, marker intact) is refused with the file
and the fix, a cut is made only from a verified model and used only when its bytes are the
cut of that model (pinned in the package, or computed from the verified model: never what a
marker beside it says), and ``$CLAIM_JUDGE_GGUF`` must read as a whole GGUF. Small GGUFs
written here stand for the model (the real one: tests/faults/test_model_load.py)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from judge.models import embedded, model_bytes
from judge.models.gguf_layers import cut_sha256, read_layout
from tests.models.test_gguf_layers import toy_gguf


@pytest.fixture(autouse=True)
def fresh_process() -> None:
    model_bytes.forget()  # as a new process: every file is hashed on its first load


def flip(path: Path, at: int) -> None:
    """Change one byte in place: the size and the marker beside it stay as they were."""
    with path.open("r+b") as fh:
        fh.seek(at)
        byte = fh.read(1)
        fh.seek(at)
        fh.write(bytes([byte[0] ^ 0xFF]))


@pytest.fixture
def packaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small GGUF as the packaged model, assembled and marked in a temp cache folder."""
    source = tmp_path / "toy.gguf"
    toy_gguf(source, blocks=3)
    data = source.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    monkeypatch.setenv(embedded.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.delenv(embedded.ENV_GGUF, raising=False)
    monkeypatch.setattr(embedded, "MODEL_SHA256", sha)
    monkeypatch.setattr(embedded, "MODEL_SIZE", len(data))
    monkeypatch.setattr(embedded, "part_paths", lambda: [source])
    return embedded.model_file()


def test_a_model_file_edited_in_place_is_refused_with_the_file_and_the_fix(
    packaged: Path
) -> None:
    assert embedded.model_file() == packaged
    flip(packaged, packaged.stat().st_size // 2)  # one byte; size and marker kept
    model_bytes.forget()  # the next process
    with pytest.raises(embedded.ModelIntegrityError) as refused:
        embedded.model_file()
    message = str(refused.value)
    assert str(packaged) in message and "delete it" in message and "re-assembled" in message


def rewrite_marker(path: Path) -> None:
    """What the trial did after editing a file: a marker that vouches for the new bytes."""
    model_bytes.write_marker(path, hashlib.sha256(path.read_bytes()).hexdigest())


def test_a_cut_is_made_only_from_a_verified_model(packaged: Path) -> None:
    cut = embedded.layered_file(2)
    assert read_layout(cut).block_count == 2
    assert hashlib.sha256(cut.read_bytes()).hexdigest() == cut_sha256(packaged, 2)
    before = cut.read_bytes()
    cut.unlink()  # a cut must be made again ...
    flip(packaged, packaged.stat().st_size - 3)  # ... from an edited model: refused
    model_bytes.forget()
    with pytest.raises(embedded.ModelIntegrityError, match="re-assembled"):
        embedded.layered_file(2)
    assert not cut.exists()  # nothing was cut from the bad bytes
    flip(packaged, packaged.stat().st_size - 3)  # the model as it was
    model_bytes.forget()
    assert embedded.layered_file(2).read_bytes() == before


@pytest.mark.parametrize("marker", ["kept", "rewritten", "removed"])
def test_a_cut_edited_in_place_is_deleted_and_refused_whatever_its_marker_says(
    packaged: Path, marker: str
) -> None:
    cut = embedded.layered_file(2)
    before = cut.read_bytes()
    model_bytes.write_marker(cut, hashlib.sha256(before).hexdigest())  # as older versions did
    for at in range(8):  # 64 bits flipped, size and time kept as far as they go
        flip(cut, len(before) - 1 - at)
    assert cut.read_bytes() != before and cut.stat().st_size == len(before)
    if marker == "rewritten":
        rewrite_marker(cut)
    elif marker == "removed":
        model_bytes.marker_path(cut).unlink()
    model_bytes.forget()  # the next process
    with pytest.raises(embedded.ModelIntegrityError) as refused:
        embedded.layered_file(2)
    message = str(refused.value)
    assert str(cut) in message and "deleted" in message and "run again" in message
    assert not cut.exists() and not model_bytes.marker_path(cut).exists()
    assert embedded.layered_file(2).read_bytes() == before  # run again: cut afresh


def test_a_cut_is_checked_against_the_hash_the_package_pins(
    packaged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For the packaged model the expected cut is the pinned one: a cut (and a marker) that
    agree with each other but not with the package are refused, a fresh cut too."""
    cut = embedded.layered_file(2)
    before = cut.read_bytes()
    monkeypatch.setitem(embedded.CUT_SHA256, 2, "0" * 64)
    rewrite_marker(cut)
    model_bytes.forget()
    with pytest.raises(embedded.ModelIntegrityError, match="deleted"):
        embedded.layered_file(2)
    assert not cut.exists()
    with pytest.raises(embedded.ModelIntegrityError, match="must be 0000"):
        embedded.layered_file(2)  # cut afresh, and still not what the package pins
    assert not cut.exists()
    monkeypatch.setitem(embedded.CUT_SHA256, 2, hashlib.sha256(before).hexdigest())
    assert embedded.layered_file(2).read_bytes() == before


def test_the_packaged_cut_the_product_reads_is_pinned() -> None:
    """Every ``probe_layers`` a shipped config reads has its cut's sha256 in the package."""
    from judge.config import JudgeConfig

    layers = JudgeConfig.load().probe_layers
    assert layers is not None and len(embedded.CUT_SHA256[layers]) == 64


def test_a_cut_of_your_own_gguf_is_checked_against_its_own_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "mine.gguf"
    toy_gguf(own, blocks=3)
    monkeypatch.setenv(embedded.ENV_GGUF, str(own))
    monkeypatch.setenv(embedded.ENV_CACHE, str(tmp_path / "cache"))
    cut = embedded.layered_file(1)
    before = cut.read_bytes()
    flip(cut, len(before) - 2)
    rewrite_marker(cut)
    model_bytes.forget()  # the next process: the expected cut is computed from the model
    with pytest.raises(embedded.ModelIntegrityError, match="deleted"):
        embedded.layered_file(1)
    assert not cut.exists()
    assert embedded.layered_file(1).read_bytes() == before
    # another model under the same name (your GGUF replaced): cut again, not refused
    toy_gguf(own, blocks=3, alignment=64)
    model_bytes.forget()
    again = embedded.layered_file(1)
    assert again.read_bytes() != before and read_layout(again).alignment == 64


def test_a_file_is_hashed_once_per_process_and_again_after_it_changes(
    packaged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed: list[Path] = []
    real = model_bytes.sha256_file

    def counting(path: Path, progress: object = None) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(model_bytes, "sha256_file", counting)
    model_bytes.forget()  # a new process: the assembly's own hash is not known to it
    for _ in range(3):
        embedded.model_file()
    assert hashed == [packaged]
    flip(packaged, 0)  # written since: hashed again, and refused
    stat = packaged.stat()  # (a write moves the time on; the clock's tick may be coarse)
    os.utime(packaged, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(embedded.ModelIntegrityError):
        embedded.model_file()
    assert hashed == [packaged, packaged]


@pytest.mark.parametrize(("content", "why"), [
    (b"", "truncated"),
    (b"not a model at all", "not a GGUF"),
    (None, "truncated"),  # the toy GGUF cut short inside its data
])
def test_your_own_gguf_must_be_a_whole_gguf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes | None, why: str
) -> None:
    own = tmp_path / "mine.gguf"
    if content is None:
        toy_gguf(own)
        own.write_bytes(own.read_bytes()[:-7])
    else:
        own.write_bytes(content)
    monkeypatch.setenv(embedded.ENV_GGUF, str(own))
    with pytest.raises(embedded.EmbeddedModelError) as refused:
        embedded.model_file()
    message = str(refused.value)
    assert why in message and "CLAIM_JUDGE_GGUF" in message and "unset it" in message


def test_your_own_gguf_is_identified_by_its_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "mine.gguf"
    toy_gguf(own)
    monkeypatch.setenv(embedded.ENV_GGUF, str(own))
    first = embedded._gguf_id(embedded.model_file())
    flip(own, own.stat().st_size - 1)
    model_bytes.forget()
    second = embedded._gguf_id(embedded.model_file())
    assert first != second and hashlib.sha256(own.read_bytes()).hexdigest()[:16] in second
