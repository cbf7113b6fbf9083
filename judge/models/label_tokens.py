"""A claim's support read from the tokens that spell its label (strategy ``batch``, with
``label_logprobs``): no extra call, never a model-reported confidence.

The verification call (``verify_claims``, ``judge_answer``) asks the provider for the output
tokens' log-probabilities and their top alternatives (``logprobs``, ``top_logprobs``). The
answer is JSON; every ``"label"`` value in it is a claim's label, in the order of the
judgements. For each one the program finds the token where the value's first character is
written and keeps that position's alternatives (:func:`read_label_tokens`, stored with the
call). The labels differ at their first character where it matters: only ``supported`` starts
with ``s``. So the probability the model gives, at that position, to tokens that begin spelling
``supported`` (after the part of the token before the value, e.g. the opening quote), over the
probability it gives to tokens that begin spelling any label, is the claim's support
(:func:`supported_probability`): what the model would have written there, not what it says of
itself. An alternative that spells no label (another casing, a stray character) counts for
none; one the provider did not list counts for none either, so a support read from a short
list errs low (the claim goes to people sooner). Less than :data:`LABEL_MIN_MASS` of the
position's probability on the labels, an answer whose tokens do not spell its text, or a
provider that returns no log-probabilities: no support (the verdict keeps its label and the
queue flags it by label).

Whether a call asks (:func:`asks_label_logprobs`): ``label_logprobs = true`` always,
``"auto"`` when litellm lists ``logprobs`` and ``top_logprobs`` among the model's parameters
(OpenAI's GPT models, vLLM, llama.cpp and other OpenAI-compatible servers, ...; not OpenAI's
reasoning models nor Anthropic's), ``false`` never.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from typing import Any, get_args

from judge.models.lazy_litellm import quiet_litellm
from judge.models.schemas import LabelLiteral

#: alternatives asked for each output token (enough for the four labels' first tokens and
#: their spellings; a provider's answer grows with it)
LABEL_TOP_LOGPROBS = 5
#: at least this much of a label position's probability must be on tokens spelling a label
LABEL_MIN_MASS = 0.5
#: rounding a provider may do: listed probabilities summing above 1 + this are refused
MASS_EPS = 0.05
LABEL_VALUES: tuple[str, ...] = get_args(LabelLiteral)
SUPPORTED = "supported"
#: the key whose string values are labels, in every verification schema
LABEL_KEY = "label"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def _get(obj: Any, name: str) -> Any:
    """A field of a provider response part: litellm objects, or plain dicts."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _token_bytes(entry: Any) -> bytes:
    raw = _get(entry, "bytes")
    if isinstance(raw, list) and raw and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return bytes(raw)
    return str(_get(entry, "token") or "").encode("utf-8")


def label_offsets(text: str) -> list[int]:
    """The UTF-8 byte offset of the first character of every ``"label"`` string value of a JSON
    text, in order. JSON strings never nest and no quote stands outside one, so reading the
    strings left to right finds every key and value exactly; a string followed by ``:`` is a
    key, a string right after the key ``label`` and its colon is a label."""
    offsets: list[int] = []
    key_end: int | None = None  # where the colon after a "label" key ends
    for m in _STRING.finditer(text):
        after = m.end()
        while after < len(text) and text[after] in " \t\r\n":
            after += 1
        if after < len(text) and text[after] == ":":
            try:
                key = json.loads(m.group())
            except ValueError:
                key = None
            key_end = after + 1 if key == LABEL_KEY else None
            continue
        if key_end is not None and not text[key_end:m.start()].strip():
            offsets.append(len(text[:m.start() + 1].encode("utf-8")))
        key_end = None
    return offsets


