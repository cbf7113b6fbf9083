"""Verified model bytes: the packaged model file and every cut of it are hashed when a process
first loads them; a file edited in place (size kept, marker intact) is refused with the file
and the fix, a cut is made only from a verified model, and ``$CLAIM_JUDGE_GGUF`` must read as
a whole GGUF. Small GGUFs written here stand for the model (the real one:
tests/faults/test_model_load.py)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from judge.models import embedded, model_bytes
from judge.models.gguf_layers import read_layout
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


def test_a_cut_is_made_only_from_a_verified_model(packaged: Path) -> None:
    cut = embedded.layered_file(2)
    assert read_layout(cut).block_count == 2
    assert model_bytes.read_marker(cut) == hashlib.sha256(cut.read_bytes()).hexdigest()
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


def test_a_cut_edited_in_place_is_refused_and_a_cut_without_a_marker_checked(
    packaged: Path
) -> None:
    cut = embedded.layered_file(2)
    before = cut.read_bytes()
    flip(cut, len(before) - 1)
    model_bytes.forget()
    with pytest.raises(embedded.ModelIntegrityError) as refused:
        embedded.layered_file(2)
    assert str(cut) in str(refused.value) and "delete it" in str(refused.value)
    model_bytes.marker_path(cut).unlink()  # a cut of an older version: no marker ...
    model_bytes.forget()
    with pytest.raises(embedded.ModelIntegrityError):  # ... checked against what it must be
        embedded.layered_file(2)
    flip(cut, len(before) - 1)  # the cut as it was made
    model_bytes.forget()
    written = cut.stat().st_mtime_ns
    assert embedded.layered_file(2).read_bytes() == before  # kept, not written again
    assert cut.stat().st_mtime_ns == written and model_bytes.read_marker(cut)


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
