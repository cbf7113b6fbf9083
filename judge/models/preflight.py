"""Before the first call: is the judge model reachable as the config pins it? What ``judge
doctor`` and ``judge models`` print, and what ``judge run`` / ``judge eval-gold`` check before
they store anything.

Each :class:`Finding` says what was checked, what was found and, for a problem, the fix and
the exit code it deserves: 64 (``EX_USAGE``) for a cause in the config or the environment (no
key, an unknown model string, the embedded extra or model file missing, a store that cannot
be written), 1 for a provider that does not answer (nothing listening at ``api_base``). A
problem that will not go away by trying again is found here, once, instead of becoming a
``judge_error`` verdict per claim after retries.

Checking costs nothing: no model call (``judge doctor --online`` makes one 1-token request).
The endpoint is contacted only when the config names
one (``api_base``): a TCP connection, and for ``judge doctor`` a ``GET <api_base>/models``.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json  # noqa: E402
import socket  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

from judge.config import JudgeConfig  # noqa: E402
from judge.errors import JudgeError  # noqa: E402
from judge.masking import mask  # noqa: E402
from judge.models.lazy_litellm import quiet_litellm  # noqa: E402
from judge.models.providers import provider_for  # noqa: E402

#: exit code of a cause in the config or the environment (sysexits ``EX_USAGE``)
CONFIG_PROBLEM = 64
#: exit code of a provider that does not answer
UNREACHABLE = 1

#: litellm's default endpoint of the providers people name most (others: "the provider's
#: default")
DEFAULT_ENDPOINTS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "mistral": "https://api.mistral.ai/v1",
    "groq": "https://api.groq.com/openai/v1",
}


@dataclass(frozen=True)
class Finding:
    """One check: ``name`` (config, model, key, endpoint, embedded, store), whether it passed,
    what was found, and for a problem the fix and the exit code it deserves."""

    name: str
    ok: bool
    found: str
    fix: str = ""
    exit_code: int = 0

    def __post_init__(self) -> None:  # an endpoint's credentials are never shown
        object.__setattr__(self, "found", mask(self.found))
        object.__setattr__(self, "fix", mask(self.fix))

    def message(self) -> str:
        return f"{self.found}: {self.fix}" if self.fix else self.found


@dataclass(frozen=True)
class ModelRoute:
    """Where calls of ``model`` go: its provider, the environment variables its key is read
    from, and the endpoint (``api_base``, else the provider's default)."""

    model: str
    provider: str
    in_process: bool
    key_variables: tuple[str, ...] = ()
    missing_keys: tuple[str, ...] = ()
    endpoint: str | None = None
    endpoint_from: str = "the provider's default"
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """As shown: the endpoint's credentials masked (calls use :attr:`endpoint` whole)."""
        return {**asdict(self), "endpoint": self.shown_endpoint}

    @property
    def shown_endpoint(self) -> str | None:
        return mask(self.endpoint) if self.endpoint else self.endpoint


class SetupError(JudgeError, ValueError):
    """The judge cannot run as configured (a problem :func:`preflight` found); ``findings``
    holds the problems and ``exit_code`` the code the CLI exits with."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(f.message() for f in findings))
        self.findings = findings
        self.exit_code = max(f.exit_code for f in findings) if findings else CONFIG_PROBLEM


def _custom_providers() -> set[str]:
    litellm = quiet_litellm()

    return {entry.get("provider", "") for entry in litellm.custom_provider_map}


def route(config: JudgeConfig) -> ModelRoute:
    """Where the calls of ``config``'s model go (no network)."""
    litellm = quiet_litellm()

    model = config.model
    in_process = provider_for(model)
    if in_process is not None or model.partition("/")[0] in _custom_providers():
        return ModelRoute(model, model.partition("/")[0], True, endpoint="this process",
                          endpoint_from="in process")
    try:
        _, provider, _, default_base = litellm.get_llm_provider(model, api_base=config.api_base)
    except Exception as exc:  # litellm names no provider for this string
        first = str(exc).replace("litellm.BadRequestError: ", "").splitlines()[0]
        return ModelRoute(model, "", False, error=first)
    env = litellm.validate_environment(model, api_base=config.api_base)
    missing = tuple(env.get("missing_keys") or ())
    keys = missing or _known_keys(provider)
    endpoint: str | None
    if config.api_base:
        endpoint, source = config.api_base, "api_base in the config"
    elif _provider_setting(f"{provider.upper()}_API_BASE"):
        variable = f"{provider.upper()}_API_BASE"
        endpoint, source = _provider_setting(variable), f"${variable}"
    else:
        endpoint = default_base or DEFAULT_ENDPOINTS.get(provider)
        source = "the provider's default"
    return ModelRoute(model, provider, False, keys, missing, endpoint, source)


def _known_keys(provider: str) -> tuple[str, ...]:
    """The key variable of a provider whose key is present (litellm names only missing ones)."""
    guess = f"{provider.upper()}_API_KEY"
    return (guess,) if _provider_setting(guess) else ()


def _provider_setting(name: str) -> str | None:
    """A provider's variable as litellm reads it (its business, not the product's: the
    product's own variables are CLAIM_JUDGE_*)."""
    from litellm import get_secret_str

    value = get_secret_str(name)
    return value or None


def _config_file(config_path: Path | None) -> Finding:
    if config_path is None:
        return Finding("config", True, "no judge.toml here: the default config (the embedded "
                       "model); `judge init` writes one")
    return Finding("config", True, f"{config_path} is valid")


def _model_findings(config: JudgeConfig, where: ModelRoute) -> list[Finding]:
    if where.error:
        return [Finding("model", False, f"model {config.model!r} names no provider litellm "
                        f"knows ({where.error})", "write it as provider/model, e.g. "
                        '"openai/gpt-4.1-mini" (https://docs.litellm.ai/docs/providers)',
                        CONFIG_PROBLEM)]
    found = [Finding("model", True, f"model {config.model} (provider {where.provider or '-'})")]
    if where.in_process:
        from judge.models.embedded import model_unavailable

        why = model_unavailable(config.model) if config.model.startswith("embedded/") else None
        if why:
            found.append(Finding("embedded", False, why.split(": ", 1)[0],
                                 why.split(": ", 1)[1] if ": " in why else "", CONFIG_PROBLEM))
        elif config.model.startswith("embedded/"):
            found.append(Finding("embedded", True, "the embedded runtime and model file are "
                                 "installed"))
        return found
    if where.missing_keys:
        names = " or ".join(where.missing_keys)
        local = " (any value for a local server that ignores it)" if config.api_base else ""
        found.append(Finding("key", False, f"{names} is not set",
                             f"export {where.missing_keys[0]}=...{local}", CONFIG_PROBLEM))
    else:
        source = ", ".join(where.key_variables) or "the provider's environment"
        found.append(Finding("key", True, f"key from {source}"))
    return found


def _endpoint_finding(config: JudgeConfig, where: ModelRoute, ask: bool,
                      timeout: float) -> Finding | None:
    """Contact the endpoint when one is configured (``api_base``, ``$<PROVIDER>_API_BASE``);
    a provider's default endpoint is not contacted."""
    base = where.endpoint if where.endpoint_from != "the provider's default" else None
    if not base or where.in_process:
        if where.endpoint and not where.in_process:
            return Finding("endpoint", True, f"endpoint {where.endpoint} ({where.endpoint_from}; "
                           "not contacted: only an api_base is)")
        return None
    parts = urlsplit(base)
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host:
        return Finding("endpoint", False, f"api_base {base!r} is not an http(s) URL",
                       'write it as "http://HOST:PORT/v1" in judge.toml', CONFIG_PROBLEM)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return Finding("endpoint", False, f"nothing answers at {base} ({why})",
                       f"start the server there, or correct {where.endpoint_from}",
                       UNREACHABLE)
    if not ask:
        return Finding("endpoint", True, f"endpoint {base} accepts connections")
    return _ask_models(base, where, timeout)


def _ask_models(base: str, where: ModelRoute, timeout: float) -> Finding:
    url = base.rstrip("/") + "/models"
    key = next((v for k in where.key_variables if (v := _provider_setting(k))), "")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            body = json.loads(response.read(1_000_000) or b"{}")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return Finding("endpoint", False, f"{url} refused the key (HTTP {exc.code})",
                           f"check {' / '.join(where.key_variables) or 'the key'}",
                           CONFIG_PROBLEM)
        return Finding("endpoint", True,
                       f"endpoint {base} answers (GET /models: HTTP {exc.code})")
    except (OSError, ValueError) as exc:
        return Finding("endpoint", False, f"{url} does not answer ({exc})",
                       "start the server there, or correct api_base in the config", UNREACHABLE)
    names = [m.get("id") for m in body.get("data", []) if isinstance(m, dict)] \
        if isinstance(body, dict) else []
    served = f"; it serves {', '.join(map(str, names[:5]))}" if names else ""
    return Finding("endpoint", True, f"endpoint {base} answers{served}")


def _online_finding(config: JudgeConfig, timeout: float) -> Finding:
    """One cheap authenticated request (a 1-token completion through litellm, no retry): a
    refused key or an unknown model shows now, in words (:func:`provider_refusal`)."""
    if provider_for(config.model) is not None:
        return Finding("online", True, "the model runs in this process: no key to check")
    litellm = quiet_litellm()

    from judge.models.attempts import provider_refusal, setup_failure

    try:
        litellm.completion(model=config.model, api_base=config.api_base, max_tokens=1,
                           messages=[{"role": "user", "content": "Say OK."}],
                           timeout=timeout, num_retries=0)
    except Exception as exc:  # what the provider said, in words; never the key itself
        why = provider_refusal(exc, config.model)
        if why is not None:
            found, _, fix = why.partition(": ")
            return Finding("online", False, found, fix, CONFIG_PROBLEM)
        code = setup_failure(exc) or UNREACHABLE
        first = (str(exc).splitlines() or [""])[0][:300]
        return Finding("online", False, f"the request failed: {type(exc).__name__}: {first}",
                       "check the endpoint and the model string (`judge models`)", code)
    return Finding("online", True, f"the provider accepted the key ({config.model} answered "
                   "a 1-token request)")


def _store_finding(db: Path) -> Finding:
    if str(db) == ":memory:":
        return Finding("store", True, "in-memory store")
    folder = db.parent if str(db.parent) else Path(".")
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if db.exists() and not os.access(db, os.W_OK):
        return Finding("store", False, f"store {db} is not writable",
                       "give another --db, or fix its permissions", CONFIG_PROBLEM)
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        return Finding("store", False, f"cannot create store {db} (folder {existing} is not "
                       "writable)", "give another --db", CONFIG_PROBLEM)
    return Finding("store", True, f"store {db} {'exists' if db.exists() else 'can be created'}")


@dataclass
class Diagnosis:
    """Everything :func:`diagnose` checked: the route of the calls and the findings."""

    route: ModelRoute
    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok]

    @property
    def exit_code(self) -> int:
        return max((f.exit_code for f in self.problems), default=0)

    def as_dict(self) -> dict[str, Any]:
        return {"route": self.route.as_dict(), "ok": not self.problems,
                "findings": [asdict(f) for f in self.findings]}


