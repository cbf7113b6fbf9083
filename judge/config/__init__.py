"""The judge config and the ``judge_version`` id derived from it.

A judge version is the identity of everything that determines a verdict: the exact
model id, the prompt templates (name, version, content hash), the sampling parameters
and the output schema version. Change any of them and the version id changes.
Operational settings (concurrency, timeouts, retries) do not change a verdict and are
left out of the hash. (:func:`judge.version_of` computes the version of a config with its
prompt templates.)

May import records, verdicts and decide.registry (the strategies, read while a config is
validated, never at import time); never models or store.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.config.probe import ProbeHeadRef
from judge.config.score_model import DEFAULT_RULE, DomainRule, ScoreModel
from judge.hashing import content_hash
from judge.records.models import DOMAIN_PATTERN
from judge.verdicts import LABELS

#: The offline default: the packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M (see judge.models.embedded).
DEFAULT_MODEL = "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"

#: The ``judge_answer`` version a config with ``one_call`` pins unless it names one.
ONE_CALL_PROMPT = "v1"

#: Version of the structured output schemas (judge.schemas). Bump on any schema change.
SCHEMA_VERSION = "1"


#: Settings the embedded default model runs with unless a config says otherwise, from
#: ``judge/config/profiles/embedded.toml``: the program locates evidence, the model answers one
#: multiple-choice question per claim, and a linear rule fitted on the tuning split only
#: (research/fit_linear.py) decides from the option letters' log-probabilities and the
#: program's evidence features (judge.decide.linear); doubtful "supported" verdicts go to
#: review, and abstention statements ("the sources do not say …") are checked by the program
#: (judge.assembly.abstention). What was tried and not adopted is in research/README.md and
#: research/reports. The library defaults (batch, no signals) suit strong models, whose
#: paraphrases a lexical-overlap rule would punish.
EMBEDDED_PROFILE: dict[str, Any] = tomllib.loads(
    (Path(__file__).parent / "profiles" / "embedded.toml").read_text(encoding="utf-8")
)["judge"]


class JudgeConfig(BaseModel):
    """What a user pins and commits (``judge.toml``)."""

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
    contradiction_overlap_min: float = Field(default=0.0, ge=0.0, le=1.0)
    #: Abstention statements ("the sources do not say …") are checked by the program:
    #: silent sources → supported, a source sentence covering the topic → contradicted
    #: (judge.assembly.abstention).
    abstention_check: bool = False
    abstention_covered_min: float = Field(default=0.6, ge=0.0, le=1.0)
    abstention_silent_max: float = Field(default=0.3, ge=0.0, le=1.0)
    #: Queue policy: a "supported" verdict whose program-computed strength is below this
    #: goes to review as ``weak_evidence``.
    review_strength_below: float = Field(default=0.0, ge=0.0, le=1.0)
    #: "scores" strategy: added to each label's log-probability before the argmax
    #: (fitted on the tuning split; research/tune_scores.py).
    label_bias: dict[str, float] = Field(default_factory=dict)
    #: Queue policy ("scores"): a "supported" verdict whose adjusted probability of
    #: "supported" is below this goes to review as ``doubtful_support``.
    review_support_below: float = Field(default=0.0, ge=0.0, le=1.0)
    #: "scores": a linear rule over the option log-probabilities and the program's evidence
    #: features (judge.decide.linear), fitted by research/fit_linear.py; replaces ``label_bias`` and
    #: the signal overrides (the signals become its features).
    score_model: ScoreModel | None = None
    #: "probe": the head that maps the hidden state to the labels (file and sha256).
    probe_head: ProbeHeadRef | None = None
    #: "scores" / "probe": rules fitted for one domain each (``judge fit --domain``), by
    #: domain name: an answer whose domain has a rule is decided by it, every other answer by
    #: ``score_model`` (or ``probe_head``) and ``review_support_below`` above. Part of the
    #: judge version.
    domain_rules: dict[str, DomainRule] = Field(default_factory=dict)
    #: verify_claims v1: claims per verify call. v2 and later put every claim of an answer in
    #: one call when it fits ``context_tokens`` and ``max_tokens`` (judge.decide.packing).
    verify_batch_size: int = Field(default=4, ge=1, le=50)
    #: "scores": the excerpts the model reads with a claim. "claim": the ones
    #: located for that claim. "answer": one set for every claim of an answer (the best of each
    #: claim's, within a budget), so the prompts of an answer's claims share their beginning and
    #: the embedded runtime evaluates it once per answer (judge.models.shared_prefix: split
    #: points fixed by the prompt, so the scores do not depend on what ran before). An answer of
    #: one claim is asked exactly as with "claim". The evidence and the program's features stay
    #: each claim's own.
    excerpts: Literal["claim", "answer"] = "claim"
    #: "batch": a free-text answer is split and its claims judged in one call (prompt
    #: ``judge_answer``) when the sources and sentences fit the context and the claims fit
    #: ``max_tokens``; else, and for given claims, split and verify are separate calls. A
    #: sentence the call leaves uncovered is verified in a second call (judge.decide.one_call).
    one_call: bool = False
    #: the model's context in tokens, for verify_claims v2's one-call-per-answer rule; None:
    #: litellm's model information, else 8192
    context_tokens: int | None = Field(default=None, ge=1024, le=10_000_000)
    #: the most claims one answer may have, split or given (more: a ``judge_error``)
    max_claims_per_answer: int = Field(default=40, ge=1, le=500)
    #: refuse to judge an answer that names no ``generator`` (then self-grading cannot be
    #: ruled out); false: such answers are judged and counted in the run summary
    require_generator: bool = False
    # Operational: not part of the judge version.
    #: the provider's endpoint (an OpenAI-compatible server, a proxy); None: litellm's default
    #: for the model's provider (and its environment variables, e.g. ``OPENAI_API_BASE``)
    api_base: str | None = None
    timeout_s: float = Field(default=300.0, gt=0)
    #: transient failures (5xx, 429, timeouts, lost connections) are tried again this often
    retries: int = Field(default=2, ge=0, le=10)
    #: an output that does not parse is asked again (with the error) this often
    reasks: int = Field(default=1, ge=0, le=5)
    #: the first backoff before a retry, doubled each time (with jitter; ``Retry-After`` wins)
    backoff_s: float = Field(default=1.0, ge=0.0, le=60.0)
    #: stop the run after this many consecutive calls failed at the provider
    breaker_after: int = Field(default=5, ge=1, le=1000)
    #: answers judged at once (per process; per Ray worker with the Ray executor)
    concurrency: int = Field(default=1, ge=1, le=64)
    #: model calls in flight at once, per process; None: 4 x ``concurrency`` (the independent
    #: calls of one answer, e.g. its verify batches, do not wait on each other)
    call_concurrency: int | None = Field(default=None, ge=1, le=1024)
    #: the provider's limits: requests and tokens (prompt + max_tokens) per minute, honoured
    #: across all calls in flight; with the Ray executor each worker takes an equal share
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)

    #: fields that change a verdict, hence the judge version
    VERSIONED: ClassVar[tuple[str, ...]] = (
        "model",
        "temperature",
        "seed",
        "max_tokens",
        "prompts",
        "schema_version",
        "strategy",
        "signals",
        "support_overlap_min",
        "opinion_overlap_max",
        "numbers_overlap_min",
        "contradiction_overlap_min",
        "abstention_check",
        "abstention_covered_min",
        "abstention_silent_max",
        "review_strength_below",
        "label_bias",
        "review_support_below",
        "score_model",
        "domain_rules",
        "verify_batch_size",
        "max_claims_per_answer",
        "require_generator",
        "context_tokens",
        "excerpts",
        "one_call",
        "probe_head",
    )
    #: Fields added after the first judge versions were published, with the value that
    #: reproduces the behaviour from before they existed. At that value a field is left out
    #: of the hash, so adding a field never renames the versions that do not use it (their
    #: stored runs stay replayable under the same id). Never change an entry.
    NEUTRAL: ClassVar[dict[str, Any]] = {
        "label_bias": {},
        "review_support_below": 0.0,
        "contradiction_overlap_min": 0.0,
        "abstention_check": False,
        "abstention_covered_min": 0.6,
        "abstention_silent_max": 0.3,
        "score_model": None,
        "require_generator": False,
        "context_tokens": None,
        "excerpts": "claim",
        "domain_rules": {},
        "one_call": False,
        "probe_head": None,
    }
    #: Settings that never change a verdict (left out of the judge version).
    OPERATIONAL: ClassVar[tuple[str, ...]] = (
        "api_base", "timeout_s", "retries", "reasks", "backoff_s", "breaker_after", "concurrency",
        "call_concurrency", "rpm", "tpm",
    )

    @field_validator("prompts")
    @classmethod
    def _prompt_versions(cls, value: dict[str, str]) -> dict[str, str]:
        from judge.decide.registry import prompt_owners

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
    def _abstention_thresholds(self) -> JudgeConfig:
        if self.abstention_silent_max >= self.abstention_covered_min:
            raise ValueError(
                f"abstention_silent_max ({self.abstention_silent_max}) must be below "
                f"abstention_covered_min ({self.abstention_covered_min})"
            )
        return self

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        from judge.decide.registry import spec_of

        spec_of(value)  # ValueError naming the known strategies
        return value

    @model_validator(mode="after")
    def _strategy_settings(self) -> JudgeConfig:
        """What the strategy's declaration (judge.decide.registry) asks of the config."""
        from judge.decide.registry import names, spec_of, with_setting

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
        if self.probe_head is not None and spec.rule_setting != "probe_head":
            raise ValueError(f"probe_head reads hidden states: it needs strategy "
                             f"{_either(with_setting('probe_head'))}, not {self.strategy!r}")
        if spec.check is not None:
            spec.check(self)
        if spec.prompt_version is not None:
            self.prompts.setdefault(spec.prompt, spec.prompt_version)
        return self

    @model_validator(mode="after")
    def _one_call_prompt(self) -> JudgeConfig:
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

    def rule_for(self, domain: str | None) -> tuple[str | None, JudgeConfig]:
        """The name of the rule that decides an answer of ``domain`` (None: the strategy
        has no domain rules, its declaration names no ``rule_setting``) and the config to
        decide it with: this config for the default rule, else a copy with the domain's
        ``score_model`` or ``probe_head`` and ``review_support_below``."""
        from judge.decide.registry import spec_of

        setting = spec_of(self.strategy).rule_setting
        if setting is None:
            return None, self
        rule = self.domain_rules.get(domain) if domain else None
        if rule is None or domain is None:
            return DEFAULT_RULE, self
        update: dict[str, Any] = {"review_support_below": rule.review_support_below,
                                  setting: getattr(rule, setting)}
        return domain, self.model_copy(update=update)

    @classmethod
    def load(cls, path: Path | None = None, **overrides: Any) -> JudgeConfig:
        """Read a TOML config (``[judge]`` table or top level) and apply CLI overrides."""
        data: dict[str, Any] = {}
        if path is not None:
            try:
                raw = tomllib.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError as exc:
                raise ValueError(f"config file not found: {path}") from exc
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"config file {path} is not valid TOML: {exc}") from exc
            data = _heads_beside(dict(raw.get("judge", raw)), path.parent)
        data.update({k: v for k, v in overrides.items() if v is not None})
        if data.get("model", DEFAULT_MODEL) == DEFAULT_MODEL and "strategy" not in data:
            data = {**EMBEDDED_PROFILE, **data}
        return cls.model_validate(data)

    def calls_in_flight(self) -> int:
        """Model calls in flight at once (``call_concurrency``, default 4 x concurrency)."""
        return self.call_concurrency or 4 * self.concurrency

    def share(self, workers: int) -> JudgeConfig:
        """This config for one of ``workers`` processes that together keep its rate limits."""
        if workers <= 1:
            return self
        return self.model_copy(update={
            "rpm": None if self.rpm is None else max(1, self.rpm // workers),
            "tpm": None if self.tpm is None else max(1, self.tpm // workers),
        })

    def versioned_fields(self, identity: bool = False) -> dict[str, Any]:
        """The settings that change a verdict (the NEUTRAL ones at their neutral value left
        out). ``identity``: as the judge version hashes them (see :func:`_plain`)."""
        fields = {
            name: _plain(value, identity)
            for name, value in ((n, getattr(self, n)) for n in self.VERSIONED)
        }
        return {
            name: value
            for name, value in fields.items()
            if name not in self.NEUTRAL or value != self.NEUTRAL[name]
        }


def _either(strategies: list[str]) -> str:
    """``'scores'``, ``'scores' or 'probe'``."""
    return " or ".join(repr(n) for n in strategies)


def _heads_beside(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Probe head files named by a relative path are read beside the config that names them
    (``judge fit`` writes them there)."""
    def anchored(ref: Any) -> Any:
        if isinstance(ref, dict) and isinstance(ref.get("file"), str):
            file = ref["file"]
            if not file.startswith("builtin:") and not Path(file).expanduser().is_absolute():
                return {**ref, "file": str(folder / file)}
        return ref

    if "probe_head" in data:
        data["probe_head"] = anchored(data["probe_head"])
    rules = data.get("domain_rules")
    if isinstance(rules, dict):
        data["domain_rules"] = {
            name: {**rule, "probe_head": anchored(rule["probe_head"])}
            if isinstance(rule, dict) and "probe_head" in rule else rule
            for name, rule in rules.items()}
    return data


def _plain(value: Any, identity: bool = False) -> Any:
    """A setting as plain JSON values. ``identity``: as the judge version hashes it (a probe
    head by its content, the sha256, not by where its file lies)."""
    if identity and isinstance(value, ProbeHeadRef):
        return {"sha256": value.sha256}
    if isinstance(value, BaseModel):
        # fields left at None are left out, so adding an optional field to a model
        # (DomainRule.probe_head) does not rename the judge versions that do not use it
        return {name: _plain(getattr(value, name), identity)
                for name in type(value).model_fields if getattr(value, name) is not None}
    if isinstance(value, dict):
        return {k: _plain(v, identity) for k, v in value.items()}
    return value


def short_model_name(model: str) -> str:
    """``embedded/qwen2.5-coder-1.5b-instruct-q4_k_m`` -> ``qwen2.5-coder-1.5b-instruct-q4_k_m``."""
    name = model.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def judge_version(config: JudgeConfig, template_hashes: dict[str, str]) -> str:
    """``<model>@<12 hex>``: readable name + short hash over model, parameters,
    template contents (by name/version/hash) and schema version."""
    ident = {
        "config": config.versioned_fields(identity=True),
        "templates": dict(sorted(template_hashes.items())),
    }
    return f"{short_model_name(config.model)}@{content_hash(ident)[:12]}"


#: The config file read when none is named (in the working directory).
CONFIG_FILE = "judge.toml"


def load_config(path: str | Path | None = None, **overrides: Any) -> JudgeConfig:
    """The judge config: ``path``, else ``$CLAIM_JUDGE_CONFIG``, else ``./judge.toml`` when it
    exists, else the default (the embedded model with its fitted profile). ``overrides``
    (None values ignored) replace settings, as the CLI's ``--model`` / ``--concurrency``."""
    if path is None:
        env = os.environ.get("CLAIM_JUDGE_CONFIG")
        if env:
            path = env
        elif Path(CONFIG_FILE).is_file():
            path = CONFIG_FILE
    return JudgeConfig.load(Path(path) if path is not None else None, **overrides)
