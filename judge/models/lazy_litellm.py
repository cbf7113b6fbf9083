"""litellm, imported when a model is first needed (its import takes about 2.5 s, which
``judge --help`` and the commands that call no model never pay), and told not to print:
left to itself, litellm writes a red "Provider List" line to stdout whenever it is asked
about a model it cannot place, which this package does on purpose (to tell which providers
build their requests without I/O, which list log-probabilities) and answers itself."""

from __future__ import annotations

from types import ModuleType


def quiet_litellm() -> ModuleType:
    """The litellm module, with its debug prints to stdout turned off."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm
