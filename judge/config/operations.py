"""The settings that never change a verdict, hence are left out of the judge version: where
the provider is, how long to wait, how often to try again, how much runs at once."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge.config.review import ReviewSettings
from judge.masking import remember_secrets


class OperationalSettings(BaseModel):
    """How a run goes, not what it decides: no field here is part of the judge version."""

    model_config = ConfigDict(extra="forbid")

    #: the provider's endpoint (an OpenAI-compatible server, a proxy); None: litellm's default
    #: for the model's provider (and its environment variables, e.g. ``OPENAI_API_BASE``)
    api_base: str | None = None
    timeout_s: float = Field(default=300.0, gt=0)
    #: transient failures (5xx, 429, timeouts, lost connections) are tried again this often
    retries: int = Field(default=2, ge=0, le=10)
    #: an output that does not parse is asked again (with the error) this often
    reasks: int = Field(default=1, ge=0, le=5)
    #: the first backoff before a retry, doubled each time (with jitter; ``Retry-After`` wins)
    backoff_s: float = Field(default=1.0, ge=0.0, le=60.0)
    #: stop the run after this many consecutive calls failed at the provider
    breaker_after: int = Field(default=5, ge=1, le=1000)
    #: answers judged at once (per process; per Ray worker with the Ray executor)
    concurrency: int = Field(default=1, ge=1, le=64)
    #: model calls in flight at once, per process; None: 4 x ``concurrency`` (the independent
    #: calls of one answer, e.g. its verify batches, do not wait on each other)
    call_concurrency: int | None = Field(default=None, ge=1, le=1024)
    #: the provider's limits: requests and tokens (prompt + max_tokens) per minute, honoured
    #: across all calls in flight; with the Ray executor each worker takes an equal share
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    #: how a run reads an input answer that cites nothing (no marker, no citation on a given
    #: claim) and does not say (the record's ``uncited``): "all_sources" cites every source,
    #: "missing_citation" reads it as it is (each claim flagged ``missing_citation``). Not
    #: part of the judge version: the choice is written into the record the run stores
    #: (judge.split.uncited).
    uncited: Literal["all_sources", "missing_citation"] = "all_sources"
    #: the review queue's target recall and learning settings (the ``[review]`` table)
    review: ReviewSettings = Field(default_factory=ReviewSettings)

    @model_validator(mode="before")
    @classmethod
    def _secrets(cls, data: Any) -> Any:
        """The credentials in ``api_base`` (and any value under a key's name, e.g. a stray
        ``api_key``) are masked wherever this process prints or stores them
        (:mod:`judge.masking`), its own validation errors included."""
        remember_secrets(data)
        return data

    def calls_in_flight(self) -> int:
        """Model calls in flight at once (``call_concurrency``, default 4 x concurrency)."""
        return self.call_concurrency or 4 * self.concurrency

    def share(self, workers: int) -> Self:
        """These settings for one of ``workers`` processes that together keep their rate
        limits."""
        if workers <= 1:
            return self
        return self.model_copy(update={
            "rpm": None if self.rpm is None else max(1, self.rpm // workers),
            "tpm": None if self.tpm is None else max(1, self.tpm // workers),
        })
