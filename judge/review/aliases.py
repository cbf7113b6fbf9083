"""One person, one reviewer: the alias map from annotator ids to people.

The same person reviews under several ids (``human:alice`` on the review page,
``human:alice@example.org`` from Label Studio, ``human:5a1c…`` from Argilla). ``judge reviewers
alias ID PERSON`` records, in the store (table ``reviewer_aliases``), that ``ID`` is
``PERSON``; an id without an alias is its own person. Reviews keep the id they were given
under; everything that counts reviewers counts people (:func:`person`): each person's latest
review is their current label (:func:`judge.review.reviews.current_reviews`), so one person
never makes a double review or a disagreement alone, may not adjudicate what they reviewed
under another id, and "reviewed by you" means by any of your ids. Agreement between people
in gold exports and calibration reports is then agreement between people.

Aliases are flat: the person an id is aliased to is itself resolved first, and ids that
named the aliased id as their person follow it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from judge.review.reviews import ReviewError, human_annotator

if TYPE_CHECKING:
    from judge.store import Store


def alias_map(store: Store) -> dict[str, str]:
    """Annotator id -> person, for every recorded alias."""
    return store.reviewer_alias_map()


def person(store: Store, annotator: str, aliases: dict[str, str] | None = None) -> str:
    """The person behind an annotator id (the id itself when it has no alias)."""
    found = alias_map(store) if aliases is None else aliases
    return found.get(annotator, annotator)


def set_alias(store: Store, annotator: str, who: str, created_by: str | None = None
              ) -> dict[str, Any]:
    """Record that ``annotator`` is ``who`` (both person ids, ``human:`` optional)."""
    from judge.store.base import now

    annotator = human_annotator(annotator, store)
    target = person(store, human_annotator(who, store))
    if target == annotator:
        raise ReviewError(f"{annotator} would be an alias of itself; to undo an alias use "
                          "`judge reviewers unalias`")
    row = {"annotator": annotator, "person": target, "created_at": now(),
           "created_by": created_by}
    store.set_reviewer_alias(row)
    return row


def remove_alias(store: Store, annotator: str) -> bool:
    """Forget ``annotator``'s alias; whether there was one."""
    return store.remove_reviewer_alias(human_annotator(annotator))


def aliases(store: Store) -> list[dict[str, Any]]:
    """Every alias row, by person."""
    return store.reviewer_alias_rows()
