"""Schema migrations: an ordered list, each applied once and recorded in ``_migrations``.

Never edit or reorder a migration that has shipped; append a new one.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils

Migration = Callable[[sqlite_utils.Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_core(db: sqlite_utils.Database) -> None:
    db.table("judge_versions").create(
        {"id": str, "model": str, "config": str, "templates": str, "created_at": str}, pk="id"
    )
    db.table("runs").create(
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
    db.table("answers").create(
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
    db.table("sources").create(
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
    db.table("run_answers").create(
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
    db.table("rejected_lines").create(
        {"run_id": str, "line": int, "error": str}, pk=("run_id", "line")
    )
    db.table("claims").create(
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
    db.table("answer_claims").create(
        {"judge_version": str, "answer_id": str, "claim_id": str, "idx": int},
        pk=("judge_version", "answer_id", "claim_id"),
    )
    db.table("verdicts").create(
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
    db.table("verdicts").create_index(["judge_version", "claim_id"], unique=True)
    db.table("verdicts").create_index(["answer_id"])
    db.table("checks").create(
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
    db.table("checks").create_index(["name", "outcome"])
    db.table("calls").create(
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
    db.table("queues").create(
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
    db.table("queue_items").create(
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
    db.table("queue_items").create_index(["queue_id", "position"], unique=True)
    db.table("queue_items").create_index(["queue_id", "subject"], unique=True)
    db.table("queue_items").create_index(["subject"])
    # One row per decision; a revision is a new row that names the one it supersedes.
    db.table("reviews").create(
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
    db.table("reviews").create_index(["subject", "annotator", "revision"], unique=True)
    db.table("reviews").create_index(["annotator"])
    db.table("adjudications").create(
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
    db.table("adjudications").create_index(["subject", "revision"], unique=True)


@migration
def m003_code_fingerprint(db: sqlite_utils.Database) -> None:
    """Which code (judge.fingerprint) started a run and judged each answer; unknown (null)
    for what was stored before this migration."""
    db.table("runs").add_column("code", str)
    db.table("run_answers").add_column("code", str)


@migration
def m004_code_reproduced(db: sqlite_utils.Database) -> None:
    """The code fingerprints whose ``judge replay`` gave an answer's stored verdicts exactly
    (a JSON list): reusing those verdicts under such code is not stale."""
    db.table("run_answers").add_column("reproduced_by", str)


@migration
def m005_support_and_order(db: sqlite_utils.Database) -> None:
    """The judge's probability that a claim is supported, when its strategy gives one (null
    for the structured strategies and for what was stored before; ``judge replay`` fills it
    in for verdicts it reproduces), and the reading order a queue was built with (null =
    ``priority``, the only order before this migration)."""
    db.table("verdicts").add_column("support", float)
    db.table("queues").add_column("ordering", str)


@migration
def m006_call_attempts(db: sqlite_utils.Database) -> None:
    """Every HTTP attempt of a model call (a call retried after a 503 or re-asked after an
    output that did not parse has several): when, how it ended, how long it took. The calls
    table keeps the logical call and its final outcome."""
    db.table("call_attempts").create(
        {
            "id": int,
            "call_id": str,
            "attempt": int,
            "run_id": str,
            "started_at": str,
            "status": str,
            "http_status": int,
            "latency_ms": float,
            "error": str,
        },
        pk="id",
    )
    db.table("call_attempts").create_index(["call_id"])


#: Every link between tables (table, column, other table, other column): declared as foreign
#: keys by m007 so Datasette and other browsers show them as links. The store keeps
#: ``PRAGMA foreign_keys = OFF`` (an answer's claims and verdicts are written in one
#: transaction, and a queue item keeps naming a run after it is gone): the keys describe the
#: schema, they do not reject writes.
LINKS: tuple[tuple[str, str, str, str], ...] = (
    ("sources", "answer_id", "answers", "id"),
    ("run_answers", "run_id", "runs", "id"),
    ("run_answers", "answer_id", "answers", "id"),
    ("rejected_lines", "run_id", "runs", "id"),
    ("claims", "answer_id", "answers", "id"),
    ("answer_claims", "judge_version", "judge_versions", "id"),
    ("answer_claims", "answer_id", "answers", "id"),
    ("answer_claims", "claim_id", "claims", "id"),
    ("verdicts", "judge_version", "judge_versions", "id"),
    ("verdicts", "claim_id", "claims", "id"),
    ("verdicts", "answer_id", "answers", "id"),
    ("verdicts", "run_id", "runs", "id"),
    ("checks", "verdict_id", "verdicts", "id"),
    ("calls", "run_id", "runs", "id"),
    ("call_attempts", "call_id", "calls", "id"),
    ("call_attempts", "run_id", "runs", "id"),
    ("queue_items", "queue_id", "queues", "id"),
    ("queue_items", "claim_id", "claims", "id"),
    ("queue_items", "answer_id", "answers", "id"),
    ("queue_items", "verdict_id", "verdicts", "id"),
    ("queue_items", "judge_version", "judge_versions", "id"),
    ("queue_items", "run_id", "runs", "id"),
    ("reviews", "claim_id", "claims", "id"),
    ("reviews", "answer_id", "answers", "id"),
    ("reviews", "queue_id", "queues", "id"),
    ("reviews", "item_id", "queue_items", "id"),
    ("reviews", "supersedes", "reviews", "id"),
    ("adjudications", "claim_id", "claims", "id"),
    ("adjudications", "answer_id", "answers", "id"),
    ("adjudications", "queue_id", "queues", "id"),
    ("adjudications", "supersedes", "adjudications", "id"),
)

# The views of m007. A later migration that rebuilds one of the tables they read keeps them:
# SQLite re-checks views when a table is renamed, and these name only columns that exist.
_JOINED = "(select group_concat(value, ', ') from json_each({}))"
HUMAN_DECISIONS = """
with current_reviews as (
  select r.* from reviews r
  where r.annotator like 'human:%' and r.revision = (
    select max(r2.revision) from reviews r2
    where r2.subject = r.subject and r2.annotator = r.annotator)
),
agreed as (
  select subject, min(claim_id) as claim_id, min(label) as label, min(subtype) as subtype,
         'agreed reviews' as decided_by, group_concat(annotator, ', ') as annotators
  from current_reviews group by subject
  having count(distinct label || '|' || coalesce(subtype, '')) = 1
),
adjudicated as (
  select a.subject, a.claim_id, a.label, a.subtype, 'adjudication' as decided_by,
         a.adjudicator as annotators
  from adjudications a
  where a.adjudicator like 'human:%' and a.revision = (
    select max(a2.revision) from adjudications a2 where a2.subject = a.subject)
),
decisions as (
  select * from adjudicated
  union all
  select * from agreed where subject not in (select subject from adjudicated)
)
"""
VIEWS: dict[str, str] = {
    # One row per verdict: the claim's text beside the judge's label.
    "claim_verdicts": f"""
