"""Hidden-state vectors (strategy ``probe``): read from a provider's embedding answer, kept as
float16 with the call, and read back from a stored call. Impossible vectors fail closed;
degenerate ones (:func:`degenerate`) are refused where the probe decides.

A vector is always rounded to float16 before anything uses it, so a verdict decided from a
fresh call and one replayed from the store are decided from the same numbers.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

#: The largest magnitude float16 holds; a component beyond it cannot be stored faithfully.
F16_MAX = 65504.0


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def as_f16(values: Any) -> np.ndarray:
    """``values`` as a float16 vector; refuses an empty, non-finite or out-of-range one."""
    try:
        vector = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the hidden-state vector is not a list of numbers: {exc}") from None
    if vector.size == 0:
        raise ValueError("the provider returned an empty hidden-state vector")
    if not np.all(np.isfinite(vector)):
        raise ValueError("the hidden-state vector holds NaN or infinite values")
    if np.max(np.abs(vector)) > F16_MAX:
        raise ValueError("the hidden-state vector holds values beyond float16's range")
    return vector.astype(np.float16)


def degenerate(vector: Any) -> str | None:
    """Why ``vector`` cannot be a hidden state (None: it can): all zeros, or constant (every
    component equal). A provider that returns such a vector read nothing, and a head would
    decide it by its intercepts alone; the probe refuses it where it decides
    (:meth:`judge.decide.probe_head.ProbeHead.refusal`), fresh or replayed."""
    values = np.asarray(vector, dtype=np.float64).reshape(-1)
    if values.size == 0 or not np.all(values == values[0]):
        return None
    if values[0] == 0:
        return (f"the hidden-state vector is all zeros ({values.size} numbers): the provider "
                "read nothing (docs/probe.md)")
    if values.size < 2:
        return None
    return (f"the hidden-state vector is constant (all {values.size} numbers are "
            f"{values[0]:.6g}): not a hidden state (docs/probe.md)")


def response_vector(response: Any) -> np.ndarray:
    """The first vector of an embedding response (litellm ``EmbeddingResponse`` or a dict)."""
    data = _get(response, "data") or []
    if not data:
        raise ValueError("the provider returned no hidden-state vector")
    return as_f16(_get(data[0], "embedding"))


def raw_vector(response: Any) -> str | None:
    """The provider's first vector whole, for the call's raw output: float32 bytes
    (little-endian), base64, as JSON; None when there is none to keep."""
    data = _get(response, "data") or []
    try:
        values = np.asarray(_get(data[0], "embedding"), dtype="<f4").reshape(-1)
    except (IndexError, TypeError, ValueError):
        return None
    return json.dumps({"vector_f32": base64.b64encode(values.tobytes()).decode("ascii"),
                       "dim": int(values.size)})


def encode(vector: np.ndarray) -> dict[str, Any]:
    """What a call stores: the float16 bytes (little-endian), base64, and the dimension."""
    data = np.asarray(vector, dtype="<f2").tobytes()
    return {"vector_f16": base64.b64encode(data).decode("ascii"), "dim": int(vector.size)}


def decode(parsed: dict[str, Any]) -> np.ndarray:
    raw = base64.b64decode(parsed["vector_f16"], validate=True)
    vector = np.frombuffer(raw, dtype="<f2").astype(np.float16)
    if vector.size != int(parsed["dim"]):
        raise ValueError(f"stored vector has {vector.size} values, says {parsed['dim']}")
    return as_f16(vector)


def stored_vector(stored: dict[str, Any] | None) -> np.ndarray | None:
    """The vector of a stored successful call, or None (no call, an error, unreadable)."""
    if not stored or stored.get("error") is not None or not stored.get("parsed"):
        return None
    parsed = stored["parsed"]
    try:
        return decode(json.loads(parsed) if isinstance(parsed, str) else parsed)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
