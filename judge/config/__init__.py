"""The judge config and the ``judge_version`` id derived from it.

A judge version is the identity of everything that determines a verdict: the exact
model id, the prompt templates (name, version, content hash), the sampling parameters
and the output schema version. Change any of them and the version id changes.
Operational settings (concurrency, timeouts, retries) do not change a verdict and are
left out of the hash. Which is which is a fact of the types: a :class:`JudgeConfig` is the
:class:`~judge.config.versioned.VersionedSettings` (every field hashed) together with the
:class:`~judge.config.operations.OperationalSettings` (none hashed), read from one flat
``[judge]`` table. (:func:`judge.version_of` computes the version of a config with its
prompt templates.)

May import records, verdicts and decide.registry (the strategies, read while a config is
validated; the registry imports nothing of the config, so the two go one way); never models or
store.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from judge.config.operations import OperationalSettings
from judge.config.versioned import (
    DEFAULT_MODEL,
    ONE_CALL_PROMPT,
    SCHEMA_VERSION,
    Neutral,
    VersionedSettings,
    neutral_values,
)
from judge.hashing import content_hash
from judge.masking import mask

__all__ = [
    "CONFIG_FILE", "DEFAULT_MODEL", "EMBEDDED_PROFILE", "HOSTED_PROFILE", "ONE_CALL_PROMPT",
    "SCHEMA_VERSION",
    "JudgeConfig", "Neutral", "OperationalSettings", "VersionedSettings", "config_path",
    "judge_version", "load_config", "short_model_name",
]

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
#: Settings a hosted model (any model not under ``embedded/``, an OpenAI-compatible server
#: included) runs with when the config names no strategy, from
#: ``judge/config/profiles/hosted.toml``: strategy ``batch`` with ``one_call`` (a free-text
#: answer split and judged in one call), prompts laid out for providers' prompt caches
#: (``judge_answer`` v2, ``verify_claims`` v3), and ``label_logprobs = "auto"`` (each claim's
#: support read from the tokens that spell its label where the provider returns
#: log-probabilities). A config that names its strategy gets the library defaults.
HOSTED_PROFILE: dict[str, Any] = tomllib.loads(
    (Path(__file__).parent / "profiles" / "hosted.toml").read_text(encoding="utf-8")
)["judge"]


class JudgeConfig(OperationalSettings, VersionedSettings):
    """What a user pins and commits (``judge.toml``): the settings that change a verdict
    (:class:`VersionedSettings`, the judge version) and those that do not
    (:class:`OperationalSettings`), one flat table. A field is in exactly one of them."""

    #: fields that change a verdict, hence the judge version (derived from the type)
    VERSIONED: ClassVar[tuple[str, ...]] = tuple(VersionedSettings.model_fields)
    #: the versioned fields added after the first judge versions were published, with their
    #: neutral value (derived from their :class:`Neutral` marks)
    NEUTRAL: ClassVar[dict[str, Any]] = neutral_values()
    #: settings that never change a verdict (derived from the type)
    OPERATIONAL: ClassVar[tuple[str, ...]] = tuple(OperationalSettings.model_fields)

    @property
    def versioned(self) -> VersionedSettings:
        """The settings of this config that make its judge version."""
        return VersionedSettings.model_validate(
            {name: getattr(self, name) for name in VersionedSettings.model_fields})

    @property
    def operations(self) -> OperationalSettings:
        """The settings of this config that do not change a verdict."""
        return OperationalSettings.model_validate(
            {name: getattr(self, name) for name in OperationalSettings.model_fields})

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
            if "judge" in raw and isinstance(raw.get("review"), dict):
                data["review"] = raw["review"]  # the [review] table beside [judge]
        data.update({k: v for k, v in overrides.items() if v is not None})
        if "api_key" in data:
            raise ValueError(
                "api_key is not a setting: a key is never read from a file; remove it and "
                "export the provider's variable instead (OPENAI_API_KEY, ANTHROPIC_API_KEY, "
                "...; `judge doctor` names the one the model needs)")
        # the embedded model with no strategy, or with its profile's strategy and no head of
        # its own (a bare strategy = "probe", refused before for want of a head), takes its
        # profile: the pinned head and layer; what the config sets wins
        model = data.get("model", DEFAULT_MODEL)
        if model == DEFAULT_MODEL and (
                "strategy" not in data or (data["strategy"] == EMBEDDED_PROFILE["strategy"]
                                           and "probe_head" not in data)):
            data = {**EMBEDDED_PROFILE, **data}
        elif not str(model).startswith("embedded/") and "strategy" not in data:
            data = {**HOSTED_PROFILE, **data}  # a hosted model: the hosted default
        try:
            return cls.model_validate(data)
        except ValidationError as exc:  # an invalid value is echoed: never a secret
            shown = mask(str(exc))
            if shown != str(exc):
                raise ValueError(shown) from None
            raise


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


def short_model_name(model: str) -> str:
    """``embedded/qwen2.5-coder-1.5b-instruct-q4_k_m`` -> ``qwen2.5-coder-1.5b-instruct-q4_k_m``."""
    name = model.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def judge_version(config: VersionedSettings, template_hashes: dict[str, str]) -> str:
    """``<model>@<12 hex>``: readable name + short hash over model, parameters,
    template contents (by name/version/hash) and schema version."""
    ident = {
        "config": config.versioned_fields(identity=True),
        "templates": dict(sorted(template_hashes.items())),
    }
    return f"{short_model_name(config.model)}@{content_hash(ident)[:12]}"


#: The config file read when none is named (in the working directory).
CONFIG_FILE = "judge.toml"


def config_path(path: str | Path | None = None) -> Path | None:
    """The config file :func:`load_config` reads: ``path``, else ``$CLAIM_JUDGE_CONFIG``, else
    ``./judge.toml`` when it exists; None: the default config."""
    if path is None:
        env = os.environ.get("CLAIM_JUDGE_CONFIG")
        if env:
            path = env
        elif Path(CONFIG_FILE).is_file():
            path = CONFIG_FILE
    return Path(path) if path is not None else None


def load_config(path: str | Path | None = None, **overrides: Any) -> JudgeConfig:
    """The judge config: ``path``, else ``$CLAIM_JUDGE_CONFIG``, else ``./judge.toml`` when it
    exists, else the default (the embedded model with its fitted profile). ``overrides``
    (None values ignored) replace settings, as the CLI's ``--model`` / ``--concurrency``."""
    return JudgeConfig.load(config_path(path), **overrides)
