"""Prompt templates: loading, sandboxed rendering and hashing.

Templates live in ``prompts/<name>/v<N>.j2``; each defines a ``system`` block (the
instructions; it never sees untrusted text) and a ``user`` block (the data). Untrusted
text (answers, sources, questions) is passed to Jinja as variables, so template syntax
inside it is never evaluated, and it is framed by a boundary token derived from the
data itself, so the data cannot forge the end of its own frame.

``prompts/manifest.json`` records the sha256 of every version that was ever used. A used
version is never edited: ``judge prompts check`` and the test suite refuse a mismatch.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, Template
from jinja2.sandbox import ImmutableSandboxedEnvironment

from judge.errors import JudgeError
from judge.hashing import content_hash


def prompts_dir() -> Path:
    """``$CLAIM_JUDGE_PROMPTS`` or the ``prompts/`` folder shipped beside the package."""
    env = os.environ.get("CLAIM_JUDGE_PROMPTS")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parent.parent
    # an installed wheel carries them as judge/_prompts; a checkout has them at the top level
    for candidate in (package / "_prompts", package.parent / "prompts"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("prompts/ folder not found; set CLAIM_JUDGE_PROMPTS")


@dataclass(frozen=True)
class RenderedPrompt:
    """The exact messages sent, with the template identity they came from."""

    name: str
    version: str
    sha256: str
    messages: list[dict[str, str]] = field(hash=False)

    def as_text(self) -> str:
        """The messages as one plain text (system, a blank line, user): what an embedding call
        reads, with no chat template around it."""
        return "\n\n".join(m["content"] for m in self.messages if m["content"])


class PromptError(JudgeError, ValueError):
    pass


def _environment(root: Path) -> ImmutableSandboxedEnvironment:
    from jinja2 import FileSystemLoader

    env = ImmutableSandboxedEnvironment(
        loader=FileSystemLoader(str(root)),
        auto_reload=False,
        undefined=StrictUndefined,
        autoescape=False,  # prompts are not HTML; data is framed, not escaped
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tojson_data"] = lambda v: json.dumps(v, ensure_ascii=False)
    return env


@lru_cache(maxsize=8)
def _cached_env(root: str) -> ImmutableSandboxedEnvironment:
    return _environment(Path(root))


def template_path(name: str, version: str, root: Path | None = None) -> Path:
    return (root or prompts_dir()) / name / f"{version}.j2"


def template_hash(name: str, version: str, root: Path | None = None) -> str:
    return _loaded(root, name, version)[1]


@lru_cache(maxsize=256)
def _template_file(root: Path, name: str, version: str) -> str:
    return str(template_path(name, version, root))


def _loaded(root: Path | None, name: str, version: str) -> tuple[Template, str]:
    """A template version compiled and hashed once (again only when its file changes), from
    the same bytes: the hash recorded with a call is always the hash of what was rendered.
    The file is looked at on every render (its path is built once per folder)."""
    path = str(template_path(name, version)) if root is None else _template_file(
        root, name, version)
    try:
        stat = os.stat(path)
    except FileNotFoundError as exc:
        raise PromptError(f"prompt template {name}/{version} not found at {path}") from exc
    return _compiled(path, stat.st_mtime_ns, stat.st_size, name, version)


@lru_cache(maxsize=256)
def _compiled(
    path: str, mtime_ns: int, size: int, name: str, version: str
) -> tuple[Template, str]:
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise PromptError(f"prompt template {name}/{version} not found at {path}") from exc
    template = _cached_env(str(Path(path).parent.parent)).from_string(raw.decode("utf-8"))
    missing = {"system", "user"} - set(template.blocks)
    if missing:
        raise PromptError(f"template {name}/{version} lacks block(s): {', '.join(sorted(missing))}")
    return template, hashlib.sha256(raw).hexdigest()


#: How every frame token begins; templates open a frame with ``<<`` and the token.
BOUNDARY_PREFIX = "DATA-"


def boundary_for(data: Any) -> str:
    """A frame token that depends on the framed data: text cannot contain the hash of itself."""
    return BOUNDARY_PREFIX + content_hash(data)[:16]


def render(
    name: str, version: str, root: Path | None = None, frame: Any = None, **data: Any
) -> RenderedPrompt:
    """Render the ``system`` and ``user`` blocks of a template version into chat messages.

    The frame token is derived from ``data``, or from ``frame`` when given: data shared by
    several prompts (e.g. every claim of an answer with their excerpts), which must hold all
    the framed text of this prompt, so that the prompts get the same token."""
    template, sha256 = _loaded(root, name, version)
    variables = dict(data, boundary=boundary_for(data if frame is None else frame))
    ctx = template.new_context(variables)
    system = "".join(template.blocks["system"](ctx)).strip()
    ctx = template.new_context(variables)
    user = "".join(template.blocks["user"](ctx)).strip()
    return RenderedPrompt(
        name=name,
        version=version,
        sha256=sha256,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
    )


def load_manifest(root: Path | None = None, section: str = "templates"
                  ) -> dict[str, dict[str, str]]:
    """The manifest's ``templates`` (the versions shipped), or its ``retired`` versions
    (removed from ``prompts/``; their name and version are never used again)."""
    path = (root or prompts_dir()) / "manifest.json"
    entries: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8")).get(
        section, {})
    return entries


def verify_manifest(root: Path | None = None) -> list[str]:
    """Problems found: a template file whose hash differs from the manifest (edited in
    place), a manifest entry without a file, a template file missing from the manifest, or a
    file for a retired version (a new template takes a new name or version)."""
    root = root or prompts_dir()
    manifest = load_manifest(root)
    problems: list[str] = []
    for name, versions in load_manifest(root, "retired").items():
        for version in versions:
            if template_path(name, version, root).exists():
                problems.append(f"{name}/{version}: retired in manifest.json, but the file is "
                                "back; a new template takes a new version")
    for name, versions in manifest.items():
        for version, expected in versions.items():
            path = template_path(name, version, root)
            if not path.exists():
                problems.append(f"{name}/{version}: listed in manifest but missing")
            elif hashlib.sha256(path.read_bytes()).hexdigest() != expected:
                problems.append(
                    f"{name}/{version}: content differs from the manifest; a used prompt version "
                    f"is never edited — add {name}/v<N+1>.j2 instead"
                )
    for path in sorted(root.glob("*/v*.j2")):
        if path.stem not in manifest.get(path.parent.name, {}):
            problems.append(f"{path.parent.name}/{path.stem}: not in manifest.json")
    return problems


def lock_new_versions(root: Path | None = None) -> list[str]:
    """Add template files not yet in the manifest; never changes an existing entry."""
    root = root or prompts_dir()
    path = root / "manifest.json"
    manifest = load_manifest(root) if path.exists() else {}
    retired = load_manifest(root, "retired") if path.exists() else {}
    added: list[str] = []
    for file in sorted(root.glob("*/v*.j2")):
        versions = manifest.setdefault(file.parent.name, {})
        if file.stem not in versions:
            versions[file.stem] = hashlib.sha256(file.read_bytes()).hexdigest()
            added.append(f"{file.parent.name}/{file.stem}")
    body: dict[str, Any] = {
        "about": "sha256 of every prompt version ever used; a listed version is never edited; "
                 "retired versions were removed unused and their names are not reused",
        "templates": {k: dict(sorted(v.items())) for k, v in sorted(manifest.items())},
    }
    if retired:
        body["retired"] = {k: dict(sorted(v.items())) for k, v in sorted(retired.items())}
    path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return added