def read_label_tokens(response: Any) -> list[dict[str, Any]] | None:
    """What a response's log-probabilities say at each label value: ``[{"prefix": the part
    of the token before the value, "top": [[token, logprob], ...]}]`` (the position's listed
    alternatives and the token written), in the order of the labels. None when the response
    carries no log-probabilities, holds no label, or its tokens do not spell its text."""
    choices = _get(response, "choices") or []
    if not choices:
        return None
    message = _get(choices[0], "message")
    text = _get(message, "content") if message is not None else None
    logprobs = _get(choices[0], "logprobs")
    content = _get(logprobs, "content") if logprobs is not None else None
    if not isinstance(text, str) or not content:
        return None
    offsets = label_offsets(text)
    if not offsets:
        return None
    spans: list[tuple[int, int]] = []
    pieces: list[bytes] = []
    at = 0
    for entry in content:
        piece = _token_bytes(entry)
        spans.append((at, at + len(piece)))
        pieces.append(piece)
        at += len(piece)
    written = b"".join(pieces)
    if written != text.encode("utf-8"):
        return None  # the tokens do not spell the text: nothing can be read
    out: list[dict[str, Any]] = []
    index = 0
    for offset in offsets:
        while index < len(spans) and spans[index][1] <= offset:
            index += 1
        if index == len(spans):
            return None
        start = spans[index][0]
        entry = content[index]
        prefix = written[start:offset].decode("utf-8", "replace")
        top = [[_token_bytes(alt).decode("utf-8", "replace"), _get(alt, "logprob")]
               for alt in (_get(entry, "top_logprobs") or [])]
        chosen = [pieces[index].decode("utf-8", "replace"), _get(entry, "logprob")]
        if chosen[1] is not None and chosen[0] not in {t for t, _ in top}:
            top.append(chosen)
        out.append({"prefix": prefix, "top": top})
    return out


def _spells(rest: str, label: str) -> bool:
    """Whether a token's text after the prefix begins to spell ``label`` as a JSON string
    value: a non-empty start of it, or all of it followed by the closing quote."""
    return bool(rest) and (label.startswith(rest) or rest.startswith(label + '"'))


def supported_probability(entry: dict[str, Any]) -> float | None:
    """P(supported) at one label position (module docstring); None when it cannot be read:
    an impossible log-probability, the listed probabilities summing above 1, or less than
    :data:`LABEL_MIN_MASS` of them on the labels."""
    prefix = str(entry.get("prefix") or "")
    seen: dict[str, float] = {}
    for item in entry.get("top") or []:
        if not isinstance(item, list | tuple) or len(item) != 2:
            return None
        token, value = item
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        if math.isnan(number) or number > 1e-6:
            return None
        seen.setdefault(str(token), number)  # a token listed twice counts once
    if not seen or sum(math.exp(v) for v in seen.values()) > 1 + MASS_EPS:
        return None
    support = labels = 0.0
    for token, value in seen.items():
        if not token.startswith(prefix):
            continue
        rest = token[len(prefix):]
        if any(_spells(rest, label) for label in LABEL_VALUES):
            labels += math.exp(value)
            if _spells(rest, SUPPORTED):
                support += math.exp(value)
    if labels < LABEL_MIN_MASS:
        return None
    return min(1.0, support / labels)


def label_supports(stored: Any, count: int) -> list[float | None]:
    """Each of ``count`` judgements' support from a stored call's ``label_tokens`` (a JSON
    text or a list); all None when the call has none or they do not match the judgements."""
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            stored = None
    if not isinstance(stored, list) or len(stored) != count:
        return [None] * count
    return [supported_probability(e) if isinstance(e, dict) else None for e in stored]


def asks_label_logprobs(config: Any) -> bool:
    """Whether the verification calls of a ``batch`` judge ask for log-probabilities
    (module docstring); ``config`` is a :class:`judge.config.JudgeConfig`."""
    setting = getattr(config, "label_logprobs", False)
    if setting is True:
        return True
    return setting == "auto" and model_lists_logprobs(config.model)


@cache
def model_lists_logprobs(model: str) -> bool:
    """Whether litellm lists ``logprobs`` and ``top_logprobs`` among a model's parameters."""
    try:
        litellm = quiet_litellm()
        params = litellm.get_supported_openai_params(model=model) or []
    except Exception:  # a provider litellm does not know
        return False
    return "logprobs" in params and "top_logprobs" in params
