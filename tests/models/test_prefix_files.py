"""The instructions' states kept on disk (judge.models.prefix_files), against the simulated
llama.cpp slot of test_shared_prefix: a later process restores them instead of evaluating,
and its outputs have the history a cold evaluation gives them; a state is restored only when
its bytes hash to what the store recorded when it was saved, never to a marker beside it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from judge.models import prefix_files
from judge.models.prefix_files import Ledger, PrefixFiles
from judge.models.shared_prefix import PrefixCache, instructions
from judge.store import Store
from judge.store.prefix_states import PrefixStates
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


def store_ledger(path: Path) -> PrefixStates:
    """The record of the store at ``path`` (made if need be)."""
    Store.open(path).close()
    return PrefixStates(path)


def process(folder: Path, identity: str = "runtime-a", ledger: Ledger | None = None
            ) -> tuple[Slot, Disk, PrefixCache]:
    """A new process: an empty slot, the prefix files of ``folder``, their hashes recorded in
    the store ``judge.db`` beside ``folder`` (or in ``ledger``)."""
    slot = Slot()
    disk = Disk(folder, slot)
    if ledger is None:
        ledger = store_ledger(folder.parent / f"{folder.name}.judge.db")
    files = PrefixFiles(folder, identity, disk, lambda: ledger)
    return slot, disk, PrefixCache(caller(slot), files)


def name(folder: Path, text: object, identity: str = "runtime-a") -> str:
    return PrefixFiles(folder, identity, Disk(folder, Slot()), lambda: None).name(str(text))


REQUESTS = [split_request(["It rained."], "01" * 8),
            split_request(["Python 3.11 added tomllib.", "Thanks!"], "02" * 8)]


def outputs(cache: PrefixCache, slot: Slot) -> list[str]:
    for request in REQUESTS:
        cache.instructions(request)
    return [digest for _, digest, _ in slot.chats]


def test_a_later_process_restores_the_instructions_and_gets_the_same_numbers(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "states"
    first_slot, first_disk, first = process(folder)
    reference = outputs(first, first_slot)
    common = instructions(REQUESTS[0]["messages"])
    assert common is not None
    (saved,) = [name for action, name in first_disk.actions if action == "save"]
    saved_name = name(folder, common)
    assert sorted(p.name for p in folder.iterdir()) == [saved_name]  # nothing beside it
    assert saved.endswith(".tmp")  # written under a temporary name, then renamed
    # recorded in the store, with the sha256 of the bytes saved
    recorded = PrefixStates(tmp_path / "states.judge.db").get(saved_name)
    assert recorded == hashlib.sha256((folder / saved_name).read_bytes()).hexdigest()
    # a new process: nothing evaluated from an empty cache, the same history for every output
    slot, disk, cache = process(folder)
    assert outputs(cache, slot) == reference
    assert [action for action, _ in disk.actions] == ["restore"]
    for (prompt, _, evaluated), request in zip(slot.chats, REQUESTS, strict=True):
        assert evaluated == len(prompt) - len(str(instructions(request["messages"])))


def test_another_runtime_or_other_instructions_have_their_own_file(tmp_path: Path) -> None:
    folder = tmp_path / "states"
    first_slot, _, first = process(folder, "runtime-a")
    outputs(first, first_slot)
    common = str(instructions(REQUESTS[0]["messages"]))
    names = {name(folder, common), name(folder, common, "runtime-b"),
             name(folder, common + "x")}
    assert len(names) == 3
    slot, disk, other = process(folder, "runtime-b")
    outputs(other, slot)
    assert [action for action, _ in disk.actions] == ["save"]  # a's file is not b's


def write_state(path: Path, content: str, ledger: Ledger | None = None) -> None:
    """A state file with a marker beside it, as an older version left them (and, with
    ``ledger``, recorded there as if it had been saved)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    sha = hashlib.sha256(content.encode()).hexdigest()
    path.with_name(path.name + ".sha256").write_text(f"{sha}  {path.name}\n")
    if ledger is not None:
        ledger.put(path.name, sha)


def test_a_file_that_does_not_restore_is_deleted_and_the_instructions_evaluated(
    tmp_path: Path,
) -> None:
    reference_slot, _, reference = process(tmp_path / "clean")
    expected = outputs(reference, reference_slot)
    folder = tmp_path / "states"
    ledger = store_ledger(tmp_path / "judge.db")
    slot, disk, cache = process(folder, ledger=ledger)
    saved = name(folder, instructions(REQUESTS[0]["messages"]))
    write_state(folder / saved, "half a file", ledger)  # recorded bytes the runtime refuses
    assert outputs(cache, slot) == expected
    assert [action for action, _ in disk.actions] == ["restore", "save"]
    assert json.loads((folder / saved).read_text())[0]  # saved anew, whole
    assert ledger.get(saved) == hashlib.sha256((folder / saved).read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", ["changed, marker rewritten", "changed, record removed",
                                    "not recorded", "recorded in another store"])
