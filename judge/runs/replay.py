"""Replay: re-derive a run's verdicts from the stored model outputs, calling no model,
and report every difference from what was stored."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judge.config import JudgeConfig
from judge.config.score_model import DEFAULT_RULE
from judge.fingerprint import code_fingerprint
from judge.models.client import ReplayMiss
from judge.runs.batch import build_pipeline
from judge.store import Store
from judge.version import remember_stored_heads

if TYPE_CHECKING:
    from judge.pipeline import Pipeline

COMPARED = ("label", "subtype", "evidence", "strength", "review", "review_reasons", "error")


@dataclass
class ReplayReport:
    run_id: str
    judge_version: str
    answers: int = 0
    claims: int = 0
    differences: list[dict[str, Any]] = field(default_factory=list)
    missing_calls: list[str] = field(default_factory=list)
    template_changes: list[str] = field(default_factory=list)
    #: fingerprints (judge.fingerprint) of the code that judged the run's answers (None:
    #: stored before fingerprints were recorded) and of the code replaying them
    stored_code: list[str | None] = field(default_factory=list)
    code: str = field(default_factory=code_fingerprint)
    #: answers whose stored verdicts this code re-derived exactly (recorded in the store)
    reproduced: int = 0
    #: verdicts stored without ``support`` that the replay filled in
    backfilled: int = 0

    @property
    def clean(self) -> bool:
        return not (self.differences or self.missing_calls or self.template_changes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "judge_version": self.judge_version,
            "answers": self.answers,
            "claims": self.claims,
            "differences": self.differences,
            "missing_calls": self.missing_calls,
            "template_changes": self.template_changes,
            "stored_code": self.stored_code,
            "code": self.code,
            "reproduced": self.reproduced,
            "backfilled": self.backfilled,
            "clean": self.clean,
        }


def replay_run(store: Store, run_id: str) -> ReplayReport:
    run = store.run(run_id)
    version_row = store.db.table("judge_versions").get(run["judge_version"])
    remember_stored_heads(store)
    config = JudgeConfig.model_validate(json.loads(version_row["config"]))
    pipeline = build_pipeline(config, store, replay=True)
    report = ReplayReport(run_id, run["judge_version"])
    stored_templates = json.loads(version_row["templates"])
    for name, digest in stored_templates.items():
        if pipeline.templates.get(name) != digest:
            report.template_changes.append(
                f"{name}: template file differs from the one this run used"
            )
    stored = {}
    for row in store.verdict_rows(run_id=run_id):
        stored[row["claim_id"]] = row
    return asyncio.run(_replay(store, run_id, pipeline, stored, report))


async def _replay(store: Store, run_id: str, pipeline: Pipeline, stored: dict[str, dict[str, Any]],
                  report: ReplayReport) -> ReplayReport:
    seen: set[str] = set()
    missing: set[str] = set()
    # answer id -> {verdict id: re-derived support} of verdicts stored without one
    backfill: dict[str, dict[str, float]] = {}
    answer_rows = store.run_answer_rows(run_id)
    for ra in answer_rows:
        if ra["code"] not in report.stored_code:
            report.stored_code.append(ra["code"])
        record = store.answer_record(ra["answer_id"])
        if record is None:
            continue
        report.answers += 1
        try:
            result = await pipeline.judge(record, None, _stored_domain(stored, record))
        except ReplayMiss as exc:
            report.missing_calls.append(f"{record.answer_id}: {exc}")
            missing.add(record.answer_id)
            continue
        if result.status != ra["status"]:
            report.differences.append(
                {
                    "answer_id": record.answer_id,
                    "field": "status",
                    "stored": ra["status"],
                    "replayed": result.status,
                }
            )
        for verdict in result.verdicts:
            report.claims += 1
            seen.add(verdict.claim_id)
            old = stored.get(verdict.claim_id)
            if old is None:
                report.differences.append(
                    {
                        "answer_id": record.answer_id,
                        "claim_id": verdict.claim_id,
                        "field": "claim",
                        "stored": None,
                        "replayed": "new claim",
                    }
                )
                continue
            new = verdict.model_dump(mode="json")
            compared: tuple[str, ...] = COMPARED
            if old.get("rule") is not None:  # recorded since m008_verdict_rule
                compared += ("rule",)
            if old.get("support") is not None:
                compared += ("support",)
            elif new["support"] is not None:  # stored before the judge kept it: fill it in
                backfill.setdefault(record.answer_id, {})[old["id"]] = new["support"]
            for key in compared:
                if _norm(old[key]) != _norm(new[key]):
                    report.differences.append(
                        {
                            "answer_id": record.answer_id,
                            "claim_id": verdict.claim_id,
                            "field": key,
                            "stored": old[key],
                            "replayed": new[key],
                        }
                    )
    for claim_id, old in stored.items():
        if claim_id not in seen and old["answer_id"] not in missing:
            report.differences.append(
                {
                    "answer_id": old["answer_id"],
                    "claim_id": claim_id,
                    "field": "claim",
                    "stored": old["label"],
                    "replayed": None,
                }
            )
    reproduced = _mark_reproduced(store, report, [ra["answer_id"] for ra in answer_rows],
                                  missing)
    chosen = {vid: value for answer_id in reproduced & backfill.keys()
              for vid, value in backfill[answer_id].items()}
    store.backfill_support(chosen)
    report.backfilled = len(chosen)
    return report


def _stored_domain(stored: dict[str, dict[str, Any]], record: Any) -> str | None:
    """The domain whose rule decided the answer's stored verdicts (a gold item's dataset is
    passed apart from its record, so the verdicts are where it is kept); the record's own
    domain when they name none."""
    rules = {r.get("rule") for r in stored.values() if r["answer_id"] == record.answer_id}
    named: list[str] = sorted(r for r in rules if r and r != DEFAULT_RULE)
    if named:
        return named[0]
    domain: str | None = record.domain
    return None if DEFAULT_RULE in rules else domain


def _mark_reproduced(store: Store, report: ReplayReport, answer_ids: list[str],
                     missing: set[str]) -> set[str]:
    """Record the current code against every answer whose verdicts it re-derived exactly
    (no difference, no missing call): later runs that reuse them under this code are then
    not warned about, and their verdicts stored without ``support`` get it. Returns those
    answers."""
    if report.template_changes:
        return set()
    differing = {d["answer_id"] for d in report.differences}
    reproduced = set()
    for answer_id in answer_ids:
        if answer_id not in differing | missing:
            store.mark_reproduced(report.judge_version, answer_id, report.code)
            reproduced.add(answer_id)
    report.reproduced = len(reproduced)
    return reproduced


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    return json.loads(json.dumps(value, sort_keys=True, default=str))
