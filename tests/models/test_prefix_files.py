"""The instructions' states kept on disk (judge.models.prefix_files), against the simulated
llama.cpp slot of test_shared_prefix: a later process restores them instead of evaluating,
and its outputs have the history a cold evaluation gives them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from judge.models import prefix_files
from judge.models.prefix_files import PrefixFiles
from judge.models.shared_prefix import PrefixCache, instructions
from tests.models.test_shared_prefix import Slot, caller, split_request


class Disk:
    """llama.cpp's slot save and restore actions on a simulated slot, files in ``folder``."""

    def __init__(self, folder: Path, slot: Slot) -> None:
        self.folder = folder
        self.slot = slot
        self.actions: list[tuple[str, str]] = []

    def __call__(self, slot: int, action: str, filename: str) -> dict[str, Any]:
        assert slot == 0 and "/" not in filename
        self.actions.append((action, filename))
        path = self.folder / filename
        if action == "save":
            path.write_text(json.dumps([self.slot.tokens, self.slot.history]))
            return {"n_saved": len(self.slot.tokens)}
        try:
            tokens, history = json.loads(path.read_text())
        except (OSError, ValueError):
            return {"error": "Unable to restore slot"}
        self.slot.tokens, self.slot.history = tokens, history
        return {"n_restored": len(tokens)}


def process(folder: Path, identity: str = "runtime-a") -> tuple[Slot, Disk, PrefixCache]:
    """A new process: an empty slot, the prefix files of ``folder``."""
    slot = Slot()
    disk = Disk(folder, slot)
    return slot, disk, PrefixCache(caller(slot), PrefixFiles(folder, identity, disk))


def name(folder: Path, text: object, identity: str = "runtime-a") -> str:
    return PrefixFiles(folder, identity, Disk(folder, Slot())).name(str(text))


REQUESTS = [split_request(["It rained."], "01" * 8),
            split_request(["Python 3.11 added tomllib.", "Thanks!"], "02" * 8)]


def outputs(cache: PrefixCache, slot: Slot) -> list[str]:
    for request in REQUESTS:
        cache.instructions(request)
    return [digest for _, digest, _ in slot.chats]


def test_a_later_process_restores_the_instructions_and_gets_the_same_numbers(
    tmp_path: Path,
) -> None:
    first_slot, first_disk, first = process(tmp_path)
    reference = outputs(first, first_slot)
    common = instructions(REQUESTS[0]["messages"])
    assert common is not None
    (saved,) = [name for action, name in first_disk.actions if action == "save"]
    saved_name = name(tmp_path, common)
    assert sorted(p.name for p in tmp_path.iterdir()) == [saved_name, saved_name + ".sha256"]
    assert saved.endswith(".tmp")  # written under a temporary name, then renamed
    # a new process: nothing evaluated from an empty cache, the same history for every output
    slot, disk, cache = process(tmp_path)
    assert outputs(cache, slot) == reference
    assert [action for action, _ in disk.actions] == ["restore"]
    for (prompt, _, evaluated), request in zip(slot.chats, REQUESTS, strict=True):
        assert evaluated == len(prompt) - len(str(instructions(request["messages"])))


def test_another_runtime_or_other_instructions_have_their_own_file(tmp_path: Path) -> None:
    first_slot, _, first = process(tmp_path, "runtime-a")
    outputs(first, first_slot)
    common = str(instructions(REQUESTS[0]["messages"]))
    names = {name(tmp_path, common), name(tmp_path, common, "runtime-b"),
             name(tmp_path, common + "x")}
    assert len(names) == 3
    slot, disk, other = process(tmp_path, "runtime-b")
    outputs(other, slot)
    assert [action for action, _ in disk.actions] == ["save"]  # a's file is not b's


def write_state(path: Path, content: str) -> None:
    """A state file with its marker, as a save leaves them."""
    path.write_text(content)
    path.with_name(path.name + ".sha256").write_text(
        hashlib.sha256(content.encode()).hexdigest() + "\n")


def test_a_file_that_does_not_restore_is_deleted_and_the_instructions_evaluated(
    tmp_path: Path,
) -> None:
    reference_slot, _, reference = process(tmp_path / "clean")
    expected = outputs(reference, reference_slot)
    slot, disk, cache = process(tmp_path)
    saved = name(tmp_path, instructions(REQUESTS[0]["messages"]))
    write_state(tmp_path / saved, "half a file")  # intact bytes the runtime refuses
    assert outputs(cache, slot) == expected
    assert [action for action, _ in disk.actions] == ["restore", "save"]
    assert json.loads((tmp_path / saved).read_text())[0]  # saved anew, whole


@pytest.mark.parametrize("damage", ["changed", "no marker"])
def test_a_file_whose_bytes_are_not_those_saved_is_never_restored(
    tmp_path: Path, damage: str,
) -> None:
    """The runtime checks a restored state's tokens, not its numbers: the marker does."""
    first_slot, _, first = process(tmp_path)
    expected = outputs(first, first_slot)
    saved = tmp_path / name(tmp_path, instructions(REQUESTS[0]["messages"]))
    if damage == "changed":
        tokens, history = json.loads(saved.read_text())
        saved.write_text(json.dumps([tokens, ["tampered"] * len(history)]))
    else:
        saved.with_name(saved.name + ".sha256").unlink()
    slot, disk, cache = process(tmp_path)
    assert outputs(cache, slot) == expected
    assert [action for action, _ in disk.actions] == ["save"]  # evaluated, saved anew


def test_a_restored_state_that_does_not_line_up_is_discarded(tmp_path: Path) -> None:
    """A file holding other tokens under the instructions' name: the request is evaluated
    whole (as any cut that does not line up) and the file deleted; the next request saves a
    good one."""
    slot, disk, cache = process(tmp_path)
    saved = name(tmp_path, instructions(REQUESTS[0]["messages"]))
    write_state(tmp_path / saved, json.dumps(["something else", ["x"] * 14]))
    cache.instructions(REQUESTS[0])
    prompt, _, evaluated = slot.chats[0]
    assert evaluated == len(prompt)  # evaluated whole, from an empty cache
    assert not (tmp_path / saved).exists()
    cache.instructions(REQUESTS[1])
    assert [action for action, _ in disk.actions] == ["restore", "save"]
    assert (tmp_path / saved).exists()


def test_a_failing_save_costs_nothing_but_the_file(tmp_path: Path) -> None:
    slot = Slot()

    def broken(slot_id: int, action: str, filename: str) -> dict[str, Any]:
        raise OSError("disk full")

    cache = PrefixCache(caller(slot), PrefixFiles(tmp_path, "runtime-a", broken))
    reference_slot, _, reference = process(tmp_path / "clean")
    assert outputs(cache, slot) == outputs(reference, reference_slot)
    assert list(tmp_path.iterdir()) == [tmp_path / "clean"]


@pytest.mark.parametrize(("value", "where"), [
    ("", "cache"), ("1", "cache"), ("0", None), ("false", None), ("no", None),
    ("/elsewhere/states", "/elsewhere/states")])
def test_the_folder_is_the_caches_unless_named_or_turned_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, where: str | None,
) -> None:
    monkeypatch.setenv(prefix_files.ENV_PREFIX_FILES, value)
    expected = {"cache": tmp_path / "prefixes", None: None}.get(where, Path(str(where)))
    assert prefix_files.folder(tmp_path) == expected
