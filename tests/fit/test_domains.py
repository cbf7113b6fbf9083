"""Per-domain rules: an answer's ``domain`` tag (or a gold item's dataset) picks the rule of
its domain, the verdict records which rule decided, ``judge fit --domain`` fits one domain's
rule and keeps the rest of the config, and records without a domain keep their ids."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from judge.api import eval_gold, fit, judge_answers
from judge.config import JudgeConfig
from judge.config.score_model import DomainRule
from judge.evaluation.gold import load_gold
from judge.evaluation.matching import gold_to_records
from judge.records import AnswerRecord
from judge.review.queue import QueueOptions, build_queue, queue_items
from judge.review.reviews import record_review
from judge.runs.replay import replay_run
from judge.store import Store
from tests.fakes import FakeLLM, install
from tests.fit.synthetic import (
    constant_rule,
    gold_items,
    install_letters,
    letters_for,
    scores_config,
    write_config,
    write_gold,
)

SOURCE = {"id": "S1", "text": "The river bridge opened in 1931 after four years of work."}


def record(domain: str | None = None, claim: str = "The river bridge opened in 1931.") -> dict:
    out: dict[str, Any] = {"answer": claim, "sources": [SOURCE],
                           "claims": [{"text": claim, "citations": ["S1"]}]}
    if domain:
        out["domain"] = domain
    return out


def test_records_without_a_domain_keep_their_ids_and_content() -> None:
    plain = AnswerRecord.model_validate(record())
    assert "domain" not in plain.model_dump() and '"domain"' not in plain.model_dump_json()
    tagged = AnswerRecord.model_validate(record("legal"))
    assert tagged.model_dump()["domain"] == "legal" and tagged.answer_id != plain.answer_id
    with pytest.raises(ValidationError, match="domain"):
        AnswerRecord.model_validate(record("no spaces please"))


def test_gold_conversion_keeps_answer_ids_and_carries_datasets_apart(tmp_path: Path) -> None:
    items = gold_items(3, "begin") + gold_items(2, "wice", start=3)
    conv = gold_to_records(load_gold(write_gold(tmp_path / "g.jsonl", items)).entries)
    assert all("domain" not in r for r in conv.records)
    bare = gold_to_records(load_gold(write_gold(
        tmp_path / "bare.jsonl", [{**i, "dataset": None} for i in items])).entries)
    assert [r["id"] for r in conv.records] == [r["id"] for r in bare.records]
    assert sorted(conv.domains.values()) == ["begin"] * 3 + ["wice"] * 2
    assert bare.domains == {}


def test_domain_rules_are_versioned_and_validated() -> None:
    base = scores_config()
    rule = DomainRule(score_model=constant_rule("not_in_source"), review_support_below=0.4)
    tagged = scores_config(domain_rules={"legal": rule})
    assert "domain_rules" not in base.versioned_fields()  # neutral when empty
    assert tagged.versioned_fields()["domain_rules"]["legal"]["review_support_below"] == 0.4
    assert tagged.rule_for("legal")[0] == "legal"
    assert tagged.rule_for("legal")[1].score_model == rule.score_model
    assert tagged.rule_for("other") == ("default", tagged) and tagged.rule_for(None)[0] == "default"
    with pytest.raises(ValidationError, match="reserved"):
        scores_config(domain_rules={"default": rule})
    with pytest.raises(ValidationError, match="strategy 'scores'"):
        JudgeConfig(model="fake/x", strategy="batch", domain_rules={"legal": rule})


def test_the_rule_of_an_answers_domain_decides_and_the_verdict_records_it(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    # default: everything supported; domain "legal": everything not_in_source
    config = scores_config(domain_rules={"legal": DomainRule(
        score_model=constant_rule("not_in_source"))})
    results = judge_answers([record(), record("legal"), record("other")], config=config,
                            db=store)
    got = [(r.verdicts[0].label, r.verdicts[0].rule) for r in results]
    assert got == [("supported", "default"), ("not_in_source", "legal"),
                   ("supported", "default")]
    stored = {r["answer_id"]: r["rule"] for r in store.verdict_rows()}
    assert sorted(stored.values()) == ["default", "default", "legal"]
    report = replay_run(store, results.summary.run_id)
    assert report.clean, report.differences
    # without domain rules nothing changes but the recorded rule
    plain = judge_answers([record()], config=scores_config(), db=store)
    assert plain[0].verdicts[0].rule == "default"


@pytest.fixture(scope="module")
def two_domains(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("domains")
    items = gold_items(100, "alpha") + gold_items(40, "beta", start=100)
    fake = install(FakeLLM())
    install_letters(fake, letters_for(items))
    gold = write_gold(folder / "gold.jsonl", items)
    config = write_config(folder / "current.toml", scores_config())
    version = eval_gold(gold, config=config, db=folder / "master.db").summary.judge_version
    yield {"folder": folder, "gold": gold, "items": items, "fake": fake, "version": version}


def test_fit_domain_adds_that_domains_rule_and_eval_gold_uses_it(
    two_domains: dict[str, Any], tmp_path: Path
) -> None:
    fake = install(two_domains["fake"])
    db = tmp_path / "judge.db"
    shutil.copy(two_domains["folder"] / "master.db", db)
    out = tmp_path / "alpha.toml"
    result = fit(two_domains["gold"], db=db, domain="alpha", output=out)
    data = result.to_dict()
    assert data["domain"] == "alpha" and data["fit"]["n"] + data["holdout"]["n"] == 100
    assert data["model_calls"] == 0
    config = JudgeConfig.load(out)
    assert set(config.domain_rules) == {"alpha"}
    assert config.score_model == constant_rule("supported")  # the default rule is kept
    fake.calls.clear()
    again = eval_gold(two_domains["gold"], config=out, db=db)
    assert fake.calls == [] and again.summary.model_calls == 0
    rows = list(Store.open(db).verdict_rows(judge_version=again.summary.judge_version))
    datasets = gold_to_records(load_gold(two_domains["gold"]).entries).domains
    by_rule: dict[str, set[str]] = {}
    for row in rows:
        by_rule.setdefault(row["rule"], set()).add(datasets[row["answer_id"]])
    assert by_rule == {"alpha": {"alpha"}, "default": {"beta"}}
    # beta's claims are still decided by the default rule (all supported)
    labels = {row["label"] for row in rows if row["rule"] == "default"}
    assert labels == {"supported"}
    # a second domain's fit keeps the first domain's rule; beta is too small to fit
    with pytest.raises(Exception, match="too little gold"):
        fit(two_domains["gold"], db=db, domain="beta",
            judge_version=again.summary.judge_version)
    result = fit(two_domains["gold"], db=db, domain="beta", holdout=0,
                 judge_version=again.summary.judge_version, output=tmp_path / "both.toml")
    both = JudgeConfig.load(tmp_path / "both.toml")
    assert set(both.domain_rules) == {"alpha", "beta"}
    assert both.domain_rules["alpha"] == config.domain_rules["alpha"]
    # the default rule's fit leaves out the domains that have their own rule
    default = fit(two_domains["gold"], db=db, holdout=0,
                  judge_version=again.summary.judge_version)
    assert default.to_dict()["fit"]["n"] == 40
    assert default.skipped == {"decided by the rule of domain alpha": 100}


def test_reviews_in_the_store_are_gold_and_answer_tags_are_domains(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """No gold file: the claims people reviewed in the store's queue are the gold, and the
    answers' own domain tags say which rule they belong to."""
    items = gold_items(100, "gamma")
    install_letters(fake_llm, letters_for(items))
    records = [{"id": f"a{k}", "answer": i["claim"], "sources": i["sources"],
                "claims": [{"text": i["claim"], "citations": ["S1"]}], "domain": "support"}
               for k, i in enumerate(items)]
    label = {f"a{k}": i["label"] for k, i in enumerate(items)}
    store = Store.open(tmp_path / "judge.db")
    with pytest.raises(Exception, match="no reviewed claim"):
        fit(db=store)
    # an answer the judge's own family wrote: refused, yet in the queue for people to read
    records.append({"id": "mine", "answer": "The river bridge opened in 1931.",
                    "sources": [SOURCE], "generator": "fake/judge-model", "domain": "support"})
    label["mine"] = "supported"
    judge_answers(records, config=scores_config(), db=store)
    queue = build_queue(store, options=QueueOptions(sample_rate=1.0, double_fraction=0.0))
    subtype = {"supported": None, "contradicted": "misattribution",
               "not_in_source": "unsupported_addition", "not_verifiable": "opinion"}
    for item in queue_items(store, queue.queue_id):
        gold = label[item["answer_id"]]
        record_review(store, item["subject"], "ana", gold, subtype=subtype[gold])
    result = fit(db=store, domain="support", output=tmp_path / "support.toml")
    data = result.to_dict()
    assert data["fit"]["n"] + data["holdout"]["n"] == 100 and data["model_calls"] == 0
    assert data["gold"]["file"].endswith("(reviews)")
    assert data["gold"]["skipped"] == {"answers the judge refused to grade (self-grading)": 1}
    assert json.loads(json.dumps(data))["recommend_adopt"] is True
    assert set(JudgeConfig.load(tmp_path / "support.toml").domain_rules) == {"support"}


