"""Who reviews what now: the review pages give each item that still needs a review to one
person at a time, with a lease (``item_leases``), so two people are not given the same claim
at once, unless the design asks for more than one review of it (then up to as many people as
reviews it still needs).

A lease lasts :data:`LEASE_SECONDS` and is renewed each time its holder opens the item;
saving the review ends it, and one left alone expires, so an item a reviewer walked away
from goes to someone else. Leases name people (aliases resolved,
:mod:`judge.review.aliases`), never the judge's view of an item, so they tell a blind
reviewer nothing of the judge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from judge.review.queue import needs_review

if TYPE_CHECKING:
    from judge.store import Store

#: How long an item stays with the reviewer it was given to without their opening it again.
LEASE_SECONDS = 30 * 60.0


class ItemTaken(Exception):
    """Everyone the item still needs is already reviewing it; take another."""


def open_slots(item: dict[str, Any]) -> int:
    """How many more people an item needs: the reviews it requires less those it has."""
    return max(0, int(item["reviews_required"]) - len(item["reviewers"]))


def free_for(item: dict[str, Any], person: str, holders: dict[str, set[str]]) -> bool:
    """Whether ``person`` may be given ``item``: it still needs them, and they hold its lease
    or the others holding one leave a slot."""
    if not needs_review(item, person):
        return False
    held = holders.get(item["id"], set())
    return person in held or len(held - {person}) < open_slots(item)


def take(store: Store, queue_id: str, item: dict[str, Any], person: str) -> bool:
    """Give ``item`` to ``person`` (or renew their lease); False when others hold every slot
    it has left. An item that no longer needs them is not leased (True: nothing to guard)."""
    if not needs_review(item, person):
        return True
    return store.take_item_lease(queue_id, item["id"], person, open_slots(item), LEASE_SECONDS)


def assign_next(store: Store, queue_id: str, items: Sequence[dict[str, Any]], person: str,
                after: int = 0) -> dict[str, Any] | None:
    """The first item of ``items`` (in ``person``'s order) after number ``after`` (wrapping to
    the start) that needs ``person`` and is free for them, now leased to them; None when every
    item that needs them is with someone else (or none needs them)."""
    holders = store.item_lease_holders(queue_id)
    ordered = [i for i in items if i["number"] > after] + [i for i in items if i["number"] <= after]
    for item in ordered:
        if free_for(item, person, holders) and take(store, queue_id, item, person):
            return item
    return None


def release(store: Store, item: dict[str, Any], person: str) -> None:
    """End ``person``'s lease on ``item`` (their review is saved)."""
    store.release_item_lease(item["id"], person)


def guard(store: Store, queue_id: str, item: dict[str, Any], person: str) -> None:
    """Before saving ``person``'s review of ``item``: raise :class:`ItemTaken` when others are
    reviewing every slot it has left."""
    if not take(store, queue_id, item, person):
        raise ItemTaken("someone else is reviewing this item now and it needs no more "
                        "reviewers; your label was not saved. Open the next item.")
