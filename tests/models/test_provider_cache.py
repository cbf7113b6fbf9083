"""What an OpenAI-compatible provider reports of its prompt cache and its log-probabilities,
through the product's real litellm path (``openai/<model>`` with ``api_base``, a loopback
server): cached prompt tokens stored with each call, summed in the run summary, printed, and
priced lower in the cost (litellm's cache-read price); the labels' support read from the
tokens the server returns. A store from before the columns existed upgrades."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.api import judge_answers
from judge.cli.core import tokens_line
from judge.config import JudgeConfig
from judge.store import Store
from tests.fakes import CHOICE, Reply, claim_texts, rule_responder, with_label_logprobs
from tests.support.old_stores import store_upto
from tests.support.openai_server import OpenAIServer

#: a model litellm prices, with a cache-read price below its input price
MODEL = "openai/gpt-4.1-mini"
SRC = {"id": "S1", "text": "The river is long. The bridge is old."}
RECORDS = [{"id": f"a{k}", "generator": "anthropic/claude-haiku-4-5", "sources": [SRC],
            "answer": "The river is long. The park is green.",
            "claims": [{"text": "The river is long.", "citations": ["S1"]},
                       {"text": f"The park number {k} is green.", "citations": ["S1"]}]}
           for k in range(3)]


def serving(cached: int | None) -> Any:
    """The rule responder with log-probabilities on its verify answers (support 0.8 for a
    claim it finds, 0.1 for one it does not) and ``cached`` prompt tokens reported."""
    labelled = with_label_logprobs(
        rule_responder, lambda user, label, i: 0.8 if label == "supported" else 0.1)

    def respond(schema: str, messages: list[dict[str, Any]]) -> Any:
        out = labelled(schema, messages)
        if isinstance(out, Reply) and schema != CHOICE:
            out.cached_tokens = cached
        elif isinstance(out, str):
            out = Reply(out, cached_tokens=cached)
        return out

    return respond


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def judge(server: OpenAIServer, db: Path, cached: int | None) -> Any:
    server.responder = serving(cached)
    config = JudgeConfig(model=MODEL, api_base=server.base_url, retries=0, reasks=0,
                         timeout_s=30, label_logprobs="auto",
                         prompts={"split_claims": "v2", "verify_claims": "v3"})
    return judge_answers(RECORDS, config=config, db=db)


def test_cached_tokens_are_stored_summed_printed_and_priced_lower(
        server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    plain = judge(server, tmp_path / "plain.db", cached=None)
    hit = judge(server, tmp_path / "hit.db", cached=64)
    assert plain.summary.cached_tokens is None  # the server reported no cached token
    assert hit.summary.cached_tokens == 64 * 3  # one verify call an answer
    assert hit.summary.prompt_tokens == plain.summary.prompt_tokens
    import litellm

    price = litellm.model_cost["gpt-4.1-mini"]
    saved = 64 * 3 * (price["input_cost_per_token"] - price["cache_read_input_token_cost"])
    assert saved > 0
    assert plain.summary.cost - hit.summary.cost == pytest.approx(saved, rel=1e-6)
    assert "(192 cached by the provider)" in tokens_line(hit.summary)
    assert "cached" not in tokens_line(plain.summary)
    store = Store.open(tmp_path / "hit.db")
    try:
        rows = list(store.rows("select cached_tokens, cost from calls"))
        assert [r["cached_tokens"] for r in rows] == [64] * 3
    finally:
        store.close()


def test_label_supports_come_through_the_openai_path(
        server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    results = judge(server, tmp_path / "j.db", cached=None)
    (request, *_) = [r["body"] for r in server.requests if r["kind"] == "verify"]
    assert request["logprobs"] is True and request["top_logprobs"] >= 1
    for result in results:
        assert [(v.label, v.support) for v in result.verdicts] == [
            ("supported", pytest.approx(0.8, abs=1e-4)),
            ("not_in_source", pytest.approx(0.1, abs=1e-4))]
    assert claim_texts(request["messages"][-1]["content"])  # a verify prompt


def test_a_store_from_before_the_cache_columns_upgrades(tmp_path: Path) -> None:
    path = tmp_path / "m013.db"
    with store_upto(path, "m013_operating_point_score", "2026-12-01T00:00:00") as db:
        db["calls"].insert({"id": "call-old", "purpose": "verify", "prompt_tokens": 10})
    store = Store.open(path)
    try:
        assert "m017_call_cache_and_label_tokens" in [r["name"]
                                                       for r in store.db["_migrations"].rows]
        old = store.get_call("call-old")
        assert old is not None and old["cached_tokens"] is None and old["label_tokens"] is None
        store.save_call({"id": "call-new", "purpose": "verify", "cached_tokens": 5,
                         "label_tokens": [{"prefix": "", "top": [["supported", -0.1]]}]})
        new = store.get_call("call-new")
        assert new is not None and new["cached_tokens"] == 5
        assert '"supported"' in new["label_tokens"]
    finally:
        store.close()
