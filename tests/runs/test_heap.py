"""run_heap: while a run judges, the heap that was there before is left out of collections and
young objects are collected less often; both are undone when the last run ends."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from judge.runs.heap import YOUNG_THRESHOLD, run_heap


@pytest.fixture(autouse=True)
def _clean_collector() -> Iterator[None]:
    before = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_the_heap_is_frozen_and_young_collections_rarer_only_while_a_run_judges() -> None:
    gc.set_threshold(700, 10, 10)
    with run_heap():
        assert gc.get_freeze_count() > 1000  # the modules' objects at least
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (700, 10, 10)


def test_a_cycle_made_during_the_run_is_still_collected() -> None:
    class Node:
        other: Node

    with run_heap():
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None


def test_overlapping_runs_undo_it_when_the_last_one_ends() -> None:
    gc.set_threshold(700, 10, 10)
    first, second = run_heap(), run_heap()
    first.__enter__()
    frozen = gc.get_freeze_count()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_freeze_count() >= frozen  # the second run still judges
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (700, 10, 10)


def test_a_heap_frozen_before_the_run_stays_frozen() -> None:
    gc.freeze()  # a server that froze its heap before forking
    frozen = gc.get_freeze_count()
    with run_heap():
        pass
    assert gc.get_freeze_count() == frozen


def test_a_higher_threshold_set_by_the_user_is_kept() -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 2, 5, 5)
    with run_heap():
        assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 5, 5)
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 5, 5)
