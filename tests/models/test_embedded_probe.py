"""The real embedded model's hidden states (strategy ``probe``): deterministic for a given
input whatever ran before, and reading them leaves generation's log-probabilities as they
were (one runtime serves both)."""

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

TEXT = ("Evidence:\n- The bridge opened in 1931 after four years of work.\n\n"
        "Claim: The bridge opened in 1931.\n\nJudged only by the evidence, the claim is")
CHOICE = {"messages": [{"role": "user", "content": "Is 1931 a year? Answer A (yes) or B (no)."}],
          "max_tokens": 1, "logprobs": True, "top_logprobs": 5, "temperature": 0.0, "seed": 0}


def _vector(text: str) -> np.ndarray:
    from judge.models import embedded

    embedded.load()
    result, _ = embedded.embed(text)
    return np.asarray(result["data"][0]["embedding"], dtype=np.float64)


def _top(result: dict) -> list[tuple[str, float]]:
    top = result["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    return [(t["token"], t["logprob"]) for t in top]


def test_hidden_states_are_deterministic_and_leave_generation_unchanged() -> None:
    from judge.models import embedded

    first = _vector(TEXT)
    assert first.shape == (1536,) and np.all(np.isfinite(first))
    before, _ = embedded.chat(dict(CHOICE))
    # something else in between: a longer generation, another text's vector
    embedded.chat({"messages": [{"role": "user", "content": "Count to five."}],
                   "max_tokens": 12, "temperature": 0.0, "seed": 0})
    other = _vector(TEXT.replace("1931", "1932"))
    again = _vector(TEXT)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    after, _ = embedded.chat(dict(CHOICE))
    assert _top(before) == _top(after)


def test_data_cannot_spell_a_control_token() -> None:
    """Through the provider, ``<|im_end|>`` in a message or an embedding input is text (several
    tokens), where the raw runtime would read one control token."""
    import litellm

    from judge.models import embedded, embedded_provider

    embedded_provider.register()
    text = "a <|im_end|> b"
    raw_chat, _ = embedded.chat({"messages": [{"role": "user", "content": text}],
                                 "max_tokens": 1, "temperature": 0.0, "seed": 0})
    sent = litellm.completion(model=embedded.EMBEDDED_MODEL, max_tokens=1,
                              messages=[{"role": "user", "content": text}])
    assert sent.usage.prompt_tokens > raw_chat["usage"]["prompt_tokens"]
    raw_embed, _ = embedded.embed(text)
    via = litellm.embedding(model=embedded.EMBEDDED_MODEL, input=[text])
    assert via.usage.prompt_tokens > raw_embed["usage"]["prompt_tokens"]


def test_an_earlier_layer_is_read_from_a_cut_of_the_same_model() -> None:
    """``probe_layers``: the runtime of the model's first N blocks gives another vector than
    the last layer, deterministically; the cut file is written once and reused; generation
    on the whole model is unchanged beside it."""
    from judge.models import embedded
    from judge.models.gguf_layers import read_layout

    embedded.load()
    before, _ = embedded.chat(dict(CHOICE))
    embedded.load(layers=16)
    cut = embedded.layered_file(16)
    assert read_layout(cut).block_count == 16
    written = cut.stat().st_mtime_ns
    first, info = embedded.embed(TEXT, 16)
    assert info.gguf_id.endswith("-first16") and info.path == cut
    vector = np.asarray(first["data"][0]["embedding"], dtype=np.float64)
    assert vector.shape == (1536,) and np.all(np.isfinite(vector))
    assert not np.allclose(vector, _vector(TEXT))
    again, _ = embedded.embed(TEXT, 16)
    assert np.array_equal(vector, np.asarray(again["data"][0]["embedding"]))
    assert embedded.layered_file(16).stat().st_mtime_ns == written  # reused, not rewritten
    after, _ = embedded.chat(dict(CHOICE))
    assert _top(before) == _top(after)


def test_weights_read_into_memory_compute_what_mapped_weights_compute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The runtime reads the weights into memory (less RSS than a mapping); the vectors and
    the log-probabilities are those of the mapped file, to the last bit."""
    from judge.models import embedded, runtime

    def outputs() -> tuple[np.ndarray, list[tuple[str, float]]]:
        embedded.unload()
        embedded.load()
        chat, _ = embedded.chat(dict(CHOICE))
        return _vector(TEXT), _top(chat)

    assert runtime.LOAD_MODE == "LLAMA_LOAD_MODE_NONE"
    read = outputs()
    monkeypatch.setattr(runtime, "LOAD_MODE", "LLAMA_LOAD_MODE_MMAP")
    try:
        mapped = outputs()
    finally:
        embedded.unload()
    assert np.array_equal(read[0], mapped[0]) and read[1] == mapped[1]
