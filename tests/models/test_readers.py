"""Readers of per-token hidden states (judge.models.readers): which tokens are the claim's and
the evidence's, decided from the tokenizer's own pieces (bytes, so a Chinese character split
over two tokens counts), and how they are pooled."""

from __future__ import annotations

import numpy as np
import pytest

from judge.models.readers import (
    READERS,
    ReaderError,
    parse_readers,
    pool,
    prompt_spans,
    token_offsets,
    tokens_in,
)

EVIDENCE = "- The bridge opened in 1931."
PROMPT = ("Does the evidence state the claim?\n\nSaid just before: when?\n\nEvidence:\n"
          f"{EVIDENCE}\n\nClaim: {{claim}}\n\nJudged only by the evidence, the claim is")


def prompt(claim: str) -> str:
    return PROMPT.replace("{claim}", claim)


def split_bytes(text: str, size: int) -> list[object]:
    """Pieces as llama.cpp gives them: strings, or byte lists where a piece cuts a
    character."""
    raw = text.encode("utf-8")
    pieces: list[object] = []
    for i in range(0, len(raw), size):
        chunk = raw[i:i + size]
        try:
            pieces.append(chunk.decode("utf-8"))
        except UnicodeDecodeError:
            pieces.append(list(chunk))
    return pieces


def test_reader_names_are_checked_and_kept_in_order() -> None:
    assert parse_readers("last+claim_mean") == ("last", "claim_mean")
    assert parse_readers(" claim_max + last ") == ("claim_max", "last")
    assert set(READERS) == {"last", "claim_mean", "claim_max", "evidence_mean",
                            "evidence_max"}
    for bad in ("", "claim", "last+last", "claim_median", "last+"):
        with pytest.raises(ReaderError):
            parse_readers(bad)


@pytest.mark.parametrize("claim", [
    "The bridge opened in 1931.",
    "大橋於1931年通車。",           # Traditional Chinese: pieces cut characters in two
    "is",                         # a word of the closing line: still the claim's slot
    "Claim: the bridge opened",   # the label inside the claim
])
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_the_claims_tokens_cover_exactly_the_claim(claim: str, size: int) -> None:
    text = prompt(claim)
    pieces = split_bytes(text, size)
    offsets = token_offsets(pieces, text)
    spans = prompt_spans(text, claim)
    rows = tokens_in(offsets, spans.claim)
    covered = b"".join(bytes(p) if isinstance(p, list) else p.encode() for p in
                       (pieces[i] for i in rows))
    assert claim.encode() in covered
    # no token more than needed: without the first or the last one the claim is not covered
    for fewer in (rows[1:], rows[:-1]):
        inner = b"".join(bytes(p) if isinstance(p, list) else p.encode()
                         for p in (pieces[i] for i in fewer))
        assert claim.encode() not in inner
    ev_rows = tokens_in(offsets, spans.evidence)
    evidence = b"".join(bytes(p) if isinstance(p, list) else p.encode()
                        for p in (pieces[i] for i in ev_rows))
    assert EVIDENCE.encode() in evidence and ev_rows.max() < rows.min()


def test_pieces_must_spell_the_prompt() -> None:
    with pytest.raises(ReaderError, match="spell"):
        token_offsets(["Evid", "ence"], "Evidence!")
    with pytest.raises(ReaderError, match="unreadable"):
        token_offsets([[300]], "x")


def test_a_prompt_without_its_parts_is_refused() -> None:
    with pytest.raises(ReaderError, match="claim"):
        prompt_spans(prompt("one claim"), "another claim")
    with pytest.raises(ReaderError, match="evidence"):
        prompt_spans("Claim: x\n\nJudged only by the evidence, the claim is", "x")


def test_pooling_reads_the_rows_of_each_part() -> None:
    claim = "大橋於1931年通車。"
    text = prompt(claim)
    pieces = split_bytes(text, 3)
    offsets = token_offsets(pieces, text)
    spans = prompt_spans(text, claim)
    rng = np.random.default_rng(7)
    states = rng.normal(size=(len(pieces), 4)).astype(np.float32)
    out = pool(states, offsets, spans, ("last", "claim_mean", "claim_max", "evidence_mean"))
    rows = tokens_in(offsets, spans.claim)
    ev = tokens_in(offsets, spans.evidence)
    assert out.shape == (16,)
    assert np.array_equal(out[:4], states[-1])
    assert np.allclose(out[4:8], states[rows].mean(axis=0), atol=1e-6)
    assert np.array_equal(out[8:12], states[rows].max(axis=0))
    assert np.allclose(out[12:], states[ev].mean(axis=0), atol=1e-6)
    with pytest.raises(ReaderError, match="hidden states"):
        pool(states[:-1], offsets, spans, ("last",))
