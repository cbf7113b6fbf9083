"""How a probe reads the model's state: *readers* of per-token hidden states.

The probe's first reader was the hidden state of the prompt's last token. A reader may also
pool the states of the tokens of one part of the prompt: the claim's own tokens (which, the
model being causal, have read the evidence before them) or the evidence's. One forward pass
with per-token states gives every reader: the last row of the per-token states is the last
token's state, to the bit (``tests/models/test_token_states.py``).

A reader is named ``<part>_<pooling>`` (``claim_mean``, ``claim_max``, ``evidence_mean``) or
``last``; a probe reads one or several, concatenated in the order given (``"last+claim_mean"``).
Which tokens belong to a part is decided from the tokenizer's own pieces: a token belongs to a
part when its bytes overlap the part's bytes in the prompt (UTF-8), so a Chinese character
split over two tokens counts in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from judge.config.probe import LAST, READERS, ReaderError, parse_readers

__all__ = ["LAST", "READERS", "ReaderError", "Spans", "parse_readers", "pool", "prompt_spans",
           "token_offsets", "tokens_in"]

#: where a probe prompt's parts are (``probe_claim`` v1 and v2): the evidence block opens
#: with this line, and the claim follows this label
EVIDENCE_OPENS = "Evidence:\n"
CLAIM_OPENS = "Claim: "


def piece_bytes(piece: Any) -> bytes:
    """A tokenizer piece as llama.cpp's ``/tokenize`` gives it (``with_pieces``): a string,
    or the list of its bytes when they are not whole UTF-8 characters."""
    if isinstance(piece, str):
        return piece.encode("utf-8")
    if isinstance(piece, list) and all(isinstance(b, int) and 0 <= b < 256 for b in piece):
        return bytes(piece)
    raise ReaderError(f"unreadable tokenizer piece {piece!r}")


def token_offsets(pieces: Sequence[Any], text: str) -> np.ndarray:
    """The byte span ``[start, end)`` of each token in ``text`` (UTF-8); refuses pieces that
    do not spell the text exactly."""
    lengths = [len(piece_bytes(p)) for p in pieces]
    ends = np.cumsum(lengths, dtype=np.int64)
    starts = ends - np.asarray(lengths, dtype=np.int64)
    spelled = b"".join(piece_bytes(p) for p in pieces)
    if spelled != text.encode("utf-8"):
        raise ReaderError("the tokenizer's pieces do not spell the prompt")
    return np.stack([starts, ends], axis=1) if lengths else np.zeros((0, 2), dtype=np.int64)


@dataclass(frozen=True)
class Spans:
    """Byte spans ``[start, end)`` of the prompt's parts."""

    claim: tuple[int, int]
    evidence: tuple[int, int]

    def of(self, part: str) -> tuple[int, int]:
        return self.claim if part == "claim" else self.evidence


def prompt_spans(text: str, claim: str) -> Spans:
    """Where the claim and the evidence are in a probe prompt, as the model reads it (after
    :func:`judge.models.control_tokens.defuse`, which the caller applies to both).

    The claim is the last ``Claim: <claim>`` of the prompt (the claim slot comes after the
    evidence; only the template's fixed closing line follows it); the evidence runs from the
    first ``Evidence:`` line (the heading included, so that a claim with no located evidence
    still has an evidence part) to the blank line before that claim."""
    at = text.rfind(CLAIM_OPENS + claim)
    opens = text.find(EVIDENCE_OPENS)
    if at < 0 or not claim.strip():
        raise ReaderError("the claim is not where the probe prompt puts it")
    if opens < 0 or opens > at:
        raise ReaderError("the probe prompt has no evidence block before the claim")
    start = at + len(CLAIM_OPENS)

    def byte(i: int) -> int:
        return len(text[:i].encode("utf-8"))

    evidence_end = len(text[:at].rstrip())
    return Spans(claim=(byte(start), byte(start + len(claim))),
                 evidence=(byte(opens), byte(evidence_end)))


def tokens_in(offsets: np.ndarray, span: tuple[int, int]) -> np.ndarray:
    """Indices of the tokens whose bytes overlap ``span``."""
    start, end = span
    return np.flatnonzero((offsets[:, 0] < end) & (offsets[:, 1] > start))


def pool(states: np.ndarray, offsets: np.ndarray, spans: Spans,
         readers: Sequence[str]) -> np.ndarray:
    """The readers' vectors concatenated (float32): ``states`` is the per-token hidden state,
    one row a token, ``offsets`` the tokens' byte spans."""
    states = np.asarray(states, dtype=np.float32)
    if states.ndim != 2 or states.shape[0] != offsets.shape[0] or states.shape[0] == 0:
        raise ReaderError(f"{states.shape[0] if states.ndim else 0} hidden states for "
                          f"{offsets.shape[0]} tokens")
    out = []
    for reader in readers:
        if reader == LAST:
            out.append(states[-1])
            continue
        part, pooling = reader.split("_")
        rows = tokens_in(offsets, spans.of(part))
        if rows.size == 0:
            raise ReaderError(f"no token of the {part} in the prompt")
        chosen = states[rows].astype(np.float64)
        out.append(chosen.mean(axis=0) if pooling == "mean" else chosen.max(axis=0))
    return np.concatenate(out).astype(np.float32)
