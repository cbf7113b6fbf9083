"""Strategy ``probe``: the labels' probabilities from the model's hidden state.

A small model's option letters say little (strategy ``scores``), yet its hidden state after
reading the evidence and the claim separates the labels far better. So, per claim, the
program locates the source excerpts that best cover it (as ``scores`` does, within the
config's ``probe_excerpt_chars``), the model reads one short prompt (``probe_claim``) in one
forward pass and generates nothing, and the program takes the last token's hidden state
(stored with the call as float16) and applies the config's head
(:mod:`judge.decide.probe_head`, fitted on human gold by ``judge fit`` or
research/fit_probe.py); a head with a language offset first subtracts the offset of the
language the probe reads (:func:`probe_text`, the claim and its excerpts;
:func:`judge.language.read_language`). The label is the head's most probable one; ``support``
is its P(supported), which drives the review queue (``review_support_below``); the evidence
is the located excerpts, checked like any other. No model-reported confidence: the
probabilities are the head's, computed by the program.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from judge.config.probe import PROBE_EXCERPT_CHARS
from judge.decide import Decision, PerClaim
from judge.decide.excerpts import excerpt_data, locate_excerpts
from judge.decide.options import TIE_ORDER, describe
from judge.decide.probe_head import ProbeHead, ProbeHeadError, load_head
from judge.language import read_text
from judge.models.client import CallFailed
from judge.models.prompts import RenderedPrompt, render
from judge.models.schemas import ClaimJudgement
from judge.verdicts import Claim, Evidence, Label

if TYPE_CHECKING:
    from judge.config import JudgeConfig
    from judge.records import AnswerRecord

#: How much of the question a probe prompt shows (templates that use ``context``): its last
#: turn, the end kept, since that is what the answer replies to.
PROBE_CONTEXT_CHARS = 240


def said_before(question: str | None, limit: int = PROBE_CONTEXT_CHARS) -> str:
    """The last non-blank line of the question (a conversation's last turn), whitespace
    collapsed, at most ``limit`` characters: the end kept, cut at a word when one is near."""
    lines = [" ".join(line.split()) for line in (question or "").splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    if len(last) <= limit:
        return last
    cut = last[-(limit - 1):]
    space = cut.find(" ")
    return "…" + (cut[space + 1:] if 0 <= space < limit // 6 else cut)


def probe_prompt(config: JudgeConfig, root: Any, record: AnswerRecord, claim: Claim
                 ) -> tuple[list[Evidence], RenderedPrompt]:
    """The evidence the program located for a claim and the prompt the model reads."""
    located = locate_excerpts(claim.text, record, budget=config.probe_excerpt_chars)
    prompt = render("probe_claim", config.prompts["probe_claim"], root, claim=claim.text,
                    excerpts=excerpt_data(located), context=said_before(record.question))
    return located, prompt


def probe_text(claim: str, located: list[Evidence]) -> str:
    """What the probe reads of a claim, for telling its language: the claim and the excerpts
    the program located for it (the prompt's fixed English wording and the question's last
    turn are left out: they are there for every claim, or missing for most)."""
    return read_text(claim, (e.quote or "" for e in located))


def head_of(config: JudgeConfig) -> ProbeHead:
    """The head a (domain's) config pins; ``ProbeHeadError`` when it is missing or altered."""
    if config.probe_head is None:
        raise ProbeHeadError("strategy 'probe' needs a probe_head")
    return load_head(config.probe_head.file, config.probe_head.sha256)


def read_with(config: JudgeConfig) -> dict[str, Any]:
    """How a config's vectors are read, as a head fitted on them records it (``about``): the
    prompt version; with ``probe_layers``, the layer; with ``probe_endpoint``, the served
    model, its pooling and normalisation (``served``); with a ``probe_excerpt_chars`` other
    than the default, the evidence budget (``excerpt_chars``)."""
    out: dict[str, Any] = {"prompt": f"probe_claim/{config.prompts['probe_claim']}"}
    if config.probe_excerpt_chars != PROBE_EXCERPT_CHARS:
        out["excerpt_chars"] = config.probe_excerpt_chars
    if config.probe_layers is not None:
        out["layers"] = config.probe_layers
    if config.probe_endpoint is not None:
        out["served"] = config.probe_endpoint.identity()
    if config.probe_reader != "last":
        out["reader"] = config.probe_reader
    return out


def check_runtime(config: JudgeConfig, head: ProbeHead) -> None:
    """Refuse a head fitted on the packaged model's hidden states when ``CLAIM_JUDGE_GGUF``
    serves another model under the embedded provider, and a head fitted on vectors read
    otherwise than this config reads them (from another served model, or served against in
    process, or pooled or normalised otherwise: ``probe_endpoint``; another layer than
    ``probe_layers``; another ``probe_claim`` version when the head records one): their
    vectors mean something else, even when they have as many numbers. A head with heads per
    language is checked head by head."""
    from judge.models.embedded import ENV_GGUF, MODEL_SHA256

    for own in head.languages.heads.values() if head.languages is not None else ():
        check_runtime(config, own)

    name, reads = head.about.get("name", ""), read_with(config)
    fitted_served = head.about.get("served")
    if head.dim and fitted_served != reads.get("served"):
        raise ProbeHeadError(
            f"the probe head {name!r} was fitted on {_source(fitted_served)}, but this config "
            f"reads {_source(reads.get('served'))}: a head reads one kind of vector only; pin "
            "a head fitted on this config's vectors (judge the reviewed claims with "
            "probe_head = builtin:uniform, then `judge fit`; docs/probe.md#a-served-model)")
    fitted_layers = head.about.get("layers")
    if head.dim and fitted_layers != reads.get("layers"):
        raise ProbeHeadError(
            f"the probe head {name!r} was fitted on {_layer(fitted_layers)}, but this config "
            f"reads {_layer(reads.get('layers'))} (probe_layers): pin a head fitted on vectors "
            f"of that layer (judge fit, see docs/probe.md) or set probe_layers to match")
    fitted_budget = head.about.get("excerpt_chars")
    if head.dim and fitted_budget != reads.get("excerpt_chars"):
        raise ProbeHeadError(
            f"the probe head {name!r} was fitted on vectors read with {_budget(fitted_budget)} "
            f"of evidence, but this config reads {_budget(reads.get('excerpt_chars'))} "
            f"(probe_excerpt_chars): set probe_excerpt_chars to "
            f"{fitted_budget or PROBE_EXCERPT_CHARS} or pin a head fitted on that budget "
            "(judge fit, see docs/probe.md)")
    fitted_reader = head.about.get("reader") or "last"
    if head.dim and fitted_reader != (reads.get("reader") or "last"):
        raise ProbeHeadError(
            f"the probe head {name!r} was fitted on vectors of the reader {fitted_reader!r}, "
            f"but this config reads {reads.get('reader') or 'last'!r} (probe_reader): set "
            f"probe_reader = {fitted_reader!r} or pin a head fitted on that reader (judge "
            "fit, see docs/probe.md)")
    fitted_prompt = str(head.about.get("prompt") or "")
    if head.dim and not fitted_prompt:
        raise ProbeHeadError(
            f"the probe head {name!r} records no prompt its vectors were read with, so it "
            f"cannot be known to read {reads['prompt']}: fit it again (judge fit records the "
            "prompt, see docs/probe.md) or pin a head that records it")
    if head.dim and fitted_prompt != reads["prompt"]:
        raise ProbeHeadError(
            f"the probe head {name!r} was fitted on vectors of the prompt {fitted_prompt}, "
            f"but this config reads {reads['prompt']}: set prompts.probe_claim to "
            f"{fitted_prompt.rsplit('/', 1)[-1]!r} or pin a head fitted on that prompt "
            "(judge fit, see docs/probe.md)")
    gguf = os.environ.get(ENV_GGUF)
    fitted_on = head.about.get("gguf_sha256")
    if not (config.probe_endpoint is None and config.model.startswith("embedded/")
            and head.dim and fitted_on):
        return
    if gguf and fitted_on == MODEL_SHA256:
        raise ProbeHeadError(
            f"the probe head {name!r} reads the packaged model's hidden "
            f"states, but {ENV_GGUF}={gguf} serves another model: fit a head for it (judge "
            "the gold with a probe config, then `judge fit`; see docs/probe.md) and pin it "
            "as probe_head")
    served = served_sha256(gguf) if gguf else MODEL_SHA256
    if served is not None and fitted_on != served:
        raise ProbeHeadError(
            f"the probe head {name!r} was fitted on the hidden states of the model with "
            f"sha256 {fitted_on[:16]}…, but the model served is {served[:16]}… "
            f"({gguf or 'the packaged model'}): pin a head fitted on this model (judge fit, "
            "see docs/probe.md)")


def served_sha256(path: str) -> str | None:
    """The sha256 of the GGUF ``$CLAIM_JUDGE_GGUF`` names (hashed once per process), None
    when it cannot be read (loading it will say why)."""
    from pathlib import Path

    from judge.models.model_bytes import digest

    try:
        return digest(Path(path).expanduser())
    except OSError:
        return None


def _source(served: object) -> str:
    if not isinstance(served, dict):
        return "the vectors of the model read in process (no probe_endpoint)"
    norm = "L2-normalised" if served.get("normalized") else "unnormalised"
    return (f"the {norm} vectors ({served.get('pooling')} pooling) of the served model "
            f"{served.get('model')!r} (probe_endpoint)")


def _budget(chars: object) -> str:
    return f"at most {chars or PROBE_EXCERPT_CHARS} characters"


def _layer(layers: object) -> str:
    return ("the last layer's hidden state" if layers is None
            else f"the hidden state after block {layers}")


class ProbeStrategy(PerClaim):
    """Bound to the config of one rule (the pipeline picks the answer's domain rule)."""

    def __init__(self, config: JudgeConfig, client: Any, root: Any) -> None:
        super().__init__(config, client, root)
        self.head = head_of(config)  # a missing or altered head fails before any answer
        check_runtime(config, self.head)

    async def one(self, record: AnswerRecord, claim: Claim, run_id: str | None) -> Decision:
        try:
            located, vector, call = await self.vector(record, claim, run_id)
        except CallFailed as exc:
            version = self.config.prompts["probe_claim"]
            return Decision(claim, None, f"probe failed ({version}): {exc}", [exc.call_id])
        return decide_probe(self.config, self.head, claim, located, vector, call)

    async def vector(
        self, record: AnswerRecord, claim: Claim, run_id: str | None
    ) -> tuple[list[Evidence], np.ndarray, str]:
        """(the located evidence, the float16 hidden state, the call id): the model's part.
        Raises ``CallFailed`` (and, replaying, ``ReplayMiss``)."""
        located, prompt = await asyncio.to_thread(
            probe_prompt, self.config, self.root, record, claim)
        vector, call = await self.client.embed(prompt, "probe", run_id, claim=claim.text)
        return located, vector, call


def decide_probe(config: JudgeConfig, head: ProbeHead, claim: Claim, located: list[Evidence],
                 vector: np.ndarray, call: str) -> Decision:
    """The program's part: the head's probabilities (after the language offset of what the
    probe read, when the head has one) and the decision. Pure, so replay and ``judge fit``
    decide stored vectors exactly as the pipeline does. A vector the head cannot read
    (another model's, all zeros, constant, or far outside what the head was fitted on:
    :meth:`ProbeHead.refusal`) fails closed, naming the reason."""
    version = config.prompts["probe_claim"]
    text = probe_text(claim.text, located)
    try:
        refused = head.refusal(vector, text)
        row = head.probabilities(vector, [text])[0]
    except ProbeHeadError as exc:
        return Decision(claim, None, f"probe head ({version}): {exc}; fail closed", [call])
    if refused:
        return Decision(claim, None, f"probe vector refused ({version}): {refused}; fail "
                        "closed", [call])
    probs = {label: float(p) for label, p in zip(head.labels, row, strict=True)}
    if not all(np.isfinite(list(probs.values()))):
        return Decision(claim, None, f"probe probabilities are not numbers ({version}); "
                        "fail closed", [call])
    label = max(TIE_ORDER, key=lambda name: (probs[name], -TIE_ORDER.index(name)))
    judgement = ClaimJudgement(
        claim=1,
        label=label,  # type: ignore[arg-type]
        subtype=None if label == Label.SUPPORTED.value else "opinion",
        rationale=f"probe head on the model's hidden state: {describe(probs)}",
    )
    return Decision(claim, judgement, None, [call], located=located,
                    support=probs[Label.SUPPORTED.value])
