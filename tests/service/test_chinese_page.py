"""The review page and the reports with Chinese text (Traditional, Simplified, mixed with
English): every character arrives intact, markup and template syntax inside a claim stay
escaped text, and Chinese elements carry their script's ``lang``. Fast: the scripted fake
provider, no browser."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.review.queue import QueueOptions, build_queue
from judge.service.pages import lang_attr
from judge.service.views import segments
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM
from tests.service.test_service import login, make_client

# seed 000, "結果二" (row 23) with markup and template syntax added to it; in Simplified too
HANT = "資料無法說明「靜止心率偏高」的原因 <b>{{ 7*7 }}</b> {% raw %} &amp; 𠀀。"
HANS = "资料无法说明「静止心率偏高」的原因 <script>alert(1)</script>。"
SOURCE = ("資料無法說明「靜止心率偏高」的原因 <b>{{ 7*7 }}</b> {% raw %} &amp; 𠀀。"
          "资料无法说明「静止心率偏高」的原因 <script>alert(1)</script>。")


@pytest.fixture
def client(tmp_path: Path, fake_llm: FakeLLM) -> Iterator[TestClient]:
    records = [{"id": "zh-hant", "question": "為什麼心率偏高？", "answer": HANT + " [S1]",
                "sources": [{"id": "S1", "title": "《Day 24 的說明》", "text": SOURCE}]},
               {"id": "zh-hans", "answer": HANS + " [S1]",
                "sources": [{"id": "S1", "title": "Day 24 笔记", "text": SOURCE}]}]
    store = Store.open(tmp_path / "zh.db")
    judge_file(write_jsonl(tmp_path / "zh.jsonl", records), db=store,
               config=JudgeConfig(model="fake/judge-model", retries=1))
    build_queue(store, options=QueueOptions(seed=1, sample_rate=1.0, min_sample=10,
                                            double_fraction=0.0))
    store.close()
    with make_client(tmp_path / "zh.db") as c:
        yield c


def _pages(client: TestClient) -> list[str]:
    login(client)
    first = client.get("/review", params={"pos": 1}).text
    total = int(re.search(r"Review \d+/(\d+)", first).group(1))  # type: ignore[union-attr]
    return [first] + [client.get("/review", params={"pos": p}).text
                      for p in range(2, total + 1)]


def _claim(page: str) -> tuple[str, str]:
    m = re.search(r'<p class="claim-text text" id="claim-text"( lang="[^"]+")?>(.*?)</p>',
                  page, re.S)
    assert m is not None
    return m.group(1) or "", m.group(2)


def test_chinese_claims_render_escaped_intact_and_tagged(client: TestClient) -> None:
    pages = _pages(client)
    claims = {html.unescape(_claim(p)[1]): _claim(p)[0] for p in pages}
    assert claims == {HANT: ' lang="zh-Hant"', HANS: ' lang="zh-Hans"'}
    for page in pages:
        assert "<script>alert" not in page and "<b>{{" not in page
        assert "&lt;b&gt;{{ 7*7 }}&lt;/b&gt; {% raw %} &amp;amp; 𠀀" in page  # kept as text
        assert '<meta charset="utf-8">' in page
        source = re.search(r'<div class="text source-text"( lang="[^"]+")?>', page)
        assert source is not None and source.group(1) == ' lang="zh"'  # both scripts
    hant = next(p for p in pages if _claim(p)[0] == ' lang="zh-Hant"')
    assert '<p class="text" lang="zh-Hant">為什麼心率偏高？</p>' in hant
    assert '<span class="stitle" lang="zh-Hant">《Day 24 的說明》</span>' in hant
    # the claim's sentence marked in the answer, 「」 and the astral character whole
    marked = re.search(r'<p class="text answer" id="answer-text" lang="zh-Hant">'
                       r'<mark class="hl-claim">(.*?)</mark>', hant, re.S)
    assert marked is not None and html.unescape(marked.group(1)) == HANT.rstrip("。")


def test_lang_attribute_and_segments() -> None:
    assert str(lang_attr("說明")) == ' lang="zh-Hant"'
    assert str(lang_attr("说明")) == ' lang="zh-Hans"'
    assert str(lang_attr("plain English")) == "" and str(lang_attr(None)) == ""
    text = "「引用。」𠀀後"
    spans = [{"start": 0, "end": 5, "kind": "quote"}]
    assert [s.text for s in segments(text, spans)] == ["「引用。」", "𠀀後"]
