"""The option letters of the multiple-choice question and the arithmetic over their
log-probabilities: normalising, softmax, the biased argmax (an exact tie never goes to
``supported``), and the short description a rationale shows."""

from __future__ import annotations

import math
from collections.abc import Mapping

from judge.verdicts import Label

#: Option letters of the ``choose_label`` prompt, in the order the prompt lists them.
OPTIONS: dict[str, str] = {
    "A": Label.SUPPORTED.value,
    "B": Label.CONTRADICTED.value,
    "C": Label.NOT_IN_SOURCE.value,
    "D": Label.NOT_VERIFIABLE.value,
}

#: Exact ties resolve to the earliest of these.
TIE_ORDER: tuple[str, ...] = (
    Label.CONTRADICTED.value,
    Label.NOT_IN_SOURCE.value,
    Label.NOT_VERIFIABLE.value,
    Label.SUPPORTED.value,
)

SHORT = {
    Label.SUPPORTED.value: "S",
    Label.CONTRADICTED.value: "C",
    Label.NOT_IN_SOURCE.value: "NIS",
    Label.NOT_VERIFIABLE.value: "NV",
}


def softmax(logits: Mapping[str, float]) -> dict[str, float]:
    top = max(logits.values())
    weights = {k: math.exp(v - top) for k, v in logits.items()}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


def log_normalise(logprobs: Mapping[str, float]) -> dict[str, float]:
    """The options' log-probabilities renormalised over the options (log-softmax)."""
    labels = OPTIONS.values()
    top = max(logprobs[label] for label in labels)
    norm = top + math.log(sum(math.exp(logprobs[label] - top) for label in labels))
    return {label: logprobs[label] - norm for label in labels}


def decide(
    logprobs: Mapping[str, float], bias: Mapping[str, float]
) -> tuple[str, dict[str, float]]:
    """(label, adjusted probabilities): argmax of log-probability + bias. An exact tie
    never resolves to ``supported`` (fail closed): it goes to the first other label in
    ``TIE_ORDER``."""
    adjusted = {label: logprobs[label] + bias.get(label, 0.0) for label in OPTIONS.values()}
    probs = softmax(adjusted)
    label = max(TIE_ORDER, key=lambda name: (probs[name], -TIE_ORDER.index(name)))
    return label, probs


def describe(probs: Mapping[str, float]) -> str:
    """``S 0.41, C 0.22, NIS 0.20, NV 0.17``"""
    return ", ".join(f"{SHORT[k]} {probs[k]:.2f}" for k in OPTIONS.values() if k in probs)
