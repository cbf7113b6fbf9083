"""``judge review`` (add, history, adjudicate, status) and ``judge gold export``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from judge.cli import app
from judge.cli.common import (
    EXISTING_DB_OPTION,
    console,
    fail,
    open_store,
    out,
    output_path,
    print_json,
    print_table,
    write_stdout,
    write_text,
)
from judge.labels import LABELS
from judge.review.queue import QueueError, get_item, get_queue, queue_items
from judge.review.reviews import (
    DEFAULT_GUIDELINE_VERSION,
    REVIEW_SUBTYPES,
    ReviewError,
    adjudicate,
    current_reviews,
    record_review,
    review_history,
)

if TYPE_CHECKING:
    from judge.store import Store

review_app = typer.Typer(
    help="Human reviews: add a label, see a history, adjudicate disagreements.",
    no_args_is_help=True,
)
gold_app = typer.Typer(help="Human gold labels from reviews.", no_args_is_help=True)
app.add_typer(review_app, name="review")
app.add_typer(gold_app, name="gold")

GUIDELINE_OPTION = typer.Option(
    DEFAULT_GUIDELINE_VERSION, "--guideline-version", envvar="CLAIM_JUDGE_GUIDELINE_VERSION",
    help="The labelling guideline version the decision follows.",
)
LABEL_HELP = f"One of: {', '.join(LABELS)}."
SUBTYPE_HELP = f"Required unless supported. One of: {', '.join(REVIEW_SUBTYPES)}."


def _subject(store: Store, target: str) -> tuple[str, str | None]:
    """A queue item id, a claim id or ``answer:<id>`` -> (subject, queue id)."""
    try:
        item = get_item(store, target)
        return item["subject"], item["queue_id"]
    except QueueError:
        return target, None


@review_app.command("add")
def add(
    target: str = typer.Argument(..., help="Queue item id, claim id or answer:<answer id>."),
    label: str = typer.Option(..., "--label", "-l", help=LABEL_HELP),
    subtype: str | None = typer.Option(None, "--subtype", "-s", help=SUBTYPE_HELP),
    note: str | None = typer.Option(None, "--note", help="Optional note."),
    annotator: str = typer.Option(..., "--annotator", "-a", help="Who labelled: a person's id."),
    guideline_version: str = GUIDELINE_OPTION,
    db: Path = EXISTING_DB_OPTION,
) -> None:
    """Record a person's label for one claim.

    A second call by the same person is a revision; the earlier label is kept.
    """
    store = open_store(db, must_exist=True)
    subject, queue_id = _subject(store, target)
    try:
        row = record_review(store, subject, annotator, label, subtype=subtype, note=note,
                            guideline_version=guideline_version, queue_id=queue_id,
                            origin="cli")
    except ReviewError as exc:
        fail(str(exc))
    out.print(f"review {row['id']} (revision {row['revision']}) by {row['annotator']}: "
              f"{row['label']}{' / ' + row['subtype'] if row['subtype'] else ''}")


@review_app.command("history")
def history(
    target: str = typer.Argument(..., help="Queue item id, claim id or answer:<answer id>."),
    db: Path = EXISTING_DB_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the history as JSON."),
) -> None:
    """Every review (revisions included) and adjudication of one claim."""
    store = open_store(db, must_exist=True)
    subject, _ = _subject(store, target)
    rows = review_history(store, subject)
    decisions = store.adjudication_rows(subject)
    if as_json:
        print_json({"subject": subject, "reviews": rows, "adjudications": decisions})
        return
    if not rows:
        fail(f"no reviews of {subject}")
    table = Table("when", "annotator", "rev", "label", "subtype", "note", "guideline")
    for r in rows:
        table.add_row(r["created_at"][:19], r["annotator"], str(r["revision"]), r["label"],
                      r["subtype"] or "-", escape(r["note"] or ""), r["guideline_version"])
    print_table(table)
    for d in decisions:
        out.print(f"adjudicated by {d['adjudicator']} ({d['created_at'][:19]}): {d['label']}"
                  f"{' / ' + d['subtype'] if d['subtype'] else ''}; reason: {escape(d['reason'])}")


@review_app.command("status")
def status(
    db: Path = EXISTING_DB_OPTION,
    queue: str | None = typer.Option(None, "--queue", "-q", help="Default: the latest queue."),
    as_json: bool = typer.Option(False, "--json", help="Print the items as JSON."),
) -> None:
    """Items awaiting adjudication, with each reviewer's label."""
    store = open_store(db, must_exist=True)
    try:
        q = get_queue(store, queue)
        items = queue_items(store, q["id"], status="needs_adjudication")
    except QueueError as exc:
        fail(str(exc))
    reviews = current_reviews(store, [i["subject"] for i in items])
    rows = [{"item_id": i["id"], "subject": i["subject"],
             "reviews": [{k: r[k] for k in ("annotator", "label", "subtype", "note")}
                         for r in reviews.get(i["subject"], [])]} for i in items]
    if as_json:
        print_json(rows)
        return
    out.print(f"queue {q['id']}: {len(rows)} item(s) await adjudication")
    for row in rows:
        labels = "; ".join(
            f"{r['annotator']}: {r['label']}{' / ' + r['subtype'] if r['subtype'] else ''}"
            for r in row["reviews"]
        )
        out.print(f"  {row['item_id']}  {escape(labels)}")


