"""A claim's support read from the tokens that spell its label in a JSON answer
(judge.models.label_tokens): every way a provider may cut the label into tokens, and every
answer from which nothing can be read."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from judge.config import JudgeConfig
from judge.models.label_tokens import (
    asks_label_logprobs,
    label_offsets,
    label_supports,
    read_label_tokens,
    supported_probability,
)


def response(tokens: list[tuple[str, float, dict[str, float]]],
             content: str | None = None) -> dict[str, Any]:
    """A provider's answer (plain dicts, as litellm's objects read) whose content is the
    tokens joined, each with its log-probability and top alternatives."""
    text = "".join(t for t, _, _ in tokens) if content is None else content
    return {"choices": [{"message": {"content": text}, "logprobs": {"content": [
        {"token": t, "logprob": lp, "bytes": list(t.encode()),
         "top_logprobs": [{"token": a, "logprob": v, "bytes": list(a.encode())}
                          for a, v in top.items()]}
        for t, lp, top in tokens]}}]}


def sure(*pieces: str) -> list[tuple[str, float, dict[str, float]]]:
    return [(p, 0.0, {p: 0.0}) for p in pieces]


def support_of(tokens: list[tuple[str, float, dict[str, float]]]) -> list[float | None]:
    read = read_label_tokens(response(tokens))
    assert read is not None
    return [supported_probability(e) for e in read]


def test_the_labels_of_a_json_answer_are_found_in_order_and_only_as_values_of_label() -> None:
    text = json.dumps({"judgements": [
        {"claim": 1, "label": "supported", "rationale": 'the "label": "contradicted" is data'},
        {"claim": 2, "rationale": "標籤在後", "label": "not_in_source"},
        {"claim": 3, "label": None}]}, ensure_ascii=False)
    offsets = label_offsets(text)
    raw = text.encode()
    assert [raw[o:o + 13].decode() for o in offsets] == ["supported\", \"", "not_in_source"]


def test_support_is_the_probability_of_spelling_supported_over_that_of_any_label() -> None:
    p, q, r = 0.6, 0.3, 0.1
    tokens = [*sure('{"', "label", '":', ' "'),
              ("support", math.log(p), {"support": math.log(p), "contr": math.log(q),
                                        "not": math.log(r)}),
              *sure("ed", '"}')]
    assert support_of(tokens) == [pytest.approx(p)]
    # the second label's value starts inside a token that opens with the quote
    tokens += [*sure(',{"', "label", '":'),
               (' "contr', math.log(0.5), {' "contr': math.log(0.5), ' "sup': math.log(0.3),
                                           ' "Supported': math.log(0.15)}),
               *sure("adicted", '"}')]
    # a casing no label has counts for none (0.15): 0.3 of the 0.8 spelling a label
    assert support_of(tokens) == [pytest.approx(p), pytest.approx(0.3 / 0.8)]


def test_a_token_that_runs_past_the_value_still_spells_its_label() -> None:
    tokens = [*sure('{"label": '),
              ('"supported"', math.log(0.9), {'"supported"': math.log(0.9),
                                              '"not_in_source"}': math.log(0.05)}),
              *sure("}")]
    assert support_of(tokens) == [pytest.approx(0.9 / 0.95)]


def test_a_label_after_chinese_text_is_found_by_its_bytes() -> None:
    # a provider cuts a Chinese character into byte tokens: offsets are counted in bytes
    head = '{"rationale": "來源未提及", "label": "'
    raw = head.encode()
    pieces = [bytes([b]) for b in raw]
    entries = [{"token": b.decode("utf-8", "replace"), "logprob": 0.0, "bytes": list(b),
                "top_logprobs": []} for b in pieces]
    entries.append({"token": "not", "logprob": math.log(0.8), "bytes": list(b"not"),
                    "top_logprobs": [{"token": "not", "logprob": math.log(0.8)},
                                     {"token": "sup", "logprob": math.log(0.2)}]})
    entries.append({"token": '_in_source"}', "logprob": 0.0,
                    "bytes": list(b'_in_source"}'), "top_logprobs": []})
    text = head + 'not_in_source"}'
    read = read_label_tokens({"choices": [{"message": {"content": text},
                                           "logprobs": {"content": entries}}]})
    assert read is not None and supported_probability(read[0]) == pytest.approx(0.2)


@pytest.mark.parametrize("case", ["no logprobs", "no label", "tokens do not spell the text"])
def test_nothing_is_read_from_an_answer_that_cannot_be_read(case: str) -> None:
    tokens = [*sure('{"label": "'), ("supported", -0.1, {"supported": -0.1}), *sure('"}')]
    if case == "no logprobs":
        answer: dict[str, Any] = {"choices": [{"message": {"content": '{"label": "x"}'},
                                               "logprobs": None}]}
    elif case == "no label":
        answer = response(sure('{"claims": []}'))
    else:
        answer = response(tokens, content='{"label": "contradicted"}')
    assert read_label_tokens(answer) is None


@pytest.mark.parametrize("top", [
    [["supported", 0.5]],                                  # a log-probability above 0
    [["supported", "x"]],                                  # not a number
    [["supported", math.log(0.8)], ["contr", math.log(0.7)]],   # summing above 1
    [["supported", math.log(0.2)], ["Sup", math.log(0.5)]],     # under half on the labels
])
def test_an_impossible_or_unlabelled_distribution_gives_no_support(top: list[Any]) -> None:
    assert supported_probability({"prefix": "", "top": top}) is None


def test_supports_are_read_only_when_they_match_the_judgements() -> None:
    entry = {"prefix": "", "top": [["supported", math.log(0.7)], ["not", math.log(0.3)]]}
    assert label_supports(json.dumps([entry, entry]), 2) == [pytest.approx(0.7)] * 2
    assert label_supports(json.dumps([entry]), 2) == [None, None]
    assert label_supports(None, 1) == [None]


@pytest.mark.parametrize(("model", "setting", "asks"), [
    ("openai/gpt-4.1-mini", "auto", True),   # litellm lists logprobs and top_logprobs
    ("openai/o3-mini", "auto", False),       # a reasoning model: litellm lists neither
    ("anthropic/claude-haiku-4-5", "auto", False),
    ("nosuch/judge-model", "auto", False),   # a provider litellm does not know
    ("fake/judge-model", True, True),
    ("openai/gpt-4.1-mini", False, False),
])
def test_which_calls_ask_for_logprobs(model: str, setting: Any, asks: bool) -> None:
    config = JudgeConfig(model=model, strategy="batch", label_logprobs=setting)
    assert asks_label_logprobs(config) is asks


def test_label_logprobs_belongs_to_the_batch_strategy() -> None:
    with pytest.raises(ValueError, match="label_logprobs reads the labels"):
        JudgeConfig(model="fake/x", strategy="per_claim", label_logprobs=True)