select v.id as verdict_id, v.answer_id, v.claim_id, c.idx as claim_index, c.text as claim,
       v.label, v.subtype, v.support, v.strength, v.review,
       {_JOINED.format("v.review_reasons")} as review_reasons,
       v.rationale, v.error, v.judge_version, v.run_id, v.created_at
from verdicts v join claims c on c.id = v.claim_id
""",
    # One row per queue item, in reading order, with the claim's text and its reviews so far.
    "review_queue": f"""
select qi.queue_id, qi.position, qi.id as item_id, qi.kind, qi.answer_id, qi.claim_id,
       coalesce(c.text, a.answer) as claim, {_JOINED.format("qi.reasons")} as reasons,
       qi.category, qi.stratum, qi.weight, qi.reviews_required,
       (select count(distinct r.annotator) from reviews r where r.subject = qi.subject)
         as reviewers,
       exists(select 1 from adjudications j where j.subject = qi.subject) as adjudicated,
       v.label as judge_label, v.subtype as judge_subtype, v.support, qi.judge_version
from queue_items qi
left join claims c on c.id = qi.claim_id
left join answers a on a.id = qi.answer_id
left join verdicts v on v.id = qi.verdict_id
""",
    # Claims a person decided (an adjudication, else reviewers who all agree) whose label the
    # judge got wrong: lenient (judge supported, people did not), strict (the reverse), or
    # another wrong label. One row per judge version that judged the claim.
    "calibration_errors": HUMAN_DECISIONS + """