@review_app.command("adjudicate")
def adjudicate_cmd(
    target: str = typer.Argument(..., help="Queue item id, claim id or answer:<answer id>."),
    label: str = typer.Option(..., "--label", "-l", help=LABEL_HELP),
    subtype: str | None = typer.Option(None, "--subtype", "-s", help=SUBTYPE_HELP),
    reason: str = typer.Option(..., "--reason", "-r", help="Why this decision (required)."),
    adjudicator: str = typer.Option(..., "--adjudicator", "-a", help="Who decides: a person's id."),
    guideline_version: str = GUIDELINE_OPTION,
    db: Path = EXISTING_DB_OPTION,
) -> None:
    """Decide a disagreement between two reviewers.

    Both original reviews are kept; the decision records who decided, the label and the
    reason.
    """
    store = open_store(db, must_exist=True)
    subject, queue_id = _subject(store, target)
    try:
        row = adjudicate(store, subject, adjudicator, label, subtype, reason,
                         guideline_version=guideline_version, queue_id=queue_id)
    except ReviewError as exc:
        fail(str(exc))
    out.print(f"adjudication {row['id']} by {row['adjudicator']}: {row['label']}"
              f"{' / ' + row['subtype'] if row['subtype'] else ''} "
              f"(decided between {len(row['review_ids'])} reviews)")


@gold_app.command("export")
def gold_export(
    db: Path = EXISTING_DB_OPTION,
    queue: str | None = typer.Option(
        None, "--queue", "-q", help="Only this queue's items (default: every reviewed item)."
    ),
    include_pending_second: bool = typer.Option(
        False, "--include-pending-second",
        help="Also export items whose required second review is still missing.",
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="File (default: stdout)."),
) -> None:
    """Write human gold labels as JSONL in the gold file format of gold/README.md.

    Fields: id, claim, sources, label, subtype, annotator human:<id>, guideline_version,
    adjudication, stratum, weight. Only agreed or adjudicated labels of people are exported,
    never a model's.
    """
    if output is not None:
        output_path(output, db)
    store = open_store(db, must_exist=True)
    from judge.review.gold_export import GoldSummary, gold_lines

    summary = GoldSummary()
    try:
        lines = gold_lines(store, queue, include_pending_second, summary)
        text = (json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        if output is None:
            write_stdout(text)
        else:
            write_text(output, text, db)
    except QueueError as exc:
        fail(str(exc))
    console.print(escape(summary.held_back()))


reviewers_app = typer.Typer(
    help="Reviewer ids and the people behind them (one person under several ids).",
    no_args_is_help=True,
)
app.add_typer(reviewers_app, name="reviewers")


@reviewers_app.command("alias")
def alias_cmd(
    annotator: str = typer.Argument(..., help="An id the person reviews under, e.g. "
                                    "alice@example.org (from Label Studio)."),
    person: str = typer.Argument(..., help="The person's id, e.g. alice (the web login)."),
    db: Path = EXISTING_DB_OPTION,
    by: str | None = typer.Option(None, "--by", help="Who records the alias."),
) -> None:
    """Record that ANNOTATOR is PERSON: agreement, double review and "reviewed by you" then
    count them as one person (their latest review is their label)."""
    from judge.review.aliases import set_alias

    store = open_store(db, must_exist=True)
    try:
        row = set_alias(store, annotator, person, created_by=by)
    except ReviewError as exc:
        fail(escape(str(exc)))
    finally:
        store.close()
    out.print(f"{escape(row['annotator'])} is {escape(row['person'])}")


@reviewers_app.command("unalias")
def unalias_cmd(
    annotator: str = typer.Argument(..., help="The id to make its own person again."),
    db: Path = EXISTING_DB_OPTION,
) -> None:
    """Forget ANNOTATOR's alias (it counts as its own person again)."""
    from judge.review.aliases import remove_alias

    store = open_store(db, must_exist=True)
    try:
        removed = remove_alias(store, annotator)
    except ReviewError as exc:
        fail(escape(str(exc)))
    finally:
        store.close()
    if not removed:
        fail(f"{escape(annotator)} has no alias")
    out.print(f"{escape(annotator)} is its own person again")


@reviewers_app.command("list")
def list_reviewers(
    db: Path = EXISTING_DB_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the aliases as JSON."),
) -> None:
    """The recorded aliases, by person."""
    from judge.review.aliases import aliases

    store = open_store(db, must_exist=True)
    try:
        rows = aliases(store)
    finally:
        store.close()
    if as_json:
        print_json(rows)
        return
    if not rows:
        out.print("no aliases: every reviewer id is its own person")
        return
    table = Table("id", "person", "since")
    for r in rows:
        table.add_row(escape(r["annotator"]), escape(r["person"]), r["created_at"][:19])
    out.print(table)
