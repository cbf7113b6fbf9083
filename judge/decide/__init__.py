"""Deciding labels: one module per strategy, each turning an answer's claims into
:class:`Decision` s (a model judgement or an error, the calls made, the evidence the program
located, the support probability when the strategy computes one).

- :mod:`judge.decide.batch`: the model labels several claims per call against whole sources;
- :mod:`judge.decide.per_claim`: the program locates excerpts, the model labels one claim;
- :mod:`judge.decide.scores`: the model answers a multiple-choice question with one letter and
  the program decides from the letters' log-probabilities (:mod:`judge.decide.linear`: the
  linear rule over them and the program's features).

Each strategy is declared in :mod:`judge.decide.registry` (its class, its prompt, what it asks
of the config): the one place to add one. Helpers: :mod:`~judge.decide.excerpts` (evidence
located by the program). The program's corrections of a decided label (signals, the abstention
check) belong to :mod:`judge.assembly`. May import records, verdicts, checks, split, config and
models; never store, review or evaluation.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from judge.models.schemas import ClaimJudgement
from judge.verdicts import Claim, Evidence

if TYPE_CHECKING:
    from judge.config import JudgeConfig
    from judge.models.client import ModelClient
    from judge.records import AnswerRecord


@dataclass
class Decision:
    """What a strategy decided about one claim. ``judgement`` is None exactly when ``error``
    says why no label could be had (the verdict becomes a ``judge_error``)."""

    claim: Claim
    judgement: ClaimJudgement | None
    error: str | None = None
    call_ids: list[str] = field(default_factory=list)
    #: evidence the program located (found by construction); None: the model quoted it
    located: list[Evidence] | None = None
    #: P(supported), for strategies that compute one
    support: float | None = None


class Strategy(Protocol):
    async def decide(
        self, record: AnswerRecord, claims: list[Claim], run_id: str | None
    ) -> list[Decision]: ...


class StrategyBase:
    """A strategy bound to a judge config, a model client and the prompt templates."""

    def __init__(self, config: JudgeConfig, client: ModelClient, root: Path) -> None:
        self.config = config
        self.client = client
        self.root = root


class PerClaim(StrategyBase):
    """A strategy that decides each claim on its own (its calls may run concurrently)."""

    async def decide(
        self, record: AnswerRecord, claims: list[Claim], run_id: str | None
    ) -> list[Decision]:
        return list(await asyncio.gather(*(self.one(record, c, run_id) for c in claims)))

    async def one(self, record: AnswerRecord, claim: Claim, run_id: str | None) -> Decision:
        raise NotImplementedError


def strategy_for(config: JudgeConfig, client: ModelClient, root: Path) -> Strategy:
    """The config's strategy (declared in :mod:`judge.decide.registry`), bound to a model
    client and the prompt templates."""
    from judge.decide.registry import spec_of

    return spec_of(config.strategy).build(config, client, root)