def diagnose(config: JudgeConfig, *, config_path: Path | None = None, db: Path | None = None,
             ask_endpoint: bool = True, timeout: float = 3.0, online: bool = False
             ) -> Diagnosis:
    """Every check ``judge doctor`` makes, problems and passes (no model call unless
    ``online``: then one 1-token request, when nothing found so far stands in its way)."""
    where = route(config)
    findings = [_config_file(config_path), *_model_findings(config, where)]
    endpoint = _endpoint_finding(config, where, ask_endpoint, timeout)
    if endpoint is not None:
        findings.append(endpoint)
    if online and all(f.ok for f in findings):
        findings.append(_online_finding(config, max(timeout, 20.0)))
    if db is not None:
        findings.append(_store_finding(db))
    return Diagnosis(where, findings)


def preflight(config: JudgeConfig, db: Path | None = None, timeout: float = 3.0) -> None:
    """Raise :class:`SetupError` when the judge cannot run as configured; quiet otherwise.
    What ``judge run`` and ``judge eval-gold`` check before they store anything."""
    problems = diagnose(config, db=db, ask_endpoint=False, timeout=timeout).problems
    if problems:
        raise SetupError(problems)


def ensure_loadable(config: JudgeConfig, load_runtime: bool = True) -> None:
    """Refuse what cannot run, before anything is stored: raise
    :class:`~judge.models.embedded.ModelUnavailable` when the config's embedded model cannot
    run here. The file is found and verified (:func:`judge.models.embedded.model_file`: its
    bytes hash to the identity the judge version pins; a cut is verified too) and, with
    ``load_runtime``, the runtime the run calls is loaded (the cut one for
    ``probe_layers``); idempotent, cheap once loaded. A problem (the runtime or model
    packages missing, an unwritable or full cache folder, a missing, truncated or non-GGUF
    ``$CLAIM_JUDGE_GGUF``, a cached file whose bytes changed) names the cause and the fix,
    and the command line reports it as a usage error (exit 64) instead of a ``judge_error``
    per claim. Other providers are checked by :func:`check` and when called."""
    if not config.model.startswith("embedded/"):
        return
    from judge.models import embedded
    from judge.models.embedded import EmbeddedModelError, ModelUnavailable, model_unavailable

    why = model_unavailable(config.model)
    if why:
        raise ModelUnavailable(why)
    layers = config.probe_layers
    try:
        if load_runtime:
            embedded.load(layers=layers)
        elif layers is not None:
            embedded.layered_file(layers)
        else:
            embedded.model_file()
    except EmbeddedModelError as exc:
        raise ModelUnavailable(f"the judge model cannot be loaded, nothing was judged: {exc}"
                               ) from exc
