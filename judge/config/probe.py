"""What strategy ``probe`` reads with: the head a config pins (its file and sha256), and the
served model's embeddings endpoint when the vectors do not come from the config's model."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

#: How many characters of located evidence a probe prompt shows by default: the budget the
#: heads before v6 were fitted on (``probe_excerpt_chars`` at this value is left out of the
#: judge version). Short, since one claim's forward pass costs about 20 ms per token on two
#: cores.
PROBE_EXCERPT_CHARS = 500


#: The readers of a probe (``probe_reader``; judge.models.readers pools them): ``last``, the
#: prompt's last token (every head before readers), or a part's tokens pooled.
LAST = "last"
PARTS = ("claim", "evidence")
POOLINGS = ("mean", "max")
READERS = (LAST, *(f"{part}_{pooling}" for part in PARTS for pooling in POOLINGS))


class ReaderError(ValueError):
    """A reader cannot be read from this prompt or these states (fails closed), or its name
    is not a reader's."""


def parse_readers(spec: str) -> tuple[str, ...]:
    """``"last+claim_mean"`` → ``("last", "claim_mean")``; refuses unknown or repeated names."""
    names = tuple(part.strip() for part in spec.split("+"))
    unknown = [n for n in names if n not in READERS]
    if unknown or not names:
        raise ReaderError(f"unknown probe reader(s) {unknown or [spec]}: a reader is one of "
                          f"{', '.join(READERS)}, several joined by '+'")
    if len(set(names)) != len(names):
        raise ReaderError(f"probe reader {spec!r} names a reader twice")
    return names


class ProbeHeadRef(BaseModel):
    """``probe_head = { file = "builtin:<name>" | "path/to/head.json", sha256 = "…" }``: the
    file's sha256 is part of the judge version, and a file that no longer has it is refused.
    A relative path is read from the working directory. ``judge fit`` writes head files and
    prints the reference to pin."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    sha256: str

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.lower()
        if not re.fullmatch(r"[0-9a-f]{64}", value):
            raise ValueError("sha256 must be 64 hexadecimal digits (sha256sum of the head file)")
        return value


class ProbeEndpoint(BaseModel):
    """``probe_endpoint = { model = "openai/<id>", api_base = "http://…/v1" }``: strategy
    ``probe`` reads its vectors from a served model's OpenAI-compatible embeddings endpoint
    (llama.cpp's server started with ``--embeddings --pooling last``, vLLM with a ``LAST``
    pooler) instead of from the config's ``model``, which still generates (the split).

    The model id (as the server reports it: ``/v1/models``), the pooling and the
    normalisation are part of the judge version and of every vector call's identity, and a
    head records them; ``api_base`` says where the server is, not what it computes, so it is
    not (like a head file's place)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the litellm model string: ``openai/<the model id the server reports>``
    model: str
    #: where the server is (operational: not part of the judge version); None: litellm's
    #: default for the provider (its environment variables)
    api_base: str | None = None
    #: the vector the server pools: the last token's hidden state
    pooling: Literal["last"] = "last"
    #: whether the server's vectors are L2-normalised; false (the default) asks for the
    #: unnormalised hidden state (``"embd_normalize": -1``, llama.cpp) and refuses a vector of
    #: norm 1
    normalized: bool = False

    @field_validator("model")
    @classmethod
    def _served(cls, value: str) -> str:
        provider, slash, name = value.partition("/")
        if not slash or not provider or not name.strip():
            raise ValueError(f"probe_endpoint.model {value!r} is not a litellm model string "
                             "like 'openai/<the model id the server reports>'")
        if provider == "embedded":
            raise ValueError("probe_endpoint names a served model; the embedded model's "
                             "vectors need no endpoint (leave probe_endpoint out)")
        return value

    def identity(self) -> dict[str, Any]:
        """What the vectors depend on (the judge version hashes it; a head records it)."""
        return {"model": self.model, "pooling": self.pooling, "normalized": self.normalized}
