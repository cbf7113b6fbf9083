"""A language is a domain when a team says so: Chinese claims tagged ``zh`` get a domain head
from ``judge fit --domain zh`` that keeps the default head's language offset, the English
claims keep the default head, and the queue's operating point of domain ``zh`` is set on the
domain's own gold (0 model calls after judging)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from judge.api import eval_gold, fit
from judge.config import JudgeConfig
from judge.config.review import ReviewSettings
from judge.decide.probe_head import LanguageShift, ProbeHead, load_head
from judge.language import LANGUAGE_RULE
from judge.records import AnswerRecord
from judge.review.triage import active_point
from judge.store import Store
from tests.fit.synthetic import gold_items, write_gold
from tests.fit.test_probe_fit import (
    DIM,
    head_file,
    install_vectors,
    probe_toml,
    says_supported,
    signal_vectors,
)


def chinese(items: list[dict[str, object]]) -> list[dict[str, object]]:
    for k, item in enumerate(items):
        item["claim"] = f"第 {k} 號橋於 {1900 + k} 年啟用。"
        item["sources"] = [{"id": "S1", "text": f"紀錄：第 {k} 號橋於 {1900 + k} 年啟用，"
                                                f"歷時 {k % 7 + 2} 年。"}]
    return items


def test_a_team_fits_its_chinese_claims_as_domain_zh(tmp_path: Path) -> None:
    english = gold_items(40, "synthetic")
    team = chinese(gold_items(100, "zh", start=100))
    pull = np.zeros(DIM)
    pull[4:] = 3.0  # what reading Chinese adds to every vector
    clean = {**signal_vectors(english), **signal_vectors(team, seed=3, flip_every=0)}
    install_vectors({c: list(np.asarray(v) + (pull if "號橋" in c else 0.0))
                     for c, v in clean.items()})
    current = says_supported()
    shifted = ProbeHead(current.labels, current.mean, current.scale, current.coef,
                        current.intercept, current.about,
                        LanguageShift(LANGUAGE_RULE, {"zh": pull}, {"from": "test"}))
    config = probe_toml(tmp_path, head_file(tmp_path, shifted, "current-head.json"))
    db = tmp_path / "judge.db"
    gold = write_gold(tmp_path / "gold.jsonl", english + team)
    before = eval_gold(gold, config=config, db=db)

    out = tmp_path / "team.toml"
    result = fit(gold, db=db, output=out, domain="zh")
    data = result.to_dict()
    assert data["model_calls"] == 0 and data["domain"] == "zh"
    assert data["fit"]["shrunk_toward_current"] is True
    assert sum(data["fit"]["labels"].values()) + data["holdout"]["n"] == 100  # only zh
    written = JudgeConfig.load(out)
    assert set(written.domain_rules) == {"zh"}
    assert written.probe_head == JudgeConfig.load(config).probe_head  # English: unchanged
    ref = written.domain_rules["zh"].probe_head
    assert ref is not None
    head = load_head(ref.file, ref.sha256)
    assert head.shift is not None and np.array_equal(head.shift.offsets["zh"], pull)

    after = eval_gold(gold, config=out, db=db)
    assert after.summary.model_calls == 0
    store = Store.open(db)
    try:
        rows = list(store.verdict_rows(judge_version=after.summary.judge_version))
        rules = {r["claim"]: r["rule"] for r in rows}
        assert {rules[i["claim"]] for i in team} == {"zh"}
        assert {rules[i["claim"]] for i in english} == {"default"}
        old = {r["claim"]: r["label"] for r in store.verdict_rows(
            judge_version=before.summary.judge_version)}
        new = {r["claim"]: r["label"] for r in rows}
        assert all(old[i["claim"]] == new[i["claim"]] for i in english)
        # the queue of domain zh states its recall from the domain's own gold
        point = active_point(store, data["judge_version"], "zh", ReviewSettings())
        assert point.source == "gold" and point.domain == "zh" and point.n_gold == 100
        # English answers (no domain tag) keep the version-wide point
        assert active_point(store, data["judge_version"], "", ReviewSettings()).domain == ""
    finally:
        store.close()


def test_an_answer_record_carries_the_domain_a_team_sets() -> None:
    """The tag ``judge run`` reads from an input line: ``"domain": "zh"`` on each Chinese
    answer routes it to the domain's rule and queue point."""
    record = AnswerRecord.model_validate({
        "id": "a1", "question": "橋何時啟用？", "answer": "一九〇〇年。",
        "sources": [{"id": "S1", "text": "第 0 號橋於 1900 年啟用。"}], "domain": "zh"})
    assert record.domain == "zh"
    assert '"domain":"zh"' in record.model_dump_json()
