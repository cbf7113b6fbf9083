"""The real embedded model's per-token hidden states (``probe_reader``): the last row is the
last-token vector the probe has always read, to the bit; the claim's tokens, found from the
real tokenizer's pieces, cover exactly the claim (Chinese included); and the provider's pooled
vector is the pooling of those rows."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.conftest import skip_or_fail

pytestmark = [
    pytest.mark.embedded,
    skip_or_fail(importlib.util.find_spec("xllamacpp") is None,
                 "the 'embedded' extra is not installed", "CLAIM_JUDGE_REQUIRE_EMBEDDED"),
]

LAYERS = 21
PROMPT = ("Does the evidence state the claim?\n\nEvidence:\n- 金門大橋於1937年通車，"
          "全長2737公尺。\n- The bridge opened in 1937.\n\nClaim: {claim}\n\n"
          "Judged only by the evidence, the claim is")
CLAIMS = ["金門大橋於1937年通車。", "The bridge is 2,737 metres long."]


def _piece(p: object) -> bytes:
    return bytes(p) if isinstance(p, list) else str(p).encode("utf-8")


@pytest.mark.parametrize("claim", CLAIMS)
def test_the_claims_tokens_are_exactly_its_span_and_the_last_row_is_the_last_vector(
    claim: str,
) -> None:
    from judge.models import embedded
    from judge.models.readers import pool, prompt_spans, token_offsets, tokens_in

    text = PROMPT.format(claim=claim)
    embedded.load(layers=LAYERS, token_states=True)
    states, pieces, info = embedded.token_states(text, LAYERS)
    assert states.shape == (len(pieces), 1536) and info.gguf_id.endswith("-tokens")
    assert np.all(np.isfinite(states))
    offsets = token_offsets(pieces, text)
    rows = tokens_in(offsets, prompt_spans(text, claim).claim)
    covered = b"".join(_piece(pieces[i]) for i in rows)
    assert claim.encode() in covered
    for fewer in (rows[1:], rows[:-1]):  # not one token more than the claim needs
        assert claim.encode() not in b"".join(_piece(pieces[i]) for i in fewer)
    assert rows.max() < len(pieces) - 5  # the closing line is not the claim's

    embedded.load(layers=LAYERS)
    result, _ = embedded.embed(text, LAYERS)
    last = np.asarray(result["data"][0]["embedding"], dtype=np.float32)
    assert np.array_equal(states[-1], last)

    again, _, _ = embedded.token_states(text, LAYERS)
    assert np.array_equal(states, again)  # evaluated afresh: the same to the bit
    spans = prompt_spans(text, claim)
    pooled = pool(states, offsets, spans, ("last", "claim_mean"))
    assert np.array_equal(pooled[:1536], last)
    assert np.allclose(pooled[1536:], states[rows].mean(axis=0), atol=1e-5)


def test_the_provider_pools_the_claims_tokens() -> None:
    import litellm

    from judge.models import embedded, embedded_provider
    from judge.models.readers import pool, prompt_spans, token_offsets

    embedded_provider.register()
    claim = CLAIMS[0]
    text = PROMPT.format(claim=claim)
    response = litellm.embedding(model=embedded.EMBEDDED_MODEL, input=[text], layers=LAYERS,
                                 reader="claim_mean+evidence_max", reader_claim=claim)
    vector = np.asarray(response.data[0]["embedding"], dtype=np.float32)
    states, pieces, _ = embedded.token_states(text, LAYERS)
    expected = pool(states, token_offsets(pieces, text), prompt_spans(text, claim),
                    ("claim_mean", "evidence_max"))
    assert vector.shape == (3072,) and np.array_equal(vector, expected)
    with pytest.raises(Exception, match="cannot read"):
        litellm.embedding(model=embedded.EMBEDDED_MODEL, input=[text], layers=LAYERS,
                          reader="claim_mean", reader_claim="a claim not in the prompt")


def test_a_prompt_longer_than_one_default_batch_is_read_whole() -> None:
    """llama.cpp evaluates 512 tokens at a time by default and refuses per-token states of a
    longer prompt; the probe's evidence (1,500 characters, ~1,000 tokens of Chinese) may be
    longer: it is read whole, and its last row is still the last-token vector."""
    from judge.models import embedded
    from judge.models.readers import prompt_spans, token_offsets, tokens_in

    evidence = "\n".join(f"- 第{k}座橋於19{k:02d}年通車，全長{2000 + k}公尺，橫跨海灣連接兩岸城市。"
                         for k in range(40))
    claim = CLAIMS[0]
    text = PROMPT.replace("- 金門大橋於1937年通車，全長2737公尺。\n- The bridge opened in 1937.",
                          evidence).format(claim=claim)
    embedded.load(layers=LAYERS, token_states=True)
    states, pieces, _ = embedded.token_states(text, LAYERS)
    assert len(pieces) > 600 and states.shape == (len(pieces), 1536)
    assert np.all(np.isfinite(states))
    rows = tokens_in(token_offsets(pieces, text), prompt_spans(text, claim).claim)
    assert len(rows) > 0 and rows.min() > 500  # the claim after the long evidence
    embedded.load(layers=LAYERS)
    result, _ = embedded.embed(text, LAYERS)
    assert np.array_equal(states[-1], np.asarray(result["data"][0]["embedding"],
                                                 dtype=np.float32))

