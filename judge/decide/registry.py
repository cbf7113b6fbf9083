"""The strategies by name: the one place a strategy is declared, and what config validation,
the judge version and the pipeline read about it.

A :class:`StrategySpec` says what a strategy needs: the class that decides (imported when a
pipeline first binds the strategy, so validating a config imports no strategy module), the
prompt it asks for each claim and the version pinned when a config names none, the setting a
domain rule replaces, and any further requirement on the config. ``JudgeConfig.strategy`` is
validated against :func:`names`; ``prompts`` may pin any prompt a strategy declares; the judge
version requires the strategy's prompt (:func:`judge.version.pin`). Adding a strategy is one
:func:`register` call (docs/extending.md).

Imports nothing of the project, not even the config's types (the config imports it, to read
it while validating): a config reaches it as a plain value, ``Any``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.decide import Strategy

#: What builds a strategy: ``(config, client, prompts root) -> Strategy``.
Factory = Callable[..., "Strategy"]


@dataclass(frozen=True)
class StrategySpec:
    """One strategy: its name and what it needs."""

    name: str
    #: the strategy's class (or a function) taking ``(config, client, root)``, or its
    #: ``"module:attribute"``, imported when a pipeline first binds it
    factory: Factory | str
    #: the prompt it asks (besides ``split_claims``): a config of the strategy pins a version
    prompt: str
    #: the version of ``prompt`` pinned when a config names none (None: the config must name it)
    prompt_version: str | None = None
    #: further prompts a config may pin for this strategy (``batch``: ``judge_answer``)
    more_prompts: tuple[str, ...] = ()
    #: the setting a domain rule replaces (``score_model``, ``probe_head``); None: the
    #: strategy has no domain rules
    rule_setting: str | None = None
    #: a further requirement on the config (the ``VersionedSettings`` being validated): raises
    #: ``ValueError`` saying what is missing
    check: Callable[[Any], None] | None = None

    def build(self, config: Any, client: Any, root: Path) -> Strategy:
        """The strategy bound to a config, a model client and the prompt templates."""
        factory = self.factory
        if isinstance(factory, str):
            module, _, attribute = factory.partition(":")
            factory = getattr(importlib.import_module(module), attribute)
        return factory(config, client, root)


_STRATEGIES: dict[str, StrategySpec] = {}


def register(spec: StrategySpec) -> StrategySpec:
    """Declare a strategy (a name declared again is replaced)."""
    _STRATEGIES[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Forget a strategy (tests that declared one)."""
    _STRATEGIES.pop(name, None)


def names() -> list[str]:
    """The strategies' names, in the order they were declared."""
    return list(_STRATEGIES)


def spec_of(name: str) -> StrategySpec:
    """The strategy named ``name``; ``ValueError`` naming the known ones if there is none."""
    try:
        return _STRATEGIES[name]
    except KeyError:
        known = ", ".join(repr(n) for n in _STRATEGIES)
        raise ValueError(f"unknown strategy {name!r}; known: {known}") from None


def prompt_owners() -> dict[str, str]:
    """The prompts a config may pin, each with the strategy that asks it (``split_claims``:
    all)."""
    owners = {"split_claims": "all"}
    for spec in _STRATEGIES.values():
        for prompt in (spec.prompt, *spec.more_prompts):
            owners.setdefault(prompt, spec.name)
    return owners


def with_setting(setting: str) -> list[str]:
    """The strategies whose domain rules replace ``setting``."""
    return [s.name for s in _STRATEGIES.values() if s.rule_setting == setting]


def _needs_probe_head(config: Any) -> None:
    if config.probe_head is None:
        raise ValueError(
            "strategy 'probe' needs a head: pin one as probe_head = {file = ..., sha256 = "
            "...} (the embedded model's default profile pins one; 'judge fit' fits one for "
            "another model)")


register(StrategySpec("batch", "judge.decide.batch:BatchStrategy", "verify_claims",
                      more_prompts=("judge_answer",)))
register(StrategySpec("per_claim", "judge.decide.per_claim:PerClaimStrategy", "label_claim"))
register(StrategySpec("scores", "judge.decide.scores:ScoresStrategy", "choose_label",
                      rule_setting="score_model"))
register(StrategySpec("probe", "judge.decide.probe:ProbeStrategy", "probe_claim",
                      prompt_version="v1", rule_setting="probe_head", check=_needs_probe_head))