def test_a_file_whose_bytes_are_not_those_recorded_is_deleted_and_never_restored(
    tmp_path: Path, damage: str,
) -> None:
    """The runtime checks a restored state's tokens, not its numbers: the store's record
    does, whatever lies beside the file. The file is deleted, the instructions evaluated,
    saved and recorded anew, and the outputs are those of the evaluated instructions."""
    folder = tmp_path / "states"
    ledger = store_ledger(tmp_path / "judge.db")
    first_slot, _, first = process(folder, ledger=ledger)
    expected = outputs(first, first_slot)
    saved = folder / name(folder, instructions(REQUESTS[0]["messages"]))
    clean = saved.read_bytes()
    later = ledger
    if damage.startswith("changed"):
        tokens, history = json.loads(saved.read_text())
        # the same tokens, other numbers, with a marker that vouches for them
        write_state(saved, json.dumps([tokens, ["tampered"] * len(history)]))
        if damage == "changed, record removed":
            Store.open(tmp_path / "judge.db").db.execute("delete from prefix_states")
    elif damage == "not recorded":
        write_state(saved, clean.decode())
        Store.open(tmp_path / "judge.db").db.execute("delete from prefix_states")
    else:
        later = store_ledger(tmp_path / "other.db")
    slot, disk, cache = process(folder, ledger=later)
    assert outputs(cache, slot) == expected
    assert [action for action, _ in disk.actions] == ["save"]  # evaluated, saved anew
    assert saved.read_bytes() == clean  # what the evaluation gives, in place of the file
    assert not saved.with_name(saved.name + ".sha256").exists()  # its marker deleted too
    assert later.get(saved.name) == hashlib.sha256(clean).hexdigest()


def test_a_restored_state_that_does_not_line_up_is_discarded(tmp_path: Path) -> None:
    """A file holding other tokens under the instructions' name (recorded, so restored): the
    request is evaluated whole (as any cut that does not line up) and the file deleted; the
    next request saves a good one."""
    folder = tmp_path / "states"
    ledger = store_ledger(tmp_path / "judge.db")
    slot, disk, cache = process(folder, ledger=ledger)
    saved = name(folder, instructions(REQUESTS[0]["messages"]))
    write_state(folder / saved, json.dumps(["something else", ["x"] * 14]), ledger)
    cache.instructions(REQUESTS[0])
    prompt, _, evaluated = slot.chats[0]
    assert evaluated == len(prompt)  # evaluated whole, from an empty cache
    assert not (folder / saved).exists()
    cache.instructions(REQUESTS[1])
    assert [action for action, _ in disk.actions] == ["restore", "save"]
    assert (folder / saved).exists()


def test_a_failing_save_costs_nothing_but_the_file(tmp_path: Path) -> None:
    slot = Slot()

    def broken(slot_id: int, action: str, filename: str) -> dict[str, Any]:
        raise OSError("disk full")

    folder = tmp_path / "states"
    ledger = store_ledger(tmp_path / "judge.db")
    cache = PrefixCache(caller(slot), PrefixFiles(folder, "runtime-a", broken,
                                                  lambda: ledger))
    reference_slot, _, reference = process(tmp_path / "clean")
    assert outputs(cache, slot) == outputs(reference, reference_slot)
    assert not folder.exists() or not list(folder.iterdir())
    assert Store.open(tmp_path / "judge.db").rows("select * from prefix_states") == []


def test_without_a_store_a_runtime_restores_only_what_it_saved_itself(tmp_path: Path) -> None:
    """No run registered a store (a library call on an in-memory store): a state this
    runtime saved is restored (in another slot, after other instructions), a state saved by
    an earlier runtime is not."""
    folder = tmp_path / "states"
    first_slot, _, first = process(folder, ledger=store_ledger(tmp_path / "judge.db"))
    expected = outputs(first, first_slot)
    slot = Slot()
    disk = Disk(folder, slot)
    files = PrefixFiles(folder, "runtime-a", disk, lambda: None)
    cache = PrefixCache(caller(slot), files)
    assert outputs(cache, slot) == expected
    assert [action for action, _ in disk.actions] == ["save"]  # the earlier one: deleted
    again = PrefixCache(caller(slot), files)  # another slot of the same runtime
    slot.tokens, slot.history = "", []
    assert outputs(again, slot)[-2:] == expected
    assert [action for action, _ in disk.actions] == ["save", "restore"]


def test_a_run_registers_its_store_and_a_memory_store_nothing(tmp_path: Path) -> None:
    from judge.config import JudgeConfig
    from judge.runs.batch import build_pipeline

    before = prefix_files.registered()
    try:
        store = Store.open(tmp_path / "judge.db")
        build_pipeline(JudgeConfig(model="openai/fake-judge"), store)
        ledger = prefix_files.registered()
        assert isinstance(ledger, PrefixStates) and ledger.path == (tmp_path / "judge.db")
        build_pipeline(JudgeConfig(model="openai/fake-judge"), Store.open(":memory:"))
        assert prefix_files.registered() is ledger
    finally:
        prefix_files.record_in(before)


def test_a_record_is_read_only_from_a_store_that_exists(tmp_path: Path) -> None:
    ledger = PrefixStates(tmp_path / "gone" / "judge.db")
    with pytest.raises(Exception):  # noqa: B017, PT011 - sqlite's error: nothing created
        ledger.get("instructions-x.bin")
    assert not (tmp_path / "gone").exists()
    files = PrefixFiles(tmp_path / "states", "runtime-a", Disk(tmp_path, Slot()),
                        lambda: ledger)
    write_state(tmp_path / "states" / files.name("text"), "state")
    assert files.restore(0, "text") is False  # nothing to check it against: deleted
    assert not (tmp_path / "states" / files.name("text")).exists()


@pytest.mark.parametrize(("value", "where"), [
    ("", "cache"), ("1", "cache"), ("0", None), ("false", None), ("no", None),
    ("/elsewhere/states", "/elsewhere/states")])
def test_the_folder_is_the_caches_unless_named_or_turned_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, where: str | None,
) -> None:
    monkeypatch.setenv(prefix_files.ENV_PREFIX_FILES, value)
    expected = {"cache": tmp_path / "prefixes", None: None}.get(where, Path(str(where)))
    assert prefix_files.folder(tmp_path) == expected
