"""A judge config as TOML: every setting that makes the judge version, so the file pins the
version on its own (operational settings are left to the defaults; add them by hand)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from judge.config import JudgeConfig

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to a judge config")


def _score_model(prefix: str, model: dict[str, Any]) -> list[str]:
    lines = ["", f"[{prefix}.score_model.intercept]",
             *(f"{_key(label)} = {_value(v)}" for label, v in model["intercept"].items())]
    for label, row in model["weights"].items():
        lines += ["", f"[{prefix}.score_model.weights.{_key(label)}]",
                  *(f"{_key(name)} = {_value(v)}" for name, v in row.items())]
    return lines


def config_toml(config: JudgeConfig, header: Sequence[str] = ()) -> str:
    """The ``[judge]`` table of ``config``'s versioned settings (``score_model`` and
    ``domain_rules`` as sub-tables), after ``header`` as comment lines. Loading the text
    with :meth:`JudgeConfig.load` gives a config of the same judge version (checked)."""
    fields = config.versioned_fields()
    score_model = fields.pop("score_model", None)
    domain_rules = fields.pop("domain_rules", {})
    lines = [f"# {line}".rstrip() for line in header]
    lines.append("[judge]")
    lines += [f"{_key(name)} = {_value(value)}" for name, value in fields.items()]
    if score_model is not None:
        lines += _score_model("judge", score_model)
    for name, rule in domain_rules.items():
        prefix = f"judge.domain_rules.{_key(name)}"
        lines += ["", f"[{prefix}]",
                  f"review_support_below = {_value(rule['review_support_below'])}"]
        if "probe_head" in rule:
            lines.append(f"probe_head = {_value(rule['probe_head'])}")
        else:
            lines += _score_model(prefix, rule["score_model"])
    text = "\n".join(lines) + "\n"
    _check(text, config)
    return text


def _check(text: str, config: JudgeConfig) -> None:
    import tomllib

    loaded = JudgeConfig.model_validate(tomllib.loads(text)["judge"])
    if loaded.versioned_fields() != config.versioned_fields():  # a bug here, never input
        raise RuntimeError("the written judge config does not read back as the same settings")
