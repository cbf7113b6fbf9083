"""Packing an answer's claims into verify calls that fit the model's context (strategy
``batch``, verify_claims v2 and later): one call, when the prompt with every claim fits the
context and the judgements fit ``max_tokens``; else as few near-equal runs of consecutive
claims as fit. The same rule (:func:`fits_whole`) decides whether ``one_call`` can split and
judge an answer in one call.

Token counts are estimated by the program (:func:`judge.text.estimate_tokens`: no tokenizer
download, the same count on every machine). The context comes from ``context_tokens`` in
the config, else from litellm's model information (``max_input_tokens``), else
:data:`DEFAULT_CONTEXT`. Both are pinned (the config; the model id and litellm's version), so
the same answer is always cut the same way.
"""

from __future__ import annotations

import math
from functools import cache

from pydantic import BaseModel

from judge.config import JudgeConfig
from judge.models.client import response_schema
from judge.models.lazy_litellm import quiet_litellm
from judge.models.prompts import RenderedPrompt
from judge.text import estimate_tokens

__all__ = [
    "DEFAULT_CONTEXT", "TOKENS_PER_FRAME", "context_size", "estimate_tokens", "fits_whole", "plan",
    "prompt_tokens", "schema_tokens",
]

#: context assumed when neither the config nor litellm knows the model (the embedded model's
#: default context, judge.models.embedded.DEFAULT_N_CTX)
DEFAULT_CONTEXT = 8192
#: completion tokens one judgement is given (claim number, label, subtype, a short quote with
#: its source id, a short rationale: about 60 on the peer benchmark; two quotes and a rationale
#: of 12 words fit too)
TOKENS_PER_JUDGEMENT = 80
#: tokens a claim's frame adds besides its text (header with number and citations)
TOKENS_PER_FRAME = 30


@cache
def model_context(model: str) -> int | None:
    """litellm's ``max_input_tokens`` for a model, None when litellm does not know it."""
    try:
        litellm = quiet_litellm()

        info = litellm.get_model_info(model)
    except Exception:  # unknown or custom models: litellm raises
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    return int(value) if value else None


def context_size(config: JudgeConfig) -> int:
    return config.context_tokens or model_context(config.model) or DEFAULT_CONTEXT


def per_call_by_output(config: JudgeConfig) -> int:
    """Claims whose judgements fit ``max_tokens``."""
    return max(1, config.max_tokens // TOKENS_PER_JUDGEMENT)


def prompt_tokens(prompt: RenderedPrompt) -> int:
    """A rendered prompt's messages, estimated."""
    return sum(estimate_tokens(m["content"]) for m in prompt.messages)


@cache
def schema_tokens(model: type[BaseModel]) -> int:
    """A response model's JSON schema (sent with every call), estimated once per model."""
    return estimate_tokens(str(response_schema(model)))


def fits_whole(tokens: int, claims: int, config: JudgeConfig,
               per_claim: int = TOKENS_PER_JUDGEMENT) -> bool:
    """Whether a prompt of ``tokens`` (estimated, schema included) fits the context with
    ``max_tokens`` to spare, and ``claims`` outputs of ``per_claim`` tokens fit ``max_tokens``."""
    room = context_size(config) - config.max_tokens
    return tokens <= room and claims * per_claim <= config.max_tokens


def plan(fixed_tokens: int, claim_tokens: list[int], config: JudgeConfig) -> list[int]:
    """Sizes of the runs of consecutive claims, one per call (sum = number of claims).

    ``fixed_tokens`` is the estimate of the prompt without claims (instructions, sources,
    schema); ``claim_tokens`` each claim's share (text and frame). The fewest runs of
    near-equal size (the first ones one larger) such that each run's prompt fits the context
    minus ``max_tokens`` and its judgements fit ``max_tokens``."""
    n = len(claim_tokens)
    if n == 0:
        return []
    room = context_size(config) - config.max_tokens
    for calls in range(math.ceil(n / per_call_by_output(config)), n + 1):
        sizes = [n // calls + (1 if i < n % calls else 0) for i in range(calls)]
        start, fits = 0, True
        for size in sizes:
            if fixed_tokens + sum(claim_tokens[start:start + size]) > room:
                fits = False
                break
            start += size
        if fits:
            return sizes
    return [1] * n  # even one claim does not fit: the provider says so, the verdict fails closed
