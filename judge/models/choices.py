"""Choice questions: the option letters' log-probabilities read from a provider's answer
(impossible values fail closed), and from a stored call."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json  # noqa: E402
import math  # noqa: E402
from typing import Any  # noqa: E402

#: How many alternatives a choice call asks for (OpenAI's maximum).
CHOICE_TOP_LOGPROBS = 20
#: A choice answer must put at least this much probability on the option letters.
CHOICE_MIN_MASS = 0.5
#: Rounding a provider may do: listed probabilities summing above 1 + this fail closed.
CHOICE_MASS_EPS = 0.05


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(v - top) for v in values))


def _get(obj: Any, name: str) -> Any:
    """A field of a provider response part: litellm objects, or plain dicts."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def option_logprobs(response: Any, options: dict[str, str]) -> dict[str, float]:
    """Log-probabilities of the option letters in the first generated token's top
    alternatives. A letter's spellings (``"A"``, ``" A"``, ``"a"``: distinct tokens) are merged
    by adding their probabilities (log-sum-exp); a token listed twice counts once. A letter
    missing from the top list gets the smallest listed log-probability (an upper bound).
    What is not a distribution fails closed: a value above 0, infinite or not a number, the
    listed tokens' probabilities summing above 1 + ``CHOICE_MASS_EPS``, no option token."""
    choices = _get(response, "choices") or []
    logprobs = _get(choices[0], "logprobs") if choices else None
    content = _get(logprobs, "content") if logprobs is not None else None
    if not content:
        raise ValueError(
            "the provider returned no log-probabilities; the 'scores' strategy needs a model "
            "that reports top_logprobs (use strategy 'batch' or 'per_claim' otherwise)"
        )
    top = [(str(_get(alt, "token") or ""), _get(alt, "logprob"))
           for alt in _get(content[0], "top_logprobs") or []]
    values = []
    for token, value in top:
        if value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"log-probability {value!r} of {token!r} is not a number") from None
        if math.isnan(number) or number > 1e-6 or number == math.inf:
            raise ValueError(f"impossible log-probability {value!r} for {token!r}")
        values.append((token, number))
    # one entry per distinct token (a provider listing the same token twice is not twice
    # the probability); a letter's spellings ("A", " A", "a") are distinct tokens, so their
    # probabilities add up (log-sum-exp)
    distinct: dict[str, float] = {}
    for token, value in values:
        distinct.setdefault(token, value)
    total = _logsumexp(list(distinct.values()))
    if total > math.log(1 + CHOICE_MASS_EPS):  # rounding aside, probabilities cannot exceed 1
        raise ValueError(f"impossible log-probabilities: the listed tokens' probabilities sum "
                         f"to {math.exp(total):.2f}")
    variants: dict[str, list[float]] = {}
    for token, value in distinct.items():
        key = token.strip().upper()
        if key in options:
            variants.setdefault(key, []).append(value)
    if not variants:
        raise ValueError(f"the model answered none of the options {sorted(options)}")
    seen = {key: _logsumexp(spellings) for key, spellings in variants.items()}
    if any(math.isinf(v) for v in seen.values()) or all(v == -math.inf for _, v in values):
        raise ValueError("an option letter has log-probability -inf")
    floor = min(distinct.values())
    mass = sum(math.exp(v) for v in seen.values())
    if mass < CHOICE_MIN_MASS:
        raise ValueError(
            f"the model put only {mass:.2f} of its probability on the option letters"
        )
    return {value: round(seen.get(letter, floor), 6) for letter, value in options.items()}


def stored_scores(
    stored: dict[str, Any] | None, options: dict[str, str]
) -> dict[str, float] | None:
    if not stored or stored["error"] is not None or not stored.get("parsed"):
        return None
    parsed = stored["parsed"]
    try:
        scores = (json.loads(parsed) if isinstance(parsed, str) else parsed).get("logprobs")
    except (ValueError, AttributeError):
        return None
    if not isinstance(scores, dict) or set(scores) != set(options.values()):
        return None
    try:
        values = {k: float(v) for k, v in scores.items()}
    except (TypeError, ValueError):
        return None
    if not all(math.isfinite(v) and v <= 1e-6 for v in values.values()):
        return None  # an impossible stored score is never served: the call is made again
    return values