def test_an_answer_decided_by_one_rule_is_not_reused_under_another(
    tmp_path: Path, store: Store, fake_llm: FakeLLM
) -> None:
    """Gold records carry their dataset apart from the record: the same record under another
    dataset would reuse verdicts its domain's rule no longer gives; it is rejected instead."""
    items = gold_items(2, "alpha")
    install_letters(fake_llm, letters_for(items))
    config = scores_config(domain_rules={"alpha": DomainRule(
        score_model=constant_rule("not_in_source"))})
    first = eval_gold(write_gold(tmp_path / "a.jsonl", items), config=config, db=store)
    assert {r["rule"] for r in store.verdict_rows()} == {"alpha"}
    moved = [{**i, "dataset": "beta"} for i in items]
    again = eval_gold(write_gold(tmp_path / "b.jsonl", moved), config=config, db=store)
    errors = [r["error"] for r in again.summary.rejected_lines]
    assert again.summary.run_id != first.summary.run_id and again.summary.answers == 0
    assert len(errors) == 2 and all("now selects rule 'default'" in e for e in errors)
    assert {r["rule"] for r in store.verdict_rows()} == {"alpha"}


def test_a_domain_fit_shrinks_toward_the_current_rule_unless_told_otherwise(
    two_domains: dict[str, Any], tmp_path: Path
) -> None:
    """A domain's rule is fitted toward the rule that decides the domain now (its few claims
    adjust it); --shrink zero fits it from nothing, as the default rule's fit does."""
    from typer.testing import CliRunner

    from judge.cli import _register, app

    _register()
    fake = install(two_domains["fake"])
    fake.calls.clear()
    db = tmp_path / "judge.db"
    shutil.copy(two_domains["folder"] / "master.db", db)

    def run(*extra: str) -> dict[str, Any]:
        result = CliRunner().invoke(app, ["fit", "--db", str(db), "--gold",
                                          str(two_domains["gold"]), "--output",
                                          str(tmp_path / "x.toml"), "--json", *extra])
        assert result.exit_code in (0, 3), result.output
        return json.loads(result.stdout)

    shrunk = run("--domain", "alpha")
    header = (tmp_path / "x.toml").read_text(encoding="utf-8").split("[judge]")[0]
    assert "(toward the rule it replaces)" in " ".join(header.replace("#", " ").split())
    zero = run("--domain", "alpha", "--shrink", "zero")
    header = (tmp_path / "x.toml").read_text(encoding="utf-8").split("[judge]")[0]
    assert "(toward 0)" in " ".join(header.replace("#", " ").split())
    assert shrunk["fit"]["shrunk_toward_current"] is True
    assert zero["fit"]["shrunk_toward_current"] is False
    assert shrunk["fit"]["lambdas"] != zero["fit"]["lambdas"]
    assert shrunk["judge_version"] != zero["judge_version"]  # different rules
    assert run("--holdout", "0.3")["fit"]["shrunk_toward_current"] is False  # default rule
    assert fake.calls == []  # zero model calls either way
    bad = CliRunner().invoke(app, ["fit", "--db", str(db), "--gold", str(two_domains["gold"]),
                                   "--output", str(tmp_path / "y.toml"), "--shrink", "prior"])
    assert bad.exit_code != 0 and "--shrink must be current or zero" in bad.output
    assert not (tmp_path / "y.toml").exists()


def test_an_unknown_shrink_is_refused_by_the_api(two_domains: dict[str, Any],
                                                 tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="shrink must be 'current' or 'zero'"):
        fit(two_domains["gold"], db=two_domains["folder"] / "master.db",
            shrink="prior")  # type: ignore[arg-type]
