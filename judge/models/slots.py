"""Parallel slots of the embedded runtime, and the turns its runtimes take on the CPU.

A runtime of ``n`` slots (llama.cpp's ``n_parallel``, the context shared by them) decodes the
requests of its busy slots together: generation on a CPU is bound by memory bandwidth, so the
tokens of several splits cost little more than those of one. Each request takes a free slot
and names it (``id_slot``), and each slot keeps its own shared-prefix state
(:class:`judge.models.shared_prefix.PrefixCache`), so the cut-backs of one request never
touch another's cache. An embedding request cannot name its slot (llama.cpp picks an idle
one), so it takes every slot of its runtime and the slots' prefix states are forgotten.

Decoded together, a request's numbers depend slightly on what else is in the batch (its
matrix products are summed in another order): the output of a split can differ from the one
it has alone (docs/configuration.md gives the figures). One slot, the default, keeps every
output a function of its prompt alone.

The whole model and the copy cut for the probe run in separate runtimes, each with all the
threads; both at once would fight over the cores (llama.cpp slows many-fold), so requests
take turns by runtime (:class:`Turns`).
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from judge.models.prefix_files import PrefixFiles
from judge.models.shared_prefix import PrefixCache, RuntimeCall


class Turns:
    """Requests of one runtime at a time: several together only within one runtime (its
    slots). Once a request of another runtime waits, no new request of the runtime holding
    the turn starts, so neither starves."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        # ids, not the runtimes: a turn must not keep an unloaded runtime in memory
        self._owner: int | None = None
        self._holders = 0
        self._waiting: Counter[int] = Counter()
        self._last: int | None = None

    def _free_for(self, owner: int) -> bool:
        others = sum(n for key, n in self._waiting.items() if key != owner)
        if self._owner is None:  # the runtime that just had the turn lets a waiting one go
            return others == 0 or self._last != owner
        return self._owner == owner and others == 0

    @contextmanager
    def turn(self, owner: object) -> Iterator[None]:
        """Hold the CPU for ``owner`` (a runtime) while the block runs."""
        key = id(owner)
        with self._cond:
            self._waiting[key] += 1
            try:
                self._cond.wait_for(lambda: self._free_for(key))
            finally:
                self._waiting[key] -= 1
            self._owner = self._last = key
            self._holders += 1
        try:
            yield
        finally:
            with self._cond:
                self._holders -= 1
                if self._holders == 0:
                    self._owner = None
                self._cond.notify_all()


class SlotPool:
    """The slots of one runtime and the shared-prefix state of each."""

    def __init__(self, count: int, call: RuntimeCall, files: PrefixFiles | None = None
                 ) -> None:
        if count < 1:
            raise ValueError(f"a runtime needs at least one slot, not {count}")
        self.count = count
        self._call = call
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        for slot in range(count):
            self._free.put(slot)
        #: each slot's call (its id sent as ``id_slot``) and its shared-prefix state
        self._calls = [self._bound(slot) for slot in range(count)]
        self._prefixes = [PrefixCache(call, files, slot)
                          for slot, call in enumerate(self._calls)]
        # one taker of every slot at a time: two taking them one by one could each hold some
        self._taking = threading.Lock()

    def _bound(self, slot: int) -> RuntimeCall:
        def call(method: str, request: dict[str, Any]) -> dict[str, Any]:
            return self._call(method, {**request, "id_slot": slot})
        return call

    @contextmanager
    def one(self) -> Iterator[tuple[PrefixCache, RuntimeCall]]:
        """A free slot for one chat request: its prefix state, and the call bound to it."""
        slot = self._free.get()
        try:
            yield self._prefixes[slot], self._calls[slot]
        finally:
            self._free.put(slot)

    @contextmanager
    def every(self) -> Iterator[None]:
        """Every slot, for a request whose slot the runtime picks itself; their prefix
        states are forgotten."""
        with self._taking:
            taken = [self._free.get() for _ in range(self.count)]
        try:
            for prefix in self._prefixes:
                prefix.forget()
            yield
        finally:
            for slot in taken:
                self._free.put(slot)
