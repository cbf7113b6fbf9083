"""The settings that change a verdict, hence the judge version: one type, whose fields are
what the version hashes (:meth:`VersionedSettings.versioned_fields`). A new field that can
change a verdict is declared here, and only here; one that cannot belongs to
:class:`judge.config.operations.OperationalSettings`.

A field added after the first judge versions were published carries :class:`Neutral`: the
value that reproduces the behaviour from before it existed. At that value the field is left
out of the hash, so adding a field never renames the versions that do not use it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.fields import FieldInfo

from judge.config.probe import (
    PROBE_EXCERPT_CHARS,
    ProbeEndpoint,
    ProbeHeadRef,
    ReaderError,
    parse_readers,
)
from judge.config.score_model import DEFAULT_RULE, DomainRule, ScoreModel
from judge.decide.registry import names, prompt_owners, spec_of, with_setting
from judge.records.models import DOMAIN_PATTERN
from judge.verdicts import LABELS

#: The offline default: the packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M (see judge.models.embedded).
DEFAULT_MODEL = "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"

#: The ``judge_answer`` version a config with ``one_call`` pins unless it names one.
ONE_CALL_PROMPT = "v1"

#: Version of the structured output schemas (judge.schemas). Bump on any schema change.
SCHEMA_VERSION = "1"


@dataclass(frozen=True, eq=False)
class Neutral:
    """Marks a versioned field added after the first judge versions were published, with the
    value that reproduces the behaviour from before it existed (its default). At that value
    the field is left out of the hash, so its stored runs stay replayable under the same id.
    Never change one."""

    value: Any


def neutral_value(field: FieldInfo) -> Neutral | None:
    """The :class:`Neutral` mark of a field, if it has one."""
    return next((m for m in field.metadata if isinstance(m, Neutral)), None)


#: The settings only a strategy that reads a probe head uses, each with what it is (for the
#: error when another strategy sets one away from its neutral value).
PROBE_ONLY = {
    "probe_head": "reads hidden states",
    "probe_layers": "picks the layer a probe reads",
    "probe_endpoint": "serves a probe's vectors",
    "probe_excerpt_chars": "is the evidence a probe reads",
    "probe_reader": "picks the tokens a probe reads",
}


class VersionedSettings(BaseModel):
    """The settings that change a verdict: every field is part of the judge version (in this
    order, which is also the order ``judge fit`` writes them in)."""

    model_config = ConfigDict(extra="forbid")

    model: str = DEFAULT_MODEL
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_tokens: int = Field(default=1024, ge=16, le=32768)
    prompts: dict[str, str] = Field(
        default_factory=lambda: {"split_claims": "v2", "verify_claims": "v2"}
    )
    schema_version: str = SCHEMA_VERSION
    #: "batch": the model labels several claims per call against whole sources and quotes
    #: evidence. "per_claim": the program locates excerpts, the model gives one label per
    #: claim, the program derives subtype and evidence (made for small local models).
    #: "scores": like per_claim, but the model answers a multiple-choice question with one
    #: letter and the program decides from the letters' log-probabilities plus
    #: ``label_bias`` (see judge.decide.scores; needs a provider that reports top_logprobs).
    #: "probe": like scores, but the program reads the model's hidden state for the claim and
    #: its located evidence (one forward pass, prompt ``probe_claim``) and a head fitted on
    #: human gold (``probe_head``) gives the labels' probabilities (judge.decide.probe).
    #: The strategies are declared in judge.decide.registry (one place to add one).
    strategy: str = "batch"
    #: Deterministic signals may override the model's label (see judge.assembly.signals); the
    #: thresholds below were chosen on the tuning split only (research/README.md).
    signals: bool = False
    support_overlap_min: float = Field(default=0.5, ge=0.0, le=1.0)
    opinion_overlap_max: float = Field(default=0.3, ge=0.0, le=1.0)
    numbers_overlap_min: float = Field(default=0.4, ge=0.0, le=1.0)
    contradiction_overlap_min: Annotated[float, Neutral(0.0)] = Field(default=0.0, ge=0.0,
                                                                       le=1.0)
    #: Abstention statements ("the sources do not say …") are checked by the program:
    #: silent sources → supported, a source sentence covering the topic → contradicted
    #: (judge.assembly.abstention).
    abstention_check: Annotated[bool, Neutral(False)] = False
    abstention_covered_min: Annotated[float, Neutral(0.6)] = Field(default=0.6, ge=0.0, le=1.0)
    abstention_silent_max: Annotated[float, Neutral(0.3)] = Field(default=0.3, ge=0.0, le=1.0)
    #: Queue policy: a "supported" verdict whose program-computed strength is below this
    #: goes to review as ``weak_evidence``.
    review_strength_below: float = Field(default=0.0, ge=0.0, le=1.0)
    #: "scores" strategy: added to each label's log-probability before the argmax
    #: (fitted on the tuning split; research/tune_scores.py).
    label_bias: Annotated[dict[str, float], Neutral({})] = Field(default_factory=dict)
    #: Queue policy ("scores"): a "supported" verdict whose adjusted probability of
    #: "supported" is below this goes to review as ``doubtful_support``.
    review_support_below: Annotated[float, Neutral(0.0)] = Field(default=0.0, ge=0.0, le=1.0)
    #: "scores": a linear rule over the option log-probabilities and the program's evidence
    #: features (judge.decide.linear), fitted by research/fit_linear.py; replaces ``label_bias`` and
    #: the signal overrides (the signals become its features).
    score_model: Annotated[ScoreModel | None, Neutral(None)] = None
    #: "scores" / "probe": rules fitted for one domain each (``judge fit --domain``), by
    #: domain name: an answer whose domain has a rule is decided by it, every other answer by
    #: ``score_model`` (or ``probe_head``) and ``review_support_below`` above.
    domain_rules: Annotated[dict[str, DomainRule], Neutral({})] = Field(default_factory=dict)
    #: verify_claims v1: claims per verify call. v2 and later put every claim of an answer in
    #: one call when it fits ``context_tokens`` and ``max_tokens`` (judge.decide.packing).
    verify_batch_size: int = Field(default=4, ge=1, le=50)
    #: the most claims one answer may have, split or given (more: a ``judge_error``)
    max_claims_per_answer: int = Field(default=40, ge=1, le=500)
    #: refuse to judge an answer that names no ``generator`` (then self-grading cannot be
    #: ruled out); false: such answers are judged and counted in the run summary
    require_generator: Annotated[bool, Neutral(False)] = False
    #: the model's context in tokens, for verify_claims v2's one-call-per-answer rule; None:
    #: litellm's model information, else 8192
    context_tokens: Annotated[int | None, Neutral(None)] = Field(default=None, ge=1024,
                                                                 le=10_000_000)
    #: "scores": the excerpts the model reads with a claim. "claim": the ones
    #: located for that claim. "answer": one set for every claim of an answer (the best of each
    #: claim's, within a budget), so the prompts of an answer's claims share their beginning and
    #: the embedded runtime evaluates it once per answer (judge.models.shared_prefix: split
    #: points fixed by the prompt, so the scores do not depend on what ran before). An answer of
    #: one claim is asked exactly as with "claim". The evidence and the program's features stay
    #: each claim's own.
    excerpts: Annotated[Literal["claim", "answer"], Neutral("claim")] = "claim"
    #: "batch": a free-text answer is split and its claims judged in one call (prompt
    #: ``judge_answer``) when the sources and sentences fit the context and the claims fit
    #: ``max_tokens``; else, and for given claims, split and verify are separate calls. A
    #: sentence the call leaves uncovered is verified in a second call (judge.decide.one_call).
    one_call: Annotated[bool, Neutral(False)] = False
    #: "batch": the verification calls (verify_claims, judge_answer) ask the provider for the
    #: output tokens' log-probabilities, and each claim's support is the probability of the
    #: tokens that spell "supported" where its label is written (judge.models.label_tokens;
    #: no extra call, never a model-reported confidence), so the review queue can set an
    #: operating point at a stated recall. true: always ask; "auto": when litellm lists
    #: ``logprobs`` and ``top_logprobs`` for the model (the hosted profile's); false: never.
    label_logprobs: Annotated[bool | Literal["auto"], Neutral(False)] = False
    #: an answer whose sentences are all atomic (judge.split.atomic: one checkable statement,
    #: nothing joined, no pronoun, short) is not sent to the split: each sentence is a claim
    #: as it stands (origin "sentence"). Any other answer is split by the model as before.
    #: The value names the rule: true is the first, "atomic/v1" (kept so the versions that
    #: use it keep their id); "atomic/v2" also takes a short leading phrase and its comma.
    split_atomic: Annotated[bool | Literal["atomic/v2"], Neutral(False)] = False
    #: with a provider that keeps a KV cache (the embedded one): every structured call (the
    #: split above all) is evaluated on top of its prompt's fixed instructions, evaluated
    #: once per process and reused (judge.models.shared_prefix, split point fixed by the
    #: prompt, so an output never depends on what ran before). Part of each call's identity.
    reuse_instructions: Annotated[bool, Neutral(False)] = False
    #: "probe": the head that maps the hidden state to the labels (file and sha256).
    probe_head: Annotated[ProbeHeadRef | None, Neutral(None)] = None
    #: "probe" with the embedded provider: read the hidden state after the model's first N
    #: transformer blocks instead of the last (judge.models.gguf_layers); None: all blocks.
    #: An earlier layer is also N/L of the forward pass's time. The head must have been
    #: fitted on vectors of the same layer.
    probe_layers: Annotated[int | None, Neutral(None)] = Field(default=None, ge=1, le=1024)
    #: "probe": read the vectors from a served model's embeddings endpoint (model id,
    #: pooling, normalisation: versioned; ``api_base``: not) instead of from ``model``, which
    #: still generates. The head must have been fitted on that endpoint's vectors.
    probe_endpoint: Annotated[ProbeEndpoint | None, Neutral(None)] = None
    #: "probe": at most this many characters of located source evidence in the prompt the
    #: model reads (judge.decide.excerpts); more reads more of a long source, at about 20 ms
    #: per extra token. The head must have been fitted on vectors read with the same budget.
    probe_excerpt_chars: Annotated[int, Neutral(PROBE_EXCERPT_CHARS)] = Field(
        default=PROBE_EXCERPT_CHARS, ge=100, le=8000)
    #: "probe": which tokens' hidden states the head reads (judge.models.readers): "last"
    #: (the prompt's last token, every head before readers), or the claim's or the
    #: evidence's tokens pooled ("claim_mean", "claim_max", "evidence_mean",
    #: "evidence_max"), several joined by "+" and concatenated ("last+claim_mean"). The head
    #: must have been fitted on vectors read by the same readers.
    probe_reader: Annotated[str, Neutral("last")] = "last"

    @field_validator("probe_reader")
    @classmethod
    def _probe_reader(cls, value: str) -> str:
        try:
            return "+".join(parse_readers(value))
        except ReaderError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("split_atomic", mode="before")
    @classmethod
    def _atomic_rule(cls, value: Any) -> Any:
        """``"atomic/v1"`` is spelled ``true``, so one rule has one version id."""
        return True if value == "atomic/v1" else value

    @property
    def atomic_rule(self) -> str | None:
        """The atomic-sentence rule ``split_atomic`` names (``None``: every answer is split)."""
        if self.split_atomic is False:
            return None
        return "atomic/v1" if self.split_atomic is True else self.split_atomic

    @property
    def decision_prompt(self) -> str:
        """The prompt the strategy asks to decide claims (``verify_claims`` for ``batch``)."""
        return spec_of(self.strategy).prompt

    @field_validator("prompts")
    @classmethod
    def _prompt_versions(cls, value: dict[str, str]) -> dict[str, str]:
        known = list(prompt_owners())
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"prompts names unknown prompts {unknown}; known: {known}")
        for name, version in value.items():
            if not re.fullmatch(r"v\d+", version):
                raise ValueError(f"prompt {name!r}: version {version!r} is not like 'v2'")
        return value

    @field_validator("label_bias")
    @classmethod
    def _bias_labels(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(LABELS))
        if unknown:
            raise ValueError(f"label_bias names unknown labels {unknown}; known: {LABELS}")
        if any(not math.isfinite(v) for v in value.values()):
            raise ValueError("label_bias values must be finite numbers")
        return dict(sorted(value.items()))

    @model_validator(mode="after")
    def _abstention_thresholds(self) -> Self:
        if self.abstention_silent_max >= self.abstention_covered_min:
            raise ValueError(
                f"abstention_silent_max ({self.abstention_silent_max}) must be below "
                f"abstention_covered_min ({self.abstention_covered_min})"
            )
        return self

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        spec_of(value)  # ValueError naming the known strategies
        return value

    @model_validator(mode="after")
    def _strategy_settings(self) -> Self:
        """What the strategy's declaration (judge.decide.registry) asks of the config."""
        spec = spec_of(self.strategy)
        if self.score_model is not None and spec.rule_setting != "score_model":
            raise ValueError(
                f"score_model decides from option scores: it needs strategy "
                f"{_either(with_setting('score_model'))}, not {self.strategy!r}"
            )
        if self.domain_rules and spec.rule_setting is None:
            ruled = [n for n in names() if spec_of(n).rule_setting is not None]
            raise ValueError(
                f"domain_rules decide from option scores or a probe head: they need strategy "
                f"{_either(ruled)}, not {self.strategy!r}"
            )
        for name, rule in self.domain_rules.items():
            if getattr(rule, spec.rule_setting or "", None) is None:
                raise ValueError(f"domain_rules.{name}: strategy {self.strategy!r} needs a "
                                 f"{spec.rule_setting} in each domain rule")
        if spec.rule_setting != "probe_head":
            neutral = neutral_values()
            for name, what in PROBE_ONLY.items():
                if getattr(self, name) != neutral[name]:
                    raise ValueError(f"{name} {what}: it needs strategy "
                                     f"{_either(with_setting('probe_head'))}, not "
                                     f"{self.strategy!r}")
        if self.probe_layers is not None and self.probe_endpoint is not None:
            raise ValueError("probe_layers cuts the embedded model; a served model gives the "
                             "layer its server pools (leave probe_layers out with "
                             "probe_endpoint)")
        if self.probe_reader != "last" and self.probe_endpoint is not None:
            raise ValueError(
                f"probe_reader {self.probe_reader!r} pools per-token hidden states, which a "
                "served probe cannot give: the OpenAI-compatible embeddings route that litellm "
                "calls pools one vector per input (llama.cpp refuses pooling 'none' there), so "
                "a served probe reads the last token only (probe_reader = 'last'); read "
                "per-token states in process with the embedded provider")
        if self.probe_reader != "last" and not self.model.startswith("embedded/"):
            raise ValueError(f"probe_reader {self.probe_reader!r} needs the embedded provider "
                             "(model = 'embedded/...'), which reads per-token hidden states")
        if self.probe_layers is not None and not self.model.startswith("embedded/"):
            raise ValueError("probe_layers needs the embedded provider (model = "
                             "'embedded/...'): another provider serves the layer it serves")
        if spec.check is not None:
            spec.check(self)
        if spec.prompt_version is not None:
            self.prompts.setdefault(spec.prompt, spec.prompt_version)
        return self

    @model_validator(mode="after")
    def _label_logprobs_strategy(self) -> Self:
        if self.label_logprobs is not False and self.strategy != "batch":
            raise ValueError(
                f"label_logprobs reads the labels of the 'batch' strategy's verification "
                f"calls; strategy {self.strategy!r} gives its own support or none (leave "
                "label_logprobs out)")
        return self

    @model_validator(mode="after")
    def _one_call_prompt(self) -> Self:
        if not self.one_call:
            return self
        if self.strategy != "batch":
            raise ValueError(
                f"one_call splits and verifies with the 'batch' strategy's judgements; "
                f"strategy {self.strategy!r} decides claims one by one")
        self.prompts.setdefault("judge_answer", ONE_CALL_PROMPT)
        return self

    @field_validator("domain_rules")
    @classmethod
    def _domain_names(cls, value: dict[str, DomainRule]) -> dict[str, DomainRule]:
        for name in value:
            if name == DEFAULT_RULE or not re.fullmatch(DOMAIN_PATTERN, name):
                raise ValueError(
                    f"domain_rules: {name!r} is not a domain name (letters, digits and "
                    f"_ . : -, starting with a letter or digit; {DEFAULT_RULE!r} is reserved)")
        return dict(sorted(value.items()))

    def rule_for(self, domain: str | None) -> tuple[str | None, Self]:
        """The name of the rule that decides an answer of ``domain`` (None: the strategy
        has no domain rules, its declaration names no ``rule_setting``) and the settings to
        decide it with: these for the default rule, else a copy with the domain's
        ``score_model`` or ``probe_head`` and ``review_support_below``."""
        setting = spec_of(self.strategy).rule_setting
        if setting is None:
            return None, self
        rule = self.domain_rules.get(domain) if domain else None
        if rule is None or domain is None:
            return DEFAULT_RULE, self
        update: dict[str, Any] = {"review_support_below": rule.review_support_below,
                                  setting: getattr(rule, setting)}
        return domain, self.model_copy(update=update)

    def versioned_fields(self, identity: bool = False) -> dict[str, Any]:
        """The settings that change a verdict, in declaration order (a :class:`Neutral` one at
        its neutral value left out). ``identity``: as the judge version hashes them (see
        :func:`plain`)."""
        fields = {}
        for name, field in VersionedSettings.model_fields.items():
            value = plain(getattr(self, name), identity)
            neutral = neutral_value(field)
            if neutral is None or value != neutral.value:
                fields[name] = value
        return fields


def _either(strategies: list[str]) -> str:
    """``'scores'``, ``'scores' or 'probe'``."""
    return " or ".join(repr(n) for n in strategies)


def neutral_values() -> dict[str, Any]:
    """The versioned fields that carry a :class:`Neutral` mark, with their neutral value."""
    return {name: mark.value for name, field in VersionedSettings.model_fields.items()
            if (mark := neutral_value(field)) is not None}


def plain(value: Any, identity: bool = False) -> Any:
    """A setting as plain JSON values. ``identity``: as the judge version hashes it (a probe
    head by its content, the sha256, not by where its file lies; a probe endpoint by what it
    serves, not by its address)."""
    if identity and isinstance(value, ProbeHeadRef):
        return {"sha256": value.sha256}
    if identity and isinstance(value, ProbeEndpoint):
        return value.identity()  # where the server is is not what it computes
    if isinstance(value, BaseModel):
        # fields left at None are left out, so adding an optional field to a model
        # (DomainRule.probe_head) does not rename the judge versions that do not use it
        return {name: plain(getattr(value, name), identity)
                for name in type(value).model_fields if getattr(value, name) is not None}
    if isinstance(value, dict):
        return {k: plain(v, identity) for k, v in value.items()}
    return value