select d.claim_id, v.answer_id, c.text as claim, v.judge_version,
       v.label as judge_label, v.subtype as judge_subtype, v.support,
       d.label as human_label, d.subtype as human_subtype, d.decided_by, d.annotators,
       case when v.label = 'supported' then 'lenient'
            when d.label = 'supported' then 'strict'
            else 'other label' end as direction,
       v.rationale, v.id as verdict_id
from decisions d
join verdicts v on v.claim_id = d.claim_id
join claims c on c.id = d.claim_id
where d.claim_id is not null and v.label != d.label
""",
}


@migration
def m007_views_and_keys(db: sqlite_utils.Database) -> None:
    """Foreign keys on every link (:data:`LINKS`; SQLite cannot add them in place, so each
    table is rebuilt with every row, column and index kept) and the views ``claim_verdicts``,
    ``review_queue`` and ``calibration_errors`` (:data:`VIEWS`), so a SQLite browser such as
    Datasette links a verdict to its claim, its answer and its reviews."""
    existing = set(db.table_names())
    db.add_foreign_keys([link for link in LINKS if link[0] in existing and link[2] in existing])
    for name, sql in VIEWS.items():
        db.execute(f"drop view if exists {name}")
        db.execute(f"create view {name} as {sql.strip()}")


@migration
def m008_verdict_rule(db: sqlite_utils.Database) -> None:
    """Which decision rule of the judge config decided a verdict (``default`` or a domain's
    rule, see ``JudgeConfig.domain_rules``); null for what was stored before and for the
    strategies without a rule."""
    db.table("verdicts").add_column("rule", str)


@migration
def m009_answer_leases(db: sqlite_utils.Database) -> None:
    """Which run is judging which answer now: a run claims an answer (per judge version) before
    judging it, so concurrent runs on one store share the work instead of repeating calls; a
    lease whose holder died or that expired is taken over."""
    db.table("answer_leases").create(
        {
            "judge_version": str,
            "answer_id": str,
            "record_sha256": str,
            "run_id": str,
            "holder": str,
            "host": str,
            "pid": int,
            "expires_at": float,
        },
        pk=("judge_version", "answer_id"),
    )
    db.table("answer_leases").create_index(["answer_id"])
    db.table("answer_leases").create_index(["holder"])


@migration
def m009_split_skips(db: sqlite_utils.Database) -> None:
    """Sentences of an answer that hold no claim, with the reason the split gave (greeting,
    question, advice, filler) and the program accepted, per judge version."""
    db.table("split_skips").create(
        {"judge_version": str, "answer_id": str, "sentence": int, "text": str, "reason": str},
        pk=("judge_version", "answer_id", "sentence"),
    )


@migration
def m009_superseded(db: sqlite_utils.Database) -> None:
    """What a retry replaced (``judge run --retry-errors``, or a failed call made again): the
    earlier call rows and ``judge_error`` verdicts, kept whole (the row as JSON, whatever
    columns later migrations add) with when and by which run."""
    db.table("superseded_calls").create(
        {"seq": int, "id": str, "row": str, "superseded_at": str, "run_id": str}, pk="seq"
    )
    db.table("superseded_calls").create_index(["id"])
    db.table("superseded_verdicts").create(
        {"seq": int, "id": str, "answer_id": str, "judge_version": str, "row": str,
         "superseded_at": str, "run_id": str},
        pk="seq",
    )
    db.table("superseded_verdicts").create_index(["answer_id", "judge_version"])


@migration
def m010_blind_seed(db: sqlite_utils.Database) -> None:
    """The seed of a queue's blind orders (the shuffled order of a blind export, each
    reviewer's order on the review pages): random per queue, recorded so that every order is
    reproducible from the store, and never shown to a blind reviewer. Null for queues built
    before; set the first time a blind order is needed."""
    db.table("queues").add_column("blind_seed", int)


@migration
def m010_reviewer_aliases(db: sqlite_utils.Database) -> None:
    """Which person an annotator id belongs to (``judge reviewers alias``): one person who
    reviews under several ids (the web login, an e-mail from Label Studio, an Argilla user id)
    counts once in agreement, double review and "reviewed by you". An id without a row is its
    own person."""
    db.table("reviewer_aliases").create(
        {"annotator": str, "person": str, "created_at": str, "created_by": str},
        pk="annotator",
    )
    db.table("reviewer_aliases").create_index(["person"])


@migration
def m011_probe_heads(db: sqlite_utils.Database) -> None:
    """The probe heads (strategy ``probe``) of the judge versions run on this store, by the
    sha256 the config pins, with the file's text: a stored run replays, and ``judge fit``
    refits, wherever the head file has gone since."""
    db.table("probe_heads").create(
        {"sha256": str, "body": str, "created_at": str}, pk="sha256"
    )


@migration
def m012_operating_points(db: sqlite_utils.Database) -> None:
    """The review queue's operating points (:mod:`judge.review.triage`): per judge version
    and domain (``''``: version-wide), the support threshold set from human gold for a target
    recall with a stated confidence, with the gold's hash and size and the bound. Not part of
    the judge version (labels do not change; only who reads what): every queue records the
    points it used (``queues.operating_points``) and each item its inclusion probability."""
    db.table("operating_points").create(
        {"id": str, "judge_version": str, "domain": str, "target_recall": float,
         "confidence": float, "threshold": float, "sufficient": int, "method": str,
         "gold_source": str, "gold_sha256": str, "n_gold": int, "n_problems": int,
         "report": str, "created_at": str, "created_by": str},
        pk="id",
    )
    db.table("operating_points").create_index(
        ["judge_version", "domain", "target_recall", "confidence"])
    db.table("queues").add_column("operating_points", str)
    db.table("queues").add_column("informative_share", float)
    db.table("queue_items").add_column("inclusion_probability", float)
    db.table("queue_items").add_column("support", float)


@migration
def m013_operating_point_score(db: sqlite_utils.Database) -> None:
    """An operating point's flag score spec (:mod:`judge.review.score`, JSON): how the score
    its threshold is on is formed. NULL (every point set before) means the support score."""
    db.table("operating_points").add_column("score", str)


@migration
def m014_prefix_states(db: sqlite_utils.Database) -> None:
    """The sha256 of each instructions' state the embedded runtime saved to disk
    (:mod:`judge.models.prefix_files`), by the file's name, recorded when it was evaluated
    and saved: a state is restored only when its bytes hash to this, never to anything
    written beside it (:mod:`judge.store.prefix_states`)."""
    db.table("prefix_states").create(
        {"name": str, "sha256": str, "recorded_at": str}, pk="name"
    )


@migration
def m015_web_sessions_and_item_leases(db: sqlite_utils.Database) -> None:
    """Login sessions of the review pages, kept across restarts (a digest of the cookie,
    never the cookie; :mod:`judge.service.sessions`), and who reviews which queue item now
    (a lease per item and person, :mod:`judge.review.assignment`)."""
    db.table("web_sessions").create(
        {"id": str, "name": str, "role": str, "csrf": str, "created_at": str,
         "expires_at": float},
        pk="id",
    )
    db.table("web_sessions").create_index(["expires_at"])
    db.table("item_leases").create(
        {"item_id": str, "person": str, "queue_id": str, "taken_at": str,
         "expires_at": float},
        pk=("item_id", "person"),
    )
    db.table("item_leases").create_index(["queue_id"])


@migration
def m016_batch_jobs(db: sqlite_utils.Database) -> None:
    """Provider batch jobs (``judge run --batch-api``, :mod:`judge.batches`): each job's
    input file, batch id, state and output files, and the calls (by id, the requests' custom
    ids) it holds, so a run stopped while a batch is in progress polls it again instead of
    sending its requests twice."""
    db.table("batch_jobs").create(
        {"id": str, "run_id": str, "model": str, "provider": str, "endpoint": str,
         "phase": int, "state": str, "requests": int, "input_file_id": str, "batch_id": str,
         "output_file_id": str, "error_file_id": str, "counts": str, "error": str,
         "created_at": str, "updated_at": str},
        pk="id")
    db.table("batch_requests").create({"call_id": str, "job_id": str},
                                      pk=("call_id", "job_id"))
    db.table("batch_requests").create_index(["job_id"])


@migration
def m017_call_cache_and_label_tokens(db: sqlite_utils.Database) -> None:
    """A call's prompt tokens the provider served from its prompt cache, when it reports them
    (NULL: it did not), and the tokens that spell the labels of a verification call that asked
    for log-probabilities (:mod:`judge.models.label_tokens`, JSON; NULL: none asked or
    returned), from which each claim's support is read."""
    db.table("calls").add_column("cached_tokens", int)
    db.table("calls").add_column("label_tokens", str)
