"""What a model client's calls used and who answered them: calls made, served from the store,
failed and merged; tokens and cost (as the provider and litellm report them); the prompt tokens
the provider served from its prompt cache, when it reports them (``cached_tokens``; litellm
prices them at the model's cache-read price, so the cost counts them); the model each call was
answered by, and the answers by another model than the pinned one."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from judge.models.identity import same_model
from judge.models.lazy_litellm import quiet_litellm

log = logging.getLogger("judge.models.client")


@dataclass
class CallStats:
    made: int = 0
    cached: int = 0
    failed: int = 0
    #: HTTP requests sent (a call that was retried or re-asked counts each try)
    attempts: int = 0
    #: identical calls that waited for one already in flight instead of calling again
    merged: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: prompt tokens the provider said it served from its prompt cache
    cached_tokens: int = 0
    cost: float = 0.0
    model_mismatch: set[str] = field(default_factory=set)


def cached_tokens(usage: Any) -> int | None:
    """The prompt tokens a provider says it served from its cache
    (``prompt_tokens_details.cached_tokens``, where litellm puts OpenAI's and Anthropic's
    cache reads); None when the response says nothing about them (instructor's usage
    accounting fills in 0 for a structured call whose provider said nothing)."""
    details = getattr(usage, "prompt_tokens_details", None)
    if isinstance(details, dict):
        value = details.get("cached_tokens")
    else:
        value = getattr(details, "cached_tokens", None)
    if value is None:
        value = getattr(usage, "cache_read_input_tokens", None)
    return int(value) if isinstance(value, int | float) and value >= 0 else None


def describe(responses: list[Any]) -> dict[str, Any]:
    """The last response's output and model, and the tokens that spell its labels
    (:func:`judge.models.label_tokens.read_label_tokens`, when it carries log-probabilities);
    tokens, cached tokens and cost summed over every response (a re-asked call pays for
    each)."""
    if not responses:
        return {"raw_output": None, "model_answered": None, "finish_reason": None}
    from judge.models.label_tokens import read_label_tokens

    response = responses[-1]
    choice = response.choices[0] if getattr(response, "choices", None) else None
    prompt_tokens = completion_tokens = 0
    cached: int | None = None
    costs: list[float | None] = []
    litellm = quiet_litellm()

    for each in responses:
        usage = getattr(each, "usage", None)
        prompt_tokens += getattr(usage, "prompt_tokens", None) or 0
        completion_tokens += getattr(usage, "completion_tokens", None) or 0
        read = cached_tokens(usage)
        if read is not None:
            cached = (cached or 0) + read
        # litellm prices every response it returns (in its hidden params): used as is
        known = (getattr(each, "_hidden_params", None) or {}).get("response_cost")
        if known is not None:
            costs.append(float(known))
            continue
        try:
            costs.append(float(litellm.completion_cost(completion_response=each)))
        except Exception:  # unknown models have no price; cost stays unknown
            costs.append(None)
    cost = None if None in costs else sum(c for c in costs if c is not None)
    return {
        "raw_output": getattr(getattr(choice, "message", None), "content", None),
        "model_answered": getattr(response, "model", None),
        "system_fingerprint": getattr(response, "system_fingerprint", None),
        "finish_reason": getattr(choice, "finish_reason", None),
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cached_tokens": cached,
        "cost": cost,
        "label_tokens": read_label_tokens(response),
    }


class Accounting:
    """The counts of one client (``stats``) and the model that answered each of its calls,
    checked against the pinned ``model`` (and ``also``: a probe endpoint's model)."""

    def __init__(self, model: str, stats: CallStats | None = None,
                 also: tuple[str, ...] = ()) -> None:
        self.model = model
        self.pinned = (model, *also)
        self.stats = stats or CallStats()
        #: call id -> the model the provider said answered it (calls made or served here)
        self.answered_as: dict[str, str] = {}

    def served(self, call_id: str, answered: str | None) -> None:
        """A call answered from the store."""
        self.stats.cached += 1
        self.note_model(call_id, answered)

    def made(self, row: dict[str, Any], tries: int, ok: bool) -> None:
        """A call made (``row`` as stored, ``tries`` its HTTP attempts)."""
        stats = self.stats
        stats.made += 1
        stats.attempts += max(1, tries)
        stats.failed += 0 if ok else 1
        stats.prompt_tokens += row.get("prompt_tokens") or 0
        stats.completion_tokens += row.get("completion_tokens") or 0
        stats.cached_tokens += row.get("cached_tokens") or 0
        stats.cost += row.get("cost") or 0.0
        self.note_model(row["id"], row.get("model_answered"))

    def note_model(self, call_id: str, answered: str | None) -> None:
        if not answered:
            return
        self.answered_as[call_id] = answered
        if not self.is_pinned(answered):
            if answered not in self.stats.model_mismatch:
                log.warning("provider answered with model %r, pinned %r", answered, self.model)
            self.stats.model_mismatch.add(answered)

    def answered_by_other(self, call_ids: list[str]) -> list[str]:
        """The models other than the pinned one that answered any of these calls."""
        return sorted({self.answered_as[c] for c in call_ids if c in self.answered_as
                       and not self.is_pinned(self.answered_as[c])})

    def is_pinned(self, answered: str) -> bool:
        return any(same_model(answered, model) for model in self.pinned)
