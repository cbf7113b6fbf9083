"""The judging pipeline for one answer: self-grading refusal → split → decide → verdict assembly.

An answer is refused when its generator is the judge model or of its family (however the name
is spelled: :mod:`judge.models.identity`), or names no generator under ``require_generator``.
A verdict resting on a call the provider answered as another model than the pinned one is
flagged ``model_mismatch`` (the last step of the verdict assembly, :mod:`judge.assembly.steps`).

``Pipeline.judge`` is free of storage writes: it returns a :class:`JudgedAnswer` that the
runner persists in one transaction, and that replay compares with what was stored.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from judge.assembly.verdict import Assembler
from judge.config import JudgeConfig
from judge.decide import Decision, Strategy, strategy_for
from judge.models.client import ModelClient
from judge.models.identity import self_grading_reason
from judge.models.prompts import prompts_dir
from judge.records import AnswerRecord
from judge.split.claims import Splitter, answer_status, unsplit_claim
from judge.text import prepare_source
from judge.verdicts import AnswerStatus, Claim, Verdict
from judge.version import pin

if TYPE_CHECKING:
    from judge.decide.batch import BatchStrategy
    from judge.decide.one_call import OneCall


@dataclass
class JudgedAnswer:
    """One answer's outcome: ``judged`` (claims and verdicts) or ``refused`` (self-grading)."""

    record: AnswerRecord
    status: str  # "judged" | "refused"
    claims: list[Claim] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    answer_status: AnswerStatus | None = None
    refused_reason: str | None = None
    #: sentences the split found no claim in, with the reason (split_claims v2+)
    skipped: list[dict[str, Any]] = field(default_factory=list)


class Pipeline:
    """A pinned judge: config + prompt templates → a judge version; judges answer records."""

    def __init__(self, config: JudgeConfig, client: ModelClient, root: Path | None = None):
        self.config = config
        self.client = client
        self.root = root or prompts_dir()
        pinned = pin(config, self.root)  # the version is a function of config and templates
        self.templates = pinned.templates
        self.judge_version = pinned.id
        self.splitter = Splitter(config, client, self.root)
        self.strategy = strategy_for(config, client, self.root)
        self.one_call: OneCall | None = None
        if config.one_call:  # split and verify in one call (judge.decide.one_call)
            from judge.decide.one_call import OneCall

            self.one_call = OneCall(config, client, self.root, self.splitter)
        self.assembler = Assembler(config, self.judge_version, client.answered_by_other)
        #: rule name -> (strategy, assembler) deciding with that rule's config
        self._rules: dict[str | None, tuple[Strategy, Assembler]] = {}

    def rule_name(self, domain: str | None) -> str | None:
        """The rule that decides answers of ``domain`` (see ``JudgeConfig.rule_for``)."""
        return self.config.rule_for(domain)[0]

    def _decider(self, domain: str | None) -> tuple[str | None, Strategy, Assembler]:
        name, config = self.config.rule_for(domain)
        if name not in self._rules:
            if config is self.config:
                self._rules[name] = (self.strategy, self.assembler)
            else:
                self._rules[name] = (strategy_for(config, self.client, self.root),
                                     Assembler(config, self.judge_version,
                                               self.client.answered_by_other))
        return (name, *self._rules[name])

    async def judge(
        self, record: AnswerRecord, run_id: str | None = None, domain: str | None = None
    ) -> JudgedAnswer:
        """Judge one answer. ``domain`` (default: the record's own ``domain``) picks the
        decision rule (``JudgeConfig.domain_rules``); the verdicts record which one decided."""
        served = self.config.probe_endpoint  # the model whose vectors decide is a judge too
        reason = next(filter(None, (self_grading_reason(record.generator, model) for model in
                                    (self.config.model, *([served.model] if served else [])))),
                      None)
        if reason:
            return JudgedAnswer(record, "refused", refused_reason=reason)
        await prepare(record)
        if record.generator is None and self.config.require_generator:
            return JudgedAnswer(record, "refused", refused_reason=MISSING_GENERATOR)
        rule, strategy, assembler = self._decider(domain if domain is not None else record.domain)
        joint = None  # one_call: the split and the decisions of one call
        if self.one_call is not None and record.claims is None:
            joint = await self.one_call.judge(record, cast("BatchStrategy", strategy), run_id)
        split, decisions = joint or (await self.splitter.split(record, run_id), None)
        split_calls = [split.call_id] if split.call_id else []
        if split.error is not None:
            decision = Decision(split.claims[0], None, split.error)
            verdict = assembler.verdict(record, decision, split_calls)
            return JudgedAnswer(
                record, "judged", split.claims, [_ruled(verdict, rule)],
                answer_status(split.claims),
            )
        if decisions is None:  # an ungrounded claim is not judged (judge.split.claims)
            wanted = [p for p in range(len(split.claims)) if p not in split.ungrounded]
            decided = dict(zip(wanted, await strategy.decide(
                record, [split.claims[p] for p in wanted], run_id) if wanted else [],
                strict=True))
            decisions = [decided.get(p) or Decision(claim, None, split.ungrounded[p])
                         for p, claim in enumerate(split.claims)]
        verdicts = [_ruled(assembler.verdict(record, d, split_calls), rule) for d in decisions]
        return JudgedAnswer(record, "judged", split.claims, verdicts,
                            answer_status(split.claims), skipped=split.skipped)

    def failed(self, record: AnswerRecord, error: str) -> JudgedAnswer:
        """The answer as one ``judge_error`` claim: what an unexpected failure while judging
        it leaves (the batch goes on; a person looks)."""
        claim = unsplit_claim(record)
        verdict = self.assembler.verdict(record, Decision(claim, None, error))
        return JudgedAnswer(record, "judged", [claim], [verdict], answer_status([claim]))


#: Sources at least this long are prepared in a worker thread before the answer is judged.
PREPARE_IN_THREAD_CHARS = 20_000


async def prepare(record: AnswerRecord) -> None:
    """The CPU-heavy preparation of long sources (sentence splitting, passage tokens: cached
    per source, :func:`judge.text.prepare_source`) in a worker thread, so one long source does
    not stall the event loop: the other answers' calls go on and finished answers are
    committed meanwhile."""
    long = [s.content for s in record.sources
            if s.text is not None and len(s.text) >= PREPARE_IN_THREAD_CHARS]
    if long:
        await asyncio.to_thread(_prepare_all, long)


def _prepare_all(texts: list[str]) -> None:
    for text in texts:
        prepare_source(text)


def _ruled(verdict: Verdict, rule: str | None) -> Verdict:
    return verdict if rule is None else verdict.model_copy(update={"rule": rule})


#: Why an answer without a generator is refused when ``require_generator`` is set.
MISSING_GENERATOR = (
    "no generator named: require_generator is set, and without the generating model "
    "self-grading cannot be ruled out; give the answer's 'generator'"
)
