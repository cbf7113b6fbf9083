"""What a run of a config will do, checked before it runs: the prompts its strategy asks are
pinned and their templates compile, every setting it pins is one its strategy reads, and a
probe head is there, unaltered, read as it was fitted, with the operating point the queue will
use. ``judge doctor`` prints these findings beside those of :mod:`judge.models.preflight`, and
``judge run`` / ``judge eval-gold`` stop on a problem with exit 64 before anything is stored
(:func:`check_plan`), instead of exiting 1 halfway (a prompt with no version) or judging with a
setting that does nothing.
"""

from __future__ import annotations

from pathlib import Path

from judge.config import JudgeConfig
from judge.decide.registry import spec_of
from judge.models.preflight import CONFIG_PROBLEM, Finding, SetupError
from judge.models.prompts import PromptError, prompts_dir, template_hash
from judge.version import prompts_read, suggested_prompts

#: Settings only some strategies read, with the strategies that read them (the others are
#: refused by the config's own validation, or read by every strategy).
READ_BY: dict[str, tuple[str, ...]] = {
    "label_bias": ("scores",),
    "excerpts": ("scores",),
    "review_support_below": ("scores", "probe"),
    "verify_batch_size": ("batch",),
    "context_tokens": ("batch",),
}


def _prompt_findings(config: JudgeConfig, root: Path) -> list[Finding]:
    reads = prompts_read(config)
    missing = [name for name in reads if name not in config.prompts]
    found: list[Finding] = []
    if missing:
        names = " and ".join(repr(n) for n in missing)
        found.append(Finding(
            "prompts", False, f"strategy {config.strategy!r} asks prompt {names}, and the "
            "config pins no version of it", f"pin one in the config: "
            f"{suggested_prompts(config, missing, root)}", CONFIG_PROBLEM))
    for name in reads:
        if name not in config.prompts:
            continue
        version = config.prompts[name]
        try:
            template_hash(name, version, root)  # compiled, with its system and user blocks
        except PromptError as exc:
            found.append(Finding("prompts", False, str(exc), "pin a version that exists "
                                 f"(prompts/{name}/v*.j2)", CONFIG_PROBLEM))
    unread = [n for n in config.prompts if n not in reads]
    if "prompts" in config.model_fields_set and unread:
        found.append(Finding(
            "prompts", False, f"the config pins {', '.join(unread)}, which strategy "
            f"{config.strategy!r} does not ask (it would only change the judge version id)",
            f"pin only the prompts it asks: {suggested_prompts(config, [], root)}",
            CONFIG_PROBLEM))
    if not found:
        pinned = ", ".join(f"{n}/{config.prompts[n]}" for n in reads)
        found.append(Finding("prompts", True, f"strategy {config.strategy}: {pinned} compile"))
    return found


def _unread_settings(config: JudgeConfig) -> list[Finding]:
    defaults = JudgeConfig.model_fields
    found = []
    for name, strategies in READ_BY.items():
        value = getattr(config, name)
        if config.strategy in strategies or name not in config.model_fields_set \
                or value == defaults[name].get_default(call_default_factory=True):
            continue
        found.append(Finding(
            "settings", False, f"{name} is set, but strategy {config.strategy!r} does not read "
            f"it (read by {' and '.join(repr(s) for s in strategies)})",
            f"remove {name} from the config, or use strategy "
            f"{' or '.join(repr(s) for s in strategies)}", CONFIG_PROBLEM))
    return found


def _head_findings(config: JudgeConfig) -> list[Finding]:
    """A probe head (the config's and its domains'): there, unaltered, fitted on vectors read
    as this config reads them; and the operating point packaged for it, if any."""
    if spec_of(config.strategy).rule_setting != "probe_head":
        return []
    from judge.decide.probe import check_runtime, head_of
    from judge.decide.probe_head import ProbeHeadError
    from judge.review.triage import packaged_points

    if not _served_model_readable():
        return []  # the model's own check names the file first (judge.models.embedded)
    found = []
    for domain in [None, *config.domain_rules]:
        named, settings = config.rule_for(domain)
        where = f"domain {domain}: " if domain else ""
        try:
            head = head_of(settings)
            check_runtime(settings, head)
        except (ProbeHeadError, OSError) as exc:
            found.append(Finding("head", False, f"{where}{exc}", "pin the head the config "
                                 "was fitted with (probe_head = {file = ..., sha256 = ...})",
                                 CONFIG_PROBLEM))
            continue
        assert settings.probe_head is not None
        point = packaged_points(settings.probe_head.sha256)
        queue = (f"the queue's packaged operating point {point['file']}" if point else
                 "no packaged operating point: the queue flags by labels until `judge queue "
                 "threshold` sets one from your reviews")
        own = "".join(f" (claims read as {language}: head {h.about.get('name', '?')!r})"
                      for language, h in sorted((head.languages.heads if head.languages
                                                 else {}).items()))
        found.append(Finding("head", True, f"{where}probe head "
                             f"{head.about.get('name', named)!r}{own} matches the config; "
                             f"{queue}"))
    return found


def _served_model_readable() -> bool:
    """Whether ``$CLAIM_JUDGE_GGUF`` (when set) names a whole GGUF file: a head can only be
    compared with a model that can be read."""
    import os

    from judge.models.embedded import ENV_GGUF
    from judge.models.gguf_layers import GGUFError, check_gguf

    path = os.environ.get(ENV_GGUF)
    if not path:
        return True
    try:
        check_gguf(Path(path).expanduser())
    except (GGUFError, OSError):
        return False
    return True


def plan_findings(config: JudgeConfig, root: Path | None = None) -> list[Finding]:
    """Every check of what a run of ``config`` will do, problems and passes (no model call,
    no network)."""
    root = root or prompts_dir()
    return [*_prompt_findings(config, root), *_unread_settings(config),
            *_head_findings(config)]


def check_plan(config: JudgeConfig, root: Path | None = None) -> None:
    """Raise :class:`~judge.models.preflight.SetupError` (exit 64) when a run of ``config``
    would fail or pin a setting it does not read; quiet otherwise."""
    problems = [f for f in plan_findings(config, root) if not f.ok]
    if problems:
        raise SetupError(problems)
