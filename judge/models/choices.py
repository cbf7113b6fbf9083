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


def _get(obj: Any, name: str) -> Any:
    """A field of a provider response part: litellm objects, or plain dicts."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def option_logprobs(response: Any, options: dict[str, str]) -> dict[str, float]:
    """Log-probabilities of the option letters in the first generated token's top
    alternatives (leading spaces ignored; the best spelling of a letter counts). A letter
    missing from the top list gets the smallest listed log-probability (an upper bound).
    Impossible values (above 0, infinite, not a number) fail closed."""
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
    seen: dict[str, float] = {}
    for token, value in values:
        key = token.strip().upper()
        if key in options:
            seen[key] = max(seen.get(key, -math.inf), value)
    if not seen:
        raise ValueError(f"the model answered none of the options {sorted(options)}")
    if any(math.isinf(v) for v in seen.values()) or all(v == -math.inf for _, v in values):
        raise ValueError("an option letter has log-probability -inf")
    floor = min(value for _, value in values)
    mass = sum(math.exp(v) for v in seen.values())
    if mass < CHOICE_MIN_MASS:
        raise ValueError(
            f"the model put only {mass:.2f} of its probability on the option letters"
        )
    if mass > 1.05:  # rounding aside, probabilities cannot sum above 1
        raise ValueError(f"impossible log-probabilities: the options' probabilities sum to "
                         f"{mass:.2f}")
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
