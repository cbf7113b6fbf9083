"""In-process model providers: the models litellm reaches through a provider this package
registers itself (``litellm.custom_provider_map``) rather than over HTTP.

One entry per provider: the model-name prefix that selects it, the module whose
``register()`` makes it known to litellm (imported only when a model needs it), and what the
runtime can do. :func:`provider_for` answers "is this model in-process, and which one";
:func:`ensure_registered` registers it before the first call.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class InProcessProvider:
    #: litellm's provider name: models are spelled ``<name>/<model>``
    name: str
    #: the module with a ``register()`` that adds the provider to litellm
    module: str
    #: the runtime reuses the KV cache of a prompt prefix shared by several calls
    #: (:mod:`judge.models.shared_prefix`), so whether it did is part of a call's identity
    shared_prefix: bool = False
    #: the runtime computes on this machine's CPU cores, as many threads as
    #: :data:`THREADS_ENV` says (a Ray worker is given its share of the cores)
    computes_here: bool = False


#: the environment variable that sets how many CPU threads an in-process runtime computes with
THREADS_ENV = "CLAIM_JUDGE_THREADS"

#: every in-process provider, by name
PROVIDERS: dict[str, InProcessProvider] = {
    "embedded": InProcessProvider("embedded", "judge.models.embedded_provider",
                                  shared_prefix=True, computes_here=True),
}


def provider_for(model: str) -> InProcessProvider | None:
    """The in-process provider that serves ``model``, None for a model served over HTTP."""
    name, slash, _ = model.partition("/")
    return PROVIDERS.get(name) if slash else None


def ensure_registered(model: str) -> None:
    """Register the in-process provider ``model`` needs with litellm (once; idempotent)."""
    provider = provider_for(model)
    if provider is not None:
        importlib.import_module(provider.module).register()
