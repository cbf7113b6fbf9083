"""Refuse what cannot run, before anything is stored: the embedded model's file is found,
verified (:func:`judge.models.embedded.model_file`: its bytes hash to the identity the judge
version pins; a cut is verified too) and loaded before a run stores its first answer. A
problem (the runtime or model packages missing, an unwritable or full cache folder, a missing,
truncated or non-GGUF ``$CLAIM_JUDGE_GGUF``, a cached file whose bytes changed) is a
:class:`ModelUnavailable` naming the cause and the fix, which the command line reports as a
usage error (exit 64), instead of a ``judge_error`` per claim. Other providers are checked
when called (their faults are transient and recorded per claim)."""

from __future__ import annotations

from judge.config import JudgeConfig
from judge.models import embedded
from judge.models.embedded import EmbeddedModelError, ModelUnavailable, model_unavailable


def ensure_loadable(config: JudgeConfig, load_runtime: bool = True) -> None:
    """Raise :class:`ModelUnavailable` when the config's model cannot run here. For the
    embedded model the file is verified and, with ``load_runtime``, the runtime the run
    calls is loaded (the cut one for ``probe_layers``); idempotent, cheap once loaded."""
    if not config.model.startswith("embedded/"):
        return
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
