"""The judge version of a config: a function of the config and the prompt templates it pins,
with no model client and no pipeline.

    judge.version_of(config)            # 'gpt-4.1@3f2a9c0b51de'

:class:`PinnedJudge` carries the id with the template hashes it was computed from (what the
store records for a version); :func:`register` records it in a store. The pipeline, the batch
runner, drift's re-run of a stored version and the HTTP service all take the version from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from judge.config import JudgeConfig, judge_version
from judge.decide import VERIFY_PROMPT
from judge.models.prompts import prompts_dir, template_hash

if TYPE_CHECKING:
    from judge.store import Store


@dataclass(frozen=True)
class PinnedJudge:
    """A config's judge version id and the sha256 of each template it pins
    (``{"split_claims/v1": "…"}``)."""

    id: str
    templates: dict[str, str]


def pin(config: JudgeConfig, root: Path | None = None) -> PinnedJudge:
    """The version id of ``config`` with the templates under ``root`` (default: the prompts
    shipped with the package). Raises ``ValueError`` when the config names no version of a
    prompt its strategy needs, :class:`~judge.models.prompts.PromptError` when a template is
    missing."""
    root = root or prompts_dir()
    for required in ("split_claims", VERIFY_PROMPT[config.strategy]):
        if required not in config.prompts:
            raise ValueError(f"judge config names no version for prompt {required!r}")
    templates = {
        f"{name}/{version}": template_hash(name, version, root)
        for name, version in sorted(config.prompts.items())
    }
    return PinnedJudge(judge_version(config, templates), templates)


def version_of(config: JudgeConfig, root: Path | None = None) -> str:
    """The judge version id of ``config`` (``<model>@<12 hex>``): what a run with it records
    and what its verdicts are keyed by."""
    return pin(config, root).id


def register(store: Store, config: JudgeConfig, root: Path | None = None) -> PinnedJudge:
    """Record the version of ``config`` in ``store`` (once; its versioned fields and template
    hashes, so a stored version can be re-run) and return it."""
    pinned = pin(config, root)
    store.ensure_judge_version(pinned.id, config.model, config.versioned_fields(),
                               pinned.templates)
    return pinned
