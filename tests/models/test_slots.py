"""The embedded runtime's slots and turns (judge.models.slots), on a simulated runtime: each
request gets a slot of its own and names it, a request that cannot name its slot waits for
all of them, and the runtimes never run at once while neither starves."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from judge.models.slots import SlotPool, Turns


class Recorder:
    """A runtime call that records who runs at once, and which slot each request named."""

    def __init__(self, hold: float = 0.02) -> None:
        self.hold = hold
        self.lock = threading.Lock()
        self.running: set[int] = set()
        self.most_at_once = 0
        self.clash = False  # two requests on one slot at once
        self.requests: list[dict[str, Any]] = []

    def __call__(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        slot = request.get("id_slot", -1)
        with self.lock:
            self.requests.append({"method": method, **request})
            if slot in self.running:
                self.clash = True
            self.running.add(slot)
            self.most_at_once = max(self.most_at_once, len(self.running))
        time.sleep(self.hold)
        with self.lock:
            self.running.discard(slot)
        return {"content": request.get("prompt") or request.get("input") or "", "slot": slot}


def _threads(count: int, target: Any) -> None:
    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
        assert not thread.is_alive(), "a request never finished (deadlock)"


def test_requests_take_distinct_slots_and_name_them() -> None:
    runtime = Recorder()
    pool = SlotPool(3, runtime)
    answers: dict[int, dict[str, Any]] = {}

    def request(i: int) -> None:
        with pool.one() as (_, call):
            answers[i] = call("handle_completions", {"prompt": f"p{i}"})

    _threads(9, request)
    assert not runtime.clash
    assert runtime.most_at_once == 3  # all slots were used together, never more
    assert {answers[i]["content"] for i in range(9)} == {f"p{i}" for i in range(9)}
    assert {r["id_slot"] for r in runtime.requests} == {0, 1, 2}


def test_a_request_that_cannot_name_its_slot_has_them_all_and_forgets_their_prefixes() -> None:
    runtime = Recorder(hold=0.05)
    pool = SlotPool(2, runtime)
    # a slot whose prefix state says it holds some instructions
    with pool.one() as (prefix, _):
        prefix._common = "instructions"
    seen_alone: list[bool] = []

    def chat(i: int) -> None:
        with pool.one() as (_, call):
            call("handle_completions", {"prompt": f"c{i}"})

    def embed(_: int) -> None:
        with pool.every():
            with runtime.lock:
                seen_alone.append(not runtime.running)
            runtime("handle_embeddings", {"input": "e"})

    _threads(6, lambda i: (embed if i % 3 == 0 else chat)(i))
    assert seen_alone and all(seen_alone)
    assert all(p._common is None for p in pool._prefixes)


def test_two_takers_of_every_slot_do_not_deadlock() -> None:
    pool = SlotPool(3, Recorder(hold=0.01))

    def either(i: int) -> None:
        for _ in range(5):
            if i % 2:
                with pool.every():
                    pass
            else:
                with pool.one() as (_, call):
                    call("handle_completions", {"prompt": "x"})

    _threads(6, either)


def test_a_pool_needs_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        SlotPool(0, Recorder())


def test_runtimes_take_turns_and_the_waiting_one_is_served() -> None:
    turns = Turns()
    main, probe = object(), object()
    lock = threading.Lock()
    now: dict[int, int] = {id(main): 0, id(probe): 0}
    mixed = False
    order: list[str] = []

    def request(owner: object, name: str) -> None:
        nonlocal mixed
        with turns.turn(owner):
            with lock:
                now[id(owner)] += 1
                other = probe if owner is main else main
                mixed = mixed or now[id(other)] > 0
                order.append(name)
            time.sleep(0.03)
            with lock:
                now[id(owner)] -= 1

    # main requests keep coming; a probe request arrives in between
    def mains(i: int) -> None:
        for k in range(4):
            request(main, f"main{i}.{k}")

    def probes(_: int) -> None:
        time.sleep(0.01)
        request(probe, "probe")

    _threads(3, lambda i: probes(i) if i == 2 else mains(i))
    assert not mixed
    # the probe request was not left waiting behind every main request
    assert order.index("probe") < len(order) - 1


def test_the_same_runtime_shares_its_turn() -> None:
    turns = Turns()
    main = object()
    inside = threading.Barrier(2, timeout=5)

    def request(_: int) -> None:
        with turns.turn(main):
            inside.wait()  # both inside at once, or the barrier times out

    _threads(2, request)


def _who_goes_after(turns: Turns, holder: object, waiting: list[tuple[object, str]]
                    ) -> list[str]:
    """``holder`` holds the turn while the ``waiting`` requests queue up in that order; the
    order in which they then run."""
    holding, release = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        with turns.turn(holder):
            holding.set()
            release.wait(5)

    def then(owner: object, name: str) -> None:
        with turns.turn(owner):
            order.append(name)

    threads = [threading.Thread(target=first)]
    threads[0].start()
    holding.wait(5)
    for owner, name in waiting:
        threads.append(threading.Thread(target=then, args=(owner, name)))
        threads[-1].start()
        time.sleep(0.01)  # all are waiting before the turn ends
    release.set()
    for thread in threads:
        thread.join(5)
    return order


def test_when_a_turn_ends_the_other_runtime_goes_first() -> None:
    for _ in range(20):
        main, probe = object(), object()
        order = _who_goes_after(Turns(), main, [(probe, "probe"), (main, "main")])
        assert order == ["probe", "main"]


def test_the_slot_count_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.models.runtime import ENV_SLOTS, MAX_SLOTS, EmbeddedModelError, slots_wanted

    monkeypatch.delenv(ENV_SLOTS, raising=False)
    assert slots_wanted() == 1
    monkeypatch.setenv(ENV_SLOTS, "3")
    assert slots_wanted() == 3
    for raw, why in ((str(MAX_SLOTS + 1), "more than"), ("0", "must be positive"),
                     ("two", "not an integer")):
        monkeypatch.setenv(ENV_SLOTS, raw)
        with pytest.raises(EmbeddedModelError, match=why):
            slots_wanted()


def test_a_runtime_of_several_slots_says_so_in_its_fingerprint() -> None:
    from pathlib import Path

    from judge.models.runtime import RuntimeInfo

    info = RuntimeInfo(path=Path("/m.gguf"), gguf_id="g", xllamacpp_version="1", n_ctx=8192,
                       n_threads=2, prompt_cache=False, load_seconds=0.0)
    assert info.fingerprint == "xllamacpp-1+g"  # one slot: as before slots existed
    assert RuntimeInfo(**{**info.__dict__, "slots": 3}).fingerprint == "xllamacpp-1+g+slots3"
