"""A scripted litellm provider for tests and the overhead benchmark (never a product default).

``fake/<name>`` models answer through a responder function; the default responder is
a transparent rule: one claim per answer sentence, and a claim is ``supported`` with
itself as the quote when it occurs verbatim in a source, else ``not_in_source``.
:func:`contradicting_responder` reads words too and answers ``contradicted`` (the docs'
examples run against it).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import asyncio  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import litellm  # noqa: E402
from litellm import CustomLLM, ModelResponse  # noqa: E402
from litellm.types.utils import (  # noqa: E402
    ChatCompletionTokenLogprob,
    ChoiceLogprobs,
    Choices,
    Message,
    TopLogprob,
    Usage,
)

from judge.text import split_sentences, tokens  # noqa: E402


@dataclass
class Reply:
    content: str
    finish_reason: str = "stop"
    model: str | None = None
    #: top log-probabilities of the first token (choice calls); None: the provider
    #: reports none
    top_logprobs: dict[str, float] | None = None
    #: every output token with its log-probability and top alternatives (a structured call
    #: that asked for logprobs: :func:`label_token_logprobs`); None: the provider reports none
    token_logprobs: list[tuple[str, float, dict[str, float]]] | None = None
    #: prompt tokens the provider says it served from its cache (None: it says nothing)
    cached_tokens: int | None = None


#: The schema name a responder sees for a choice call (logprobs, one token, no schema).
CHOICE = "choice"


def choice_reply(letter: str, confidence: float = 0.9) -> Reply:
    """A one-letter answer whose top log-probabilities favour ``letter``; the rest of the
    probability is spread over the other option letters."""
    others = [x for x in "ABCD" if x != letter]
    rest = (1.0 - confidence) / len(others)
    top = {letter: math.log(confidence), **{x: math.log(rest) for x in others}}
    return Reply(letter, top_logprobs=top)


Responder = Callable[[str, list[dict[str, Any]]], "str | Reply | Exception"]


def schema_name(optional_params: dict[str, Any]) -> str:
    fmt = optional_params.get("response_format") or {}
    if isinstance(fmt, dict):
        return (fmt.get("json_schema") or {}).get("name", "") or ""
    return ""


def _frames(text: str) -> list[str]:
    return re.findall(r"<<DATA-[0-9a-f]{16}[^\n]*\n(.*?)\nDATA-[0-9a-f]{16}>>", text, re.S)


def split_sentences_of(user: str) -> list[tuple[str, str]]:
    """(number, text) of the answer sentences in a split prompt: one frame per sentence
    (``split_claims`` v2: header ``sentence=N``) or ``Sentence N: …`` lines (v1)."""
    framed = re.findall(r"<<(DATA-[0-9a-f]{16}) sentence=(\d+)\n(.*?)\n\1>>", user, re.S)
    if framed:
        return [(n, t) for _, n, t in framed]
    return re.findall(r"^Sentence (\d+): (.*)$", user, re.M)
def _headed_frames(text: str) -> list[tuple[str, str]]:
    """(header after the token, body) of every frame."""
    return re.findall(r"<<DATA-[0-9a-f]{16}([^\n]*)\n(.*?)\nDATA-[0-9a-f]{16}>>", text, re.S)


def framed_sources(user: str) -> list[tuple[str, str]]:
    """(id, text) of the source frames (``source "S1"``) of a verify_claims v2 or
    judge_answer prompt."""
    return [(json.loads(m.group(1)), body.strip()) for head, body in _headed_frames(user)
            if (m := re.match(r' source ("(?:[^"\\]|\\.)*")', head))]


#: number words a contradicted claim may change (``numeric_or_version_error``; "one" is a
#: stopword of :func:`judge.text.tokens`)
NUMBER_WORDS = frozenset({"once", "twice", "thrice", "two", "three", "four", "five",
                          "six", "seven", "eight", "nine", "ten"})


def clashing_sentence(text: str, sources: list[tuple[str, str]]) -> tuple[str, str] | None:
    """(source id, sentence) of the first source sentence that begins as the claim does (the
    same first two lexical tokens, :func:`judge.text.tokens`), for a claim that says something
    no source does (a word of it in none)."""
    head = tokens(text)[:2]
    if len(head) < 2 or set(tokens(text)) <= {t for _, body in sources for t in tokens(body)}:
        return None
    for sid, body in sources:
        for start, end in split_sentences(body):
            if tokens(body[start:end])[:2] == head:
                return sid, body[start:end]
    return None


def _closest_sentence(text: str, body: str) -> str:
    """The sentence of ``body`` that shares most lexical tokens with ``text``."""
    words = set(tokens(text))
    return max((body[s:e] for s, e in split_sentences(body)),
               key=lambda sentence: len(words & set(tokens(sentence))))


def verbatim_judgement(text: str, sources: list[tuple[str, str]],
                       by_words: bool = False) -> dict[str, Any]:
    """A compact judgement: ``supported`` with the claim's first words as the quote when the
    claim occurs verbatim in a source, else ``not_in_source``. ``by_words`` reads words too
    (:func:`judge.text.tokens`): a claim whose words all occur in one source is ``supported``
    (a paraphrase; the quote: the first words of the source sentence sharing most of them),
    and one that begins as a source sentence does and adds a word no source has
    (:func:`clashing_sentence`) is ``contradicted``, with that sentence's first words as the
    quote: ``numeric_or_version_error`` when the added words hold a number, else
    ``misattribution``."""
    hit = next((sid for sid, body in sources if text in body), None)
    if hit:
        return {"label": "supported",
                "evidence": [{"source": hit, "quote": " ".join(text.split()[:6])}],
                "rationale": "stated verbatim"}
    words = set(tokens(text))
    covering = [(sid, body) for sid, body in sources if by_words and words
                and words <= set(tokens(body))]
    if covering:
        sid, body = covering[0]
        return {"label": "supported",
                "evidence": [{"source": sid,
                              "quote": " ".join(_closest_sentence(text, body).split()[:6])}],
                "rationale": "stated in other words"}
    clash = clashing_sentence(text, sources) if by_words else None
    if clash:
        sid, sentence = clash
        added = words - {t for _, body in sources for t in tokens(body)}
        numeric = any(t[0].isdigit() or t in NUMBER_WORDS for t in added)
        return {"label": "contradicted",
                "subtype": "numeric_or_version_error" if numeric else "misattribution",
                "evidence": [{"source": sid, "quote": " ".join(sentence.split()[:6])}],
                "rationale": "the source says otherwise"}
    return {"label": "not_in_source", "subtype": "unsupported_addition", "evidence": [],
            "rationale": "not found"}


def compact_rule(user: str, by_words: bool = False) -> str:
    """verify_claims v2: a frame per source (``source "S1"``) and per claim (``claim 3``);
    evidence is a short quote (the first words of the claim when it occurs in a source)."""
    sources = framed_sources(user)
    judgements = [{"claim": number, **verbatim_judgement(text, sources, by_words)}
                  for number, text in claim_texts(user)]
    return json.dumps({"judgements": judgements}, ensure_ascii=False)


def answer_lines(user: str) -> list[tuple[int, str]]:
    """(number, text) of the sentences of a ``judge_answer`` prompt: the lines ``[N] …`` of
    the frame headed ``answer`` (v2: ``[N] cites [...]: …`` for a sentence that cites)."""
    return [(int(n), t) for head, body in _headed_frames(user) if head == " answer"
            for n, t in re.findall(r"^\[(\d+)\] (?:cites \[[^\]\n]*\]: )?(.*)$", body, re.M)]


def joint_rule(user: str, by_words: bool = False) -> str:
    """judge_answer v1: one claim per sentence (its text left out: the whole sentence), judged
    as :func:`compact_rule` judges a claim."""
    sources = framed_sources(user)
    claims = [{"sentence": number, **verbatim_judgement(text, sources, by_words)}
              for number, text in answer_lines(user)]
    return json.dumps({"claims": claims}, ensure_ascii=False)


def claim_texts(user: str) -> list[tuple[int, str]]:
    """(number, text) of the claims of a verify prompt (v1: numbered lines; v2: frames)."""
    framed = [(int(m.group(1)), body.strip()) for head, body in _headed_frames(user)
              if (m := re.match(r" claim (\d+)\b", head))]
    if framed:
        return framed
    return [(int(n), t.strip()) for n, t in
            re.findall(r"^Claim (\d+)(?: \(cites [^)]*\))?: (.*)$", user, re.M)]


def verify_reply(schema: str, judgements: list[dict[str, Any]]) -> str:
    """Judgements written as for verify_claims v1 (``source_id`` in evidence), in the shape the
    call's schema asks (v2's compact evidence names the source ``source``)."""
    if schema == "CompactVerifyOutput":
        judgements = [
            {**j, "evidence": [{"source": e["source_id"], "quote": e["quote"]}
                               for e in j.get("evidence", [])]}
            for j in judgements
        ]
    return json.dumps({"judgements": judgements}, ensure_ascii=False)


def rule_responder(schema: str, messages: list[dict[str, Any]],
                   by_words: bool = False) -> str:
    """The transparent rule of the module docstring (``by_words``: as
    :func:`contradicting_responder`)."""
    user = messages[-1]["content"]
    if "Split" in schema:
        sentences = split_sentences_of(user)
        claims = [
            {"sentence": int(n), "text": t.strip(),
             "kind": "abstention" if re.search(r"未提及|not covered", t) else "fact"}
            for n, t in sentences
        ]
        return json.dumps({"claims": claims}, ensure_ascii=False)
    frames = _frames(user)
    if schema == CHOICE:
        claim = frames[-1].strip() if frames else ""
        supported = any(claim and claim in body for body in frames[:-1])
        return choice_reply("A" if supported else "C")
    if schema == "ClaimLabel":
        claim = frames[-1].strip() if frames else ""
        supported = any(claim and claim in body for body in frames[:-1])
        return json.dumps({"label": "supported" if supported else "not_in_source"})
    if schema == "CompactVerifyOutput":
        return compact_rule(user, by_words)
    if schema == "JointOutput":
        return joint_rule(user, by_words)
    sources = re.findall(r'source_id="([^"]*)"[^\n]*\n(.*?)\nDATA-', user, re.S)
    claims = re.findall(r"^Claim (\d+)(?: \(cites [^)]*\))?: (.*)$", frames[-1] if frames else "", re.M)
    judgements = []
    for number, text in claims:
        hit = next(((sid, body) for sid, body in sources if text.strip() in body), None)
        if hit:
            judgements.append({"claim": int(number), "label": "supported", "subtype": None,
                               "evidence": [{"source_id": hit[0], "quote": text.strip()}],
                               "rationale": "stated verbatim"})
        else:
            judgements.append({"claim": int(number), "label": "not_in_source",
                               "subtype": "unsupported_addition", "evidence": [],
                               "rationale": "not found"})
    return json.dumps({"judgements": judgements}, ensure_ascii=False)


def contradicting_responder(schema: str, messages: list[dict[str, Any]]) -> str:
    """:func:`rule_responder` reading words too (:func:`verbatim_judgement` with
    ``by_words``), so it answers every label a document needs: a claim in a source's words is
    ``supported``; one that begins as a source sentence does and adds a word no source has
    ("The client retries ... five times" against "The client retries ... twice") is
    ``contradicted``; any other ``not_in_source``. Verification calls of ``verify_claims`` v2+
    and ``judge_answer`` only; the other calls answer as :func:`rule_responder`."""
    return rule_responder(schema, messages, by_words=True)


#: The vector a responder gives an embedding call (``(EMBED, [{"content": text}])``).
EMBED = "embedding"


def claim_in_evidence_vector(text: str) -> list[float]:
    """A transparent stand-in for a hidden state (strategy ``probe``): the probe prompt's
    claim found verbatim in its evidence -> ``[1, 0, 0]``, else ``[0, 1, 0]``; a claim
    starting "I " (small talk) -> ``[0, 0, 1]``."""
    claim = text.split("Claim: ", 1)[-1].split("\n", 1)[0]
    evidence = text.split("Claim: ", 1)[0]
    if claim.startswith("I "):
        return [0.0, 0.0, 1.0]
    return [1.0, 0.0, 0.0] if claim and claim in evidence else [0.0, 1.0, 0.0]


@dataclass
class FakeLLM(CustomLLM):
    responder: Responder = rule_responder
    calls: list[dict[str, Any]] = field(default_factory=list)
    latency_s: float = 0.0
    #: seconds an async completion waits before it answers, without blocking the event loop
    #: (so the calls of answers in flight overlap, as with a remote provider)
    async_latency_s: float = 0.0
    #: what an embedding call returns for a text: a vector, or an exception to raise
    embedder: Callable[[str], Any] = claim_in_evidence_vector

    def __post_init__(self) -> None:
        super().__init__()

    def _reply(self, model: str, messages: list, optional_params: dict) -> ModelResponse:
        schema = schema_name(optional_params)
        if optional_params.get("logprobs") and not optional_params.get("response_format"):
            schema = CHOICE
        self.calls.append({"model": model, "messages": messages, "schema": schema,
                           "params": dict(optional_params)})
        if self.latency_s:
            time.sleep(self.latency_s)
        out = self.responder(schema, messages)
        if isinstance(out, Exception):
            raise out
        reply = out if isinstance(out, Reply) else Reply(out)
        logprobs = None
        if reply.token_logprobs is not None:
            logprobs = ChoiceLogprobs(content=[
                ChatCompletionTokenLogprob(
                    token=token, logprob=value, bytes=None,
                    top_logprobs=[TopLogprob(token=t, logprob=v, bytes=None)
                                  for t, v in sorted(top.items(), key=lambda kv: -kv[1])])
                for token, value, top in reply.token_logprobs])
        elif reply.top_logprobs is not None:
            top = [TopLogprob(token=t, logprob=v, bytes=None)
                   for t, v in sorted(reply.top_logprobs.items(), key=lambda kv: -kv[1])]
            first = ChatCompletionTokenLogprob(
                token=reply.content, logprob=reply.top_logprobs.get(reply.content, -50.0),
                bytes=None, top_logprobs=top)
            logprobs = ChoiceLogprobs(content=[first])
        return ModelResponse(
            model=reply.model or model,
            choices=[Choices(index=0, finish_reason=reply.finish_reason,
                             message=Message(role="assistant", content=reply.content),
                             logprobs=logprobs)],
            usage=Usage(prompt_tokens=sum(len(m["content"]) for m in messages) // 4,
                        completion_tokens=len(reply.content) // 4,
                        total_tokens=0,
                        **({} if reply.cached_tokens is None else
                           {"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}})),
        )

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._reply(model, messages, kwargs.get("optional_params") or {})

    def embedding(self, model: str, input: list, *args: Any, **kwargs: Any) -> Any:
        return _embed(self, model, list(input), kwargs.get("optional_params") or {})

    async def aembedding(self, model: str, input: list, *args: Any, **kwargs: Any) -> Any:
        return _embed(self, model, list(input), kwargs.get("optional_params") or {})

    async def acompletion(
        self, model: str, messages: list, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        if self.async_latency_s:
            await asyncio.sleep(self.async_latency_s)
        return self._reply(model, messages, kwargs.get("optional_params") or {})


def _embed(fake: FakeLLM, model: str, inputs: list[Any], params: dict[str, Any]) -> Any:
    from litellm.types.utils import EmbeddingResponse

    data = []
    for index, text in enumerate(inputs):
        fake.calls.append({"model": model, "messages": [{"role": "user", "content": text}],
                           "schema": EMBED, "params": dict(params)})
        out = fake.embedder(str(text))
        if isinstance(out, Exception):
            raise out
        data.append({"object": "embedding", "index": index, "embedding": out})
    tokens = sum(len(str(t)) for t in inputs) // 4
    return EmbeddingResponse(model=model, data=data,
                             usage=Usage(prompt_tokens=tokens, completion_tokens=0,
                                         total_tokens=tokens))


#: the schemas whose answers write labels (the verification calls)
LABELLED = ("VerifyOutput", "CompactVerifyOutput", "JointOutput")
_JSON_TOKEN = re.compile(r'\s+|[{}\[\]:,"]|[^\s{}\[\]:,"]+')


def label_token_logprobs(content: str, support: Callable[[int, str], float]
                         ) -> list[tuple[str, float, dict[str, float]]]:
    """A JSON answer as tokens (each quote, bracket and word its own token) with
    log-probabilities, as a provider asked for ``logprobs`` returns them: the token that
    writes the ``i``-th label value (found by walking the tokens: ``"label"``, ``:``, ``"``,
    then the value) lists the four labels as alternatives, ``supported`` with probability
    ``support(i, label)`` and the written label (or ``contradicted``) with the rest; every
    other token is near certain."""
    tokens = _JSON_TOKEN.findall(content)
    assert "".join(tokens) == content
    solid = [i for i, t in enumerate(tokens) if not t.isspace()]
    values = set()
    for k in range(len(solid) - 5):
        a, b, c, d, e, value = (tokens[solid[k + j]] for j in range(6))
        if (a, b, c, d, e) == ('"', "label", '"', ":", '"'):
            values.add(solid[k + 5])
    out = []
    for i, token in enumerate(tokens):
        if i not in values:
            out.append((token, -0.001, {token: -0.001}))
            continue
        p = support(len([v for v in values if v < i]), token)
        other = token if token != "supported" else "contradicted"
        top = {"supported": math.log(max(p, 1e-9)), other: math.log(max(1 - p, 1e-9) * 0.9),
               "not_verifiable" if other != "not_verifiable" else "not_in_source":
               math.log(max(1 - p, 1e-9) * 0.1)}
        out.append((token, top[token], top))
    return out


def with_label_logprobs(responder: Responder, support: Callable[[str, str, int], float]
                        ) -> Responder:
    """``responder`` as a provider that returns log-probabilities on its verification answers:
    ``support(user prompt, label, i)`` is the probability of ``supported`` at the ``i``-th
    label it writes (:func:`label_token_logprobs`)."""
    def respond(schema: str, messages: list[dict[str, Any]]) -> str | Reply | Exception:
        out = responder(schema, messages)
        if isinstance(out, str) and schema in LABELLED:
            user = messages[-1]["content"]
            return Reply(out, token_logprobs=label_token_logprobs(
                out, lambda i, label: support(user, label, i)))
        return out

    return respond


def install(fake: FakeLLM, provider: str = "fake") -> FakeLLM:
    """Register ``fake`` as the handler of ``<provider>/...`` models (replacing any earlier)."""
    litellm.custom_provider_map = [
        p for p in litellm.custom_provider_map if p["provider"] != provider
    ] + [{"provider": provider, "custom_handler": fake}]
    litellm.utils.custom_llm_setup()
    return fake
