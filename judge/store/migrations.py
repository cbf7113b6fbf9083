"""Schema migrations: an ordered list, each applied once and recorded in ``_migrations``.

Never edit or reorder a migration that has shipped; append a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import sqlite_utils

Migration = Callable[[sqlite_utils.Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_core(db: sqlite_utils.Database) -> None:
    db["judge_versions"].create(
        {"id": str, "model": str, "config": str, "templates": str, "created_at": str}, pk="id"
    )
    db["runs"].create(
        {
            "id": str,
            "judge_version": str,
            "input_path": str,
            "input_sha256": str,
            "started_at": str,
            "finished_at": str,
            "status": str,
            "stats": str,
            "purpose": str,
        },
        pk="id",
        foreign_keys=[("judge_version", "judge_versions", "id")],
    )
    db["answers"].create(
        {
            "id": str,
            "record_sha256": str,
            "question": str,
            "answer": str,
            "generator": str,
            "expected_status": str,
            "record": str,
            "first_seen": str,
        },
        pk="id",
    )
    db["sources"].create(
        {
            "answer_id": str,
            "id": str,
            "title": str,
            "text": str,
            "json": str,
            "version": str,
            "effective_date": str,
        },
        pk=("answer_id", "id"),
    )
    db["run_answers"].create(
        {
            "run_id": str,
            "answer_id": str,
            "line": int,
            "status": str,
            "refused_reason": str,
            "answer_status": str,
            "error": str,
            "finished_at": str,
        },
        pk=("run_id", "answer_id"),
    )
    db["rejected_lines"].create({"run_id": str, "line": int, "error": str}, pk=("run_id", "line"))
    db["claims"].create(
        {
            "id": str,
            "answer_id": str,
            "idx": int,
            "text": str,
            "citations": str,
            "origin": str,
            "is_abstention": int,
        },
        pk="id",
    )
    # Split results are per judge version: which claims this version found in this answer.
    db["answer_claims"].create(
        {"judge_version": str, "answer_id": str, "claim_id": str, "idx": int},
        pk=("judge_version", "answer_id", "claim_id"),
    )
    db["verdicts"].create(
        {
            "id": str,
            "judge_version": str,
            "claim_id": str,
            "answer_id": str,
            "run_id": str,
            "label": str,
            "subtype": str,
            "evidence": str,
            "rationale": str,
            "checks": str,
            "strength": float,
            "review": int,
            "review_reasons": str,
            "error": str,
            "call_ids": str,
            "created_at": str,
        },
        pk="id",
    )
    db["verdicts"].create_index(["judge_version", "claim_id"], unique=True)
    db["verdicts"].create_index(["answer_id"])
    db["checks"].create(
        {
            "verdict_id": str,
            "seq": int,
            "name": str,
            "target": str,
            "outcome": str,
            "detail": str,
        },
        pk=("verdict_id", "seq"),
    )
    db["checks"].create_index(["name", "outcome"])
    db["calls"].create(
        {
            "id": str,
            "purpose": str,
            "template": str,
            "template_version": str,
            "template_sha256": str,
            "model_sent": str,
            "model_answered": str,
            "system_fingerprint": str,
            "params": str,
            "messages": str,
            "response_schema": str,
            "raw_output": str,
            "parsed": str,
            "error": str,
            "finish_reason": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "latency_ms": float,
            "cost": float,
            "attempts": int,
            "created_at": str,
            "run_id": str,
        },
        pk="id",
    )


@migration
def m002_review(db: sqlite_utils.Database) -> None:
    """Review queues (strata and weights per item), human reviews (append-only history)
    and adjudications (decisions that keep the reviews they decide between)."""
    db["queues"].create(
        {
            "id": str,
            "created_at": str,
            "run_ids": str,
            "judge_versions": str,
            "seed": int,
            "sample_rate": float,
            "min_sample": int,
            "double_fraction": float,
            "priority": str,
            "strata": str,
            "items": int,
            "created_by": str,
        },
        pk="id",
    )
    db["queue_items"].create(
        {
            "id": str,
            "queue_id": str,
            "position": int,
            "subject": str,
            "kind": str,
            "claim_id": str,
            "answer_id": str,
            "verdict_id": str,
            "judge_version": str,
            "run_id": str,
            "category": str,
            "reasons": str,
            "stratum": str,
            "stratum_size": int,
            "sample_size": int,
            "weight": float,
            "reviews_required": int,
        },
        pk="id",
    )
    db["queue_items"].create_index(["queue_id", "position"], unique=True)
    db["queue_items"].create_index(["queue_id", "subject"], unique=True)
    db["queue_items"].create_index(["subject"])
    # One row per decision; a revision is a new row that names the one it supersedes.
    db["reviews"].create(
        {
            "id": str,
            "subject": str,
            "claim_id": str,
            "answer_id": str,
            "queue_id": str,
            "item_id": str,
            "annotator": str,
            "label": str,
            "subtype": str,
            "note": str,
            "guideline_version": str,
            "created_at": str,
            "time_spent_ms": int,
            "revision": int,
            "supersedes": str,
            "origin": str,
        },
        pk="id",
    )
    db["reviews"].create_index(["subject", "annotator", "revision"], unique=True)
    db["reviews"].create_index(["annotator"])
    db["adjudications"].create(
        {
            "id": str,
            "subject": str,
            "claim_id": str,
            "answer_id": str,
            "queue_id": str,
            "adjudicator": str,
            "label": str,
            "subtype": str,
            "reason": str,
            "review_ids": str,
            "guideline_version": str,
            "created_at": str,
            "revision": int,
            "supersedes": str,
        },
        pk="id",
    )
    db["adjudications"].create_index(["subject", "revision"], unique=True)


@migration
def m003_code_fingerprint(db: sqlite_utils.Database) -> None:
    """Which code (judge.fingerprint) started a run and judged each answer; unknown (null)
    for what was stored before this migration."""
    db["runs"].add_column("code", str)
    db["run_answers"].add_column("code", str)


@migration
def m004_code_reproduced(db: sqlite_utils.Database) -> None:
    """The code fingerprints whose ``judge replay`` gave an answer's stored verdicts exactly
    (a JSON list): reusing those verdicts under such code is not stale."""
    db["run_answers"].add_column("reproduced_by", str)


@migration
def m005_support_and_order(db: sqlite_utils.Database) -> None:
    """The judge's probability that a claim is supported, when its strategy gives one (null
    for the structured strategies and for what was stored before; ``judge replay`` fills it
    in for verdicts it reproduces), and the reading order a queue was built with (null =
    ``priority``, the only order before this migration)."""
    db["verdicts"].add_column("support", float)
    db["queues"].add_column("ordering", str)


@migration
def m008_verdict_rule(db: sqlite_utils.Database) -> None:
    """Which decision rule of the judge config decided a verdict (``default`` or a domain's
    rule, see ``JudgeConfig.domain_rules``); null for what was stored before and for the
    strategies without a rule."""
    db["verdicts"].add_column("rule", str)


@contextmanager
def write_transaction(db: sqlite_utils.Database) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (a savepoint when already inside a transaction)."""
    conn = db.conn
    if conn.in_transaction:
        with db.atomic():
            yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def apply_migrations(db: sqlite_utils.Database) -> list[str]:
    """Apply pending migrations in order, under the write lock, so two processes opening a
    new file at once do not both create the tables; return the names applied."""
    applied: list[str] = []
    with write_transaction(db):
        table = db["_migrations"]
        if not table.exists():
            table.create({"name": str, "applied_at": str}, pk="name")
        done = {row["name"] for row in table.rows}
        for name, fn in MIGRATIONS:
            if name in done:
                continue
            with db.atomic():
                fn(db)
                table.insert({"name": name, "applied_at": datetime.now(UTC).isoformat()})
            applied.append(name)
    return applied
