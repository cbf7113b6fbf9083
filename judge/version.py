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
from judge.decide.probe_head import heads_text, remember
from judge.decide.registry import spec_of
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
    missing = [name for name in ("split_claims", spec_of(config.strategy).prompt)
               if name not in config.prompts]
    if missing:
        raise ValueError(missing_prompts_message(config, missing, root))
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
    hashes, so a stored version can be re-run; the text of the probe heads it pins, so it replays
    wherever their files have gone) and return it."""
    pinned = pin(config, root)
    store.ensure_judge_version(pinned.id, config.model, config.versioned_fields(),
                               pinned.templates)
    store.save_probe_heads(probe_bodies(config))
    return pinned


def prompts_read(config: JudgeConfig) -> tuple[str, ...]:
    """The prompts a run of ``config`` asks: ``split_claims``, its strategy's prompt, and
    ``judge_answer`` with ``one_call``."""
    return ("split_claims", spec_of(config.strategy).prompt,
            *(("judge_answer",) if config.one_call else ()))


def suggested_prompts(config: JudgeConfig, missing: list[str], root: Path) -> str:
    """A ``prompts`` table for ``config``: the versions it pins of the prompts its strategy
    asks and, for each ``missing`` prompt, its latest version (a prompt the strategy does not
    ask is left out)."""
    reads = prompts_read(config)
    pinned = {name: version for name, version in config.prompts.items() if name in reads}
    for name in missing:
        versions = sorted((p.stem for p in (root / name).glob("v*.j2")),
                          key=lambda v: int(v[1:]) if v[1:].isdigit() else 0)
        pinned[name] = versions[-1] if versions else "v1"
    table = ", ".join(f'{name} = "{version}"' for name, version in pinned.items())
    return f"prompts = {{{table}}}"


def missing_prompts_message(config: JudgeConfig, missing: list[str], root: Path) -> str:
    """Which prompt versions the config must pin, and how (:func:`suggested_prompts`)."""
    names = " and ".join(repr(n) for n in missing)
    return (f"the judge config names no version for prompt {names} (strategy "
            f"{config.strategy!r} needs it): pin one in the config, e.g. "
            f"{suggested_prompts(config, missing, root)}")


def probe_bodies(config: JudgeConfig) -> dict[str, str]:
    """The text of the probe heads a config pins (its own and its domains'), by sha256."""
    refs = [config.probe_head, *(r.probe_head for r in config.domain_rules.values())]
    return heads_text([(r.file, r.sha256) for r in refs if r is not None])


def remember_stored_heads(store: Store) -> None:
    """The probe heads kept in the store, known to this process by sha256 (a stored version
    replays wherever its head file has gone)."""
    for body in store.probe_head_bodies().values():
        remember(body)
