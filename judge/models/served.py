"""A served model's vectors (``probe_endpoint``, strategy ``probe``): what an embedding request
to an OpenAI-compatible embeddings endpoint (llama.cpp's server, vLLM) asks, and what its answer
must be. A vector of another model, or normalised when the head reads unnormalised ones (or the
reverse), fails closed instead of reaching a head that would read it as something it is not.

- The model: the id the config pins must be one the server lists (``GET /v1/models``, through
  litellm), checked once per client before its first vector is asked for (a listing that
  fails is asked again with the next vector); and an answer that
  names another model is refused (vLLM names the model that answered; llama.cpp's server
  echoes the request, so there the listing is the check).
- The normalisation: unnormalised vectors are asked for (``"embd_normalize": -1``, which
  llama.cpp's server reads and other servers ignore); a vector whose norm is 1 (within
  :data:`UNIT_NORM_TOLERANCE`) then means the server normalised it anyway, and is refused.
  With ``normalized = true`` a vector whose norm is not 1 is refused.
- The dimension: the head refuses a vector of another length (:mod:`judge.decide.probe_head`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from judge.config.probe import ProbeEndpoint
from judge.masking import mask
from judge.models.lazy_litellm import quiet_litellm

#: How a refusal for an endpoint whose models could not be listed begins (asked again later)
UNLISTED = "could not list the models of the embeddings endpoint"
#: How far from 1 a vector's norm may be and still count as L2-normalised: float16 rounding of
#: a unit vector moves it by about 1e-4; the hidden states of the packaged model have norms of
#: about 100.
UNIT_NORM_TOLERANCE = 1e-2


def served_id(model: str) -> str:
    """The model id a server knows: the litellm model string without its provider (an id may
    hold slashes itself: ``openai/Qwen/Qwen2.5-7B-Instruct`` is ``Qwen/Qwen2.5-7B-Instruct``)."""
    return model.partition("/")[2]


def _is_pinned(endpoint: ProbeEndpoint, name: str) -> bool:
    return name in (served_id(endpoint.model), endpoint.model)


def request(endpoint: ProbeEndpoint) -> dict[str, Any]:
    """The keyword arguments of ``litellm.aembedding`` that reach the endpoint and ask for the
    vectors the config reads (operational ones: not part of a call's identity)."""
    out: dict[str, Any] = {"encoding_format": "float"}
    if endpoint.api_base:
        out["api_base"] = endpoint.api_base
    if not endpoint.normalized:
        out["extra_body"] = {"embd_normalize": -1}
    return out


def answer_problem(endpoint: ProbeEndpoint, answered_as: str | None,
                   vector: np.ndarray) -> str | None:
    """Why the endpoint's answer cannot be read as the config's vectors (None: it can)."""
    if answered_as and not _is_pinned(endpoint, answered_as):
        return (f"the embeddings endpoint answered as {answered_as!r}, not the pinned "
                f"{served_id(endpoint.model)!r} (probe_endpoint.model): its vectors are "
                "another model's")
    norm = float(np.linalg.norm(np.asarray(vector, dtype=np.float64)))
    unit = abs(norm - 1.0) <= UNIT_NORM_TOLERANCE
    if unit and not endpoint.normalized:
        return ("the embeddings endpoint returned an L2-normalised vector (norm 1) although "
                "unnormalised ones were asked for: start llama.cpp's server without "
                "--embd-normalize (or vLLM with a pooler that does not normalise), or set "
                "probe_endpoint.normalized = true and fit a head on those vectors")
    if endpoint.normalized and not unit:
        return (f"the embeddings endpoint returned a vector of norm {norm:.4g}, but "
                "probe_endpoint.normalized = true says its vectors are L2-normalised: set it "
                "to false (and fit a head on unnormalised vectors) or start the server with "
                "normalisation on")
    return None


async def listing_problem(endpoint: ProbeEndpoint, api_key: str | None = None) -> str | None:
    """Why the endpoint cannot be read as the pinned model (None: it lists the pinned id
    among the models it serves)."""
    litellm = quiet_litellm()

    pinned = served_id(endpoint.model)
    provider = endpoint.model.partition("/")[0]
    try:
        listed = await asyncio.to_thread(
            litellm.get_valid_models, check_provider_endpoint=True,
            custom_llm_provider=provider, api_base=endpoint.api_base, api_key=api_key)
    except Exception as exc:  # noqa: BLE001 - any failure to list is a refusal, recorded
        return mask(f"{UNLISTED}: {exc}")
    served = sorted({str(m) for m in listed or []})
    where = mask(endpoint.api_base or f"{provider}'s default endpoint")
    if not served:  # litellm answers [] when the endpoint cannot be reached
        return f"{UNLISTED} at {where} (is it running?)"
    if any(_is_pinned(endpoint, name) for name in served):
        return None
    return (f"the embeddings endpoint at {where} serves {served}, not {pinned!r} "
            "(probe_endpoint.model): pin the id the server reports (llama-server --alias, "
            "vllm serve --served-model-name)")
