"""``judge calibrate`` and ``judge eval-gold`` against the scripted fake provider: the JSON
contract, the HTML report, refusals (a model's labels, self-grading), refused answers and
judge errors counted, people's agreement, weighted estimates from a review queue's gold
export, ``--fail-on`` exit codes and resumable evaluation (the README blocks generated from its
report: tests/research/test_quality_block.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from calibration import CalibrationReport
from judge.api import judge_file
from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.store import Store
from tests.conftest import FAKE_MODEL, write_jsonl
from tests.fakes import FakeLLM, rule_responder

AUTH = {"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."}
CLAIMS = ["401 means unauthenticated.", "403 means forbidden.", "404 means gone."]


def invoke(*args: str) -> Any:
    _register()
    return CliRunner().invoke(app, list(args))


def strict_json(text: str) -> dict[str, Any]:
    def no_nan(token: str) -> float:
        raise AssertionError(f"{token} is not JSON")
    return json.loads(text, parse_constant=no_nan)


def answers() -> list[dict[str, Any]]:
    return [{"id": "a1", "answer": " ".join(CLAIMS), "sources": [AUTH],
             "generator": "openai/gpt-4o-mini",
             "claims": [{"text": c, "citations": ["S1"]} for c in CLAIMS]}]


def gold_item(n: int, claim: str, label: str, subtype: str | None = None,
              **kw: Any) -> dict[str, Any]:
    return {"id": f"g{n}", "dataset": "t", "question": None, "answer": None,
            "sources": [AUTH], "claim": claim, "label": label, "subtype": subtype,
            "original_label": None, "annotator": "human:alice", **kw}


def base_gold() -> list[dict[str, Any]]:
    # the fake judge: claims 1 and 2 occur verbatim -> supported; claim 3 -> not_in_source
    return [gold_item(1, CLAIMS[0], "supported"),
            gold_item(2, CLAIMS[1], "contradicted", "numeric_or_version_error"),
            gold_item(3, CLAIMS[2], "not_in_source", "unsupported_addition")]


@pytest.fixture
def judged(tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM) -> Path:
    path = write_jsonl(tmp_path / "answers.jsonl", answers())
    judge_file(path, config=config, db=store)
    return Path(store.path)


def test_calibrate_json_contract_html_and_round_trip(tmp_path: Path, judged: Path) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", base_gold())
    html = tmp_path / "report.html"
    result = invoke("calibrate", "--db", str(judged), "--gold", str(gold), "--json",
                    "--html", str(html))
    assert result.exit_code == 0, result.output
    data = strict_json(result.stdout)
    for key in ("n", "confusion", "accuracy", "balanced_accuracy", "kappa", "lenient_rate",
                "strict_rate", "per_label", "queue_recall", "queue_load", "judge_errors",
                "judge_version"):
        assert key in data, key
    assert data["n"] == 3 and data["judge_version"].startswith("judge-model@")
    assert data["confusion"]["supported"]["supported"] == 1
    assert data["confusion"]["contradicted"]["supported"] == 1      # a missed hallucination
    assert data["confusion"]["not_in_source"]["not_in_source"] == 1
    assert data["accuracy"] == pytest.approx(2 / 3)
    assert set(data["kappa"]) >= {"value", "ci_low", "ci_high"}
    assert data["lenient_rate"]["value"] == pytest.approx(0.5)
    assert data["lenient_rate"]["n"] == 2 and data["strict_rate"]["n"] == 1
    assert data["strict_rate"]["value"] == 0.0
    assert 0 <= data["lenient_rate"]["ci_low"] <= 0.5 <= data["lenient_rate"]["ci_high"] <= 1
    # the queue sends only the not_in_source claim: it catches 1 of 2 gold non-supported
    assert data["queue_recall"] == pytest.approx(0.5)
    assert data["queue_load"] == pytest.approx(1 / 3)
    assert data["judge_errors"] == 0 and data["refused_answers"]["count"] == 0
    assert data["validity_gate"]["passed"] is True
    assert data["per_label"]["supported"]["support"] == 1
    assert data["gold"]["matched_by"]["text"] == 3
    report = CalibrationReport.model_validate(data["report"])
    assert report.model_dump(mode="json") == data["report"]
    assert report.accuracy.value == pytest.approx(data["accuracy"])
    page = html.read_text(encoding="utf-8")
    assert '<table class="confusion" id="confusion">' in page
    confusion = page.split('id="confusion"', 1)[1].split("</table>", 1)[0]
    assert "<th class=\"l\">contradicted</th>" in confusion
    assert "Validity gate" in page and "Coverage of the gold file" in page

    text = invoke("calibrate", "--db", str(judged), "--gold", str(gold))
    assert text.exit_code == 0
    assert "Confusion matrix" in text.stdout and "lenient rate" in text.stdout


def test_calibrate_refuses_a_models_labels(tmp_path: Path, judged: Path) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl",
                       [*base_gold()[:2], {**base_gold()[2], "annotator": "model:gpt-4o"}])
    result = invoke("calibrate", "--db", str(judged), "--gold", str(gold), "--json")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "not a person" in result.output and "line 3" in result.output
    # a "person" whose id is a model seen in the store is refused too
    named = write_jsonl(tmp_path / "named.jsonl",
                        [{**g, "annotator": "human:gpt-4o-mini"} for g in base_gold()])
    result = invoke("calibrate", "--db", str(judged), "--gold", str(named))
    assert result.exit_code == 1 and "names a model" in result.output


def test_calibrate_refuses_when_the_judge_generated_the_answers(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    records = [{**answers()[0], "generator": None}]
    judge_file(write_jsonl(tmp_path / "a.jsonl", records), config=config, db=store)
    # the gold file says who wrote the answers: the judge model itself
    gold = write_jsonl(tmp_path / "gold.jsonl",
                       [{**g, "generator": FAKE_MODEL} for g in base_gold()])
    result = invoke("calibrate", "--db", str(store.path), "--gold", str(gold), "--json")
    assert result.exit_code == 1 and result.stdout == ""
    assert "refused" in result.output and "self-grading" in result.output
    # a store whose answers were (somehow) judged by their own generator is refused too
    ok = write_jsonl(tmp_path / "ok.jsonl", base_gold())
    assert invoke("calibrate", "--db", str(store.path), "--gold", str(ok)).exit_code == 0
    store.db.execute("update answers set generator = ?", ["other-provider/judge-model:latest"])
    store.db.conn.commit()
    result = invoke("calibrate", "--db", str(store.path), "--gold", str(ok))
    assert result.exit_code == 1 and "self-grading" in result.output
    assert "there is no option to allow it" in result.output


def test_refused_answers_judge_errors_and_unjudged_gold_are_counted(
    tmp_path: Path, store: Store, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    def responder(schema: str, messages: list[dict[str, Any]]) -> str:
        if "BROKEN" in messages[-1]["content"]:
            return "not json"
        return rule_responder(schema, messages)

    fake_llm.responder = responder
    records = [*answers(),
               {"id": "mine", "answer": "401 means unauthenticated.", "sources": [AUTH],
                "generator": "someone/judge-model", "claims": [{"text": CLAIMS[0]}]},
               {"id": "broken", "answer": "BROKEN 403 means forbidden.", "sources": [AUTH],
                "claims": [{"text": "BROKEN 403 means forbidden.", "citations": ["S1"]}]}]
    judge_file(write_jsonl(tmp_path / "a.jsonl", records), config=config, db=store)
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        *base_gold(),
        gold_item(4, CLAIMS[0], "supported", answer_id="mine"),             # refused answer
        gold_item(5, "BROKEN 403 means forbidden.", "supported"),            # judge error
        gold_item(6, "418 means teapot.", "not_in_source", "unsupported_addition"),  # unjudged
    ])
    result = invoke("calibrate", "--db", str(store.path), "--gold", str(gold), "--json")
    assert result.exit_code == 0, result.output
    data = strict_json(result.stdout)
    assert data["n"] == 4
    assert data["judge_errors"] == 1 and data["confusion"]["supported"]["judge_error"] == 1
    assert data["strict_rate"]["n"] == 2 and data["strict_rate"]["value"] == 0.5
    assert data["refused_answers"]["count"] == 1
    assert data["refused_answers"]["items"][0]["gold_id"] == "g4"
    assert "self-grading" in data["refused_answers"]["items"][0]["reason"]
    assert data["not_judged"] == {"count": 1, "gold_ids": ["g6"]}
    assert data["validity_gate"]["schema"]["failures"] == 1
    assert data["validity_gate"]["passed"] is False
    assert any("refused to grade" in n for n in data["notes"])
    gated = invoke("calibrate", "--db", str(store.path), "--gold", str(gold),
                   "--fail-on", "schema_errors_above=0")
    assert gated.exit_code == 3 and "schema_errors_above" in gated.output


def test_people_agreement_and_weights(tmp_path: Path, judged: Path) -> None:
    reviews = [{"annotator": "human:alice", "label": "contradicted"},
               {"annotator": "human:bob", "label": "supported"}]
    items = base_gold()
    items[0] = {**items[0], "reviews": [{"annotator": "human:alice", "label": "supported"},
                                        {"annotator": "human:bob", "label": "supported"}]}
    items[1] = {**items[1], "reviews": reviews,
                "adjudication": {"adjudicator": "human:carol", "reason": "S1 is explicit",
                                 "original_labels": reviews}}
    items[2] = {**items[2], "reviews": [{"annotator": "human:alice", "label": "not_in_source"},
                                        {"annotator": "human:bob", "label": "not_in_source"}]}
    for it, (stratum, weight) in zip(items, [("passed", 3.0), ("flagged", 1.0),
                                             ("flagged", 1.0)], strict=True):
        it.update(stratum=stratum, weight=weight)
    gold = write_jsonl(tmp_path / "gold.jsonl", items)
    result = invoke("calibrate", "--db", str(judged), "--gold", str(gold), "--json")
    assert result.exit_code == 0, result.output
    data = strict_json(result.stdout)
    people = data["human_agreement"]
    assert people["annotators"] == ["human:alice", "human:bob"]
    assert people["n_items"] == 3 and people["method"] == "cohen_kappa"
    assert people["pairwise"][0]["agreement"]["value"] == pytest.approx(2 / 3)
    weighted = data["weighted"]
    assert {s["name"]: s["size"] for s in weighted["design"]["strata"]} == {
        "passed": 3, "flagged": 2}
    # weighted: the one passed claim stands for 3 claims, all judged correctly
    assert weighted["accuracy"]["value"] == pytest.approx(4 / 5)
    text = invoke("calibrate", "--db", str(judged), "--gold", str(gold))
    assert "Agreement between people" in text.stdout and "Sampling design" in text.stdout


def test_fail_on_thresholds_exit_3(tmp_path: Path, judged: Path) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", base_gold())
    args = ["calibrate", "--db", str(judged), "--gold", str(gold)]
    bad = invoke(*args, "--fail-on", "lenient_rate_above=0.25")
    assert bad.exit_code == 3 and "lenient_rate_above" in bad.output
    ok = invoke(*args, "--fail-on", "lenient_rate_above=0.75", "--fail-on",
                "judge_errors_above=0,invalid_evidence_above=0")
    assert ok.exit_code == 0, ok.output
    both = invoke(*args, "--json", "--fail-on", "accuracy_below=0.9")
    assert both.exit_code == 3 and strict_json(both.stdout)["violations"][0]["name"] == \
        "accuracy_below"
    unknown = invoke(*args, "--fail-on", "vibes_above=1")
    assert unknown.exit_code == 1 and "unknown" in unknown.output
    malformed = invoke(*args, "--fail-on", "kappa_below")
    assert malformed.exit_code == 1 and "KEY=NUMBER" in malformed.output


def test_gold_from_the_review_queue_gives_weighted_estimates(tmp_path: Path) -> None:
    """Integration with the review queue: label every queued item, export gold with
    ``gold_lines`` and calibrate: 20 of 64 passed claims sampled, weight 3.2 (seed 000)."""
    from judge.review import gold_export, queue, reviews
    from tests.review_helpers import known_store

    store = known_store(tmp_path)
    built = queue.build_queue(store, options=queue.QueueOptions(
        seed=2424, sample_rate=20 / 64, double_fraction=0.0))
    items = list(queue.queue_items(store, built.queue_id))
    passed = [i for i in items if i["stratum"] == "passed"]
    assert len(passed) == 20
    rows = {r["claim_id"]: r for r in store.verdict_rows()}
    for it in items:
        if it["kind"] != "claim":
            reviews.record_review(store, it["subject"], "alice", "not_in_source",
                                 subtype="unsupported_addition")
            continue
        judge_label = rows[it["claim_id"]]["label"]
        if it in passed[:2]:          # people reject two claims the judge passed
            label, subtype = "not_in_source", "unsupported_addition"
        elif judge_label in ("supported", "judge_error"):
            label, subtype = "supported", None
        else:
            label, subtype = judge_label, rows[it["claim_id"]]["subtype"] or "opinion"
        reviews.record_review(store, it["subject"], "alice", label, subtype=subtype)
    gold_path = tmp_path / "gold.jsonl"
    write_jsonl(gold_path, list(gold_export.gold_lines(store, built.queue_id)))
    store.close()
    result = invoke("calibrate", "--db", str(tmp_path / "known.db"), "--gold", str(gold_path),
                    "--json")
    assert result.exit_code == 0, result.output
    data = strict_json(result.stdout)
    strata = {s["name"]: s for s in data["weighted"]["design"]["strata"]}
    assert strata["passed"]["size"] == 64 and strata["passed"]["sample_size"] == 20
    assert strata["passed"]["weight"] == pytest.approx(3.2)
    assert data["refused_answers"]["count"] == 1       # the self-graded answer
    assert data["judge_errors"] == 1
    # unweighted, 2 of the gold non-supported claims were passed by the judge; weighted,
    # each of them stands for 3.2 claims
    lenient = data["lenient_rate"]
    hits = round(lenient["value"] * lenient["n"])
    assert hits == 2
    w = data["weighted"]["lenient_rate"]
    assert w["weighted_count"] == pytest.approx(6.4)
    assert w["value"] == pytest.approx(6.4 / (6.4 + lenient["n"] - 2))
    assert w["value"] > lenient["value"]


def eval_gold_items() -> list[dict[str, Any]]:
    other = {"id": "T1", "text": "The tower is 330 metres tall."}
    return [gold_item(1, CLAIMS[0], "supported", dataset="alpha"),
            gold_item(2, CLAIMS[1], "supported", dataset="alpha"),
            gold_item(3, CLAIMS[2], "not_in_source", "unsupported_addition", dataset="alpha"),
            gold_item(4, "The tower is 330 metres tall.", "supported", dataset="beta",
                      sources=[other]),
            gold_item(5, "The tower is 300 metres tall.", "contradicted",
                      "numeric_or_version_error", dataset="beta", sources=[other]),
            gold_item(6, "The tower is 330 metres tall.", "supported", dataset="beta",
                      sources=[other], generator="fake/judge-model")]


def test_eval_gold_is_resumable_and_reports_per_dataset(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", eval_gold_items())
    db = tmp_path / "eval.db"
    out_json = tmp_path / "eval.json"
    html = tmp_path / "eval.html"
    first = invoke("eval-gold", str(gold), "--db", str(db), "--model", FAKE_MODEL, "--json",
                   "--output-json", str(out_json), "--html", str(html))
    assert first.exit_code == 0, first.output
    data = strict_json(first.stdout)
    assert data["run"]["model_calls"] == len(fake_llm.calls) == 5  # one answer per claim
    assert data["n"] == 5
    assert data["refused_answers"]["count"] == 1          # g6 was written by the judge model
    assert data["gold"]["matched_by"]["eval"] == 5
    assert set(data["per_dataset"]) == {"alpha", "beta"}
    assert data["per_dataset"]["alpha"]["n"] == 3 and data["per_dataset"]["beta"]["n"] == 2
    assert data["per_dataset"]["beta"]["confusion"]["contradicted"]["not_in_source"] == 1
    assert data["cost"]["calls"] == 5 and data["cost"]["calls_per_claim"] == 1.0
    assert strict_json(out_json.read_text()) == data
    assert 'id="dataset-1-confusion"' in html.read_text(encoding="utf-8")

    calls = len(fake_llm.calls)
    second = invoke("eval-gold", str(gold), "--db", str(db), "--model", FAKE_MODEL, "--json")
    assert second.exit_code == 0, second.output
    again = strict_json(second.stdout)
    assert len(fake_llm.calls) == calls and again["run"]["model_calls"] == 0
    assert again["run"]["answers_from_store"] == 6
    assert again["confusion"] == data["confusion"] and again["cost"] == data["cost"]

    limited = invoke("eval-gold", str(gold), "--db", str(db), "--model", FAKE_MODEL,
                     "--limit", "2", "--json")
    assert limited.exit_code == 0 and strict_json(limited.stdout)["n"] == 2
    assert len(fake_llm.calls) == calls
    # the same claims judged, then calibrated with the plain command
    plain = invoke("calibrate", "--db", str(db), "--gold", str(gold), "--json")
    assert plain.exit_code == 0 and strict_json(plain.stdout)["confusion"] == data["confusion"]

    # what people meet when they read only the first part of the queue, per dataset too
    assert set(data["queue_budget"]) == {"25%", "50%"}
    rejected = sum(n for g, row in data["confusion"].items() if g != "supported"
                   for n in row.values())
    assert data["queue_budget"]["50%"]["n"] == rejected
    assert all(set(f["queue_budget"]) == {"25%", "50%"} for f in data["per_dataset"].values())


def test_eval_gold_with_scores_reports_the_queue_at_other_thresholds_and_budgets(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """Under strategy ``scores`` every verdict carries P(supported): the report shows the
    queue at each review_support_below (the configured one reproducing the measured queue)."""
    gold = write_jsonl(tmp_path / "gold.jsonl", eval_gold_items()[:5])
    config = tmp_path / "scores.toml"
    config.write_text('[judge]\nmodel = "fake/judge-model"\nstrategy = "scores"\n'
                      'signals = false\nreview_support_below = 0.5\n'
                      'prompts = { split_claims = "v1", choose_label = "v1" }\n', "utf-8")
    result = invoke("eval-gold", str(gold), "--db", str(tmp_path / "e.db"), "--config",
                    str(config), "--json")
    assert result.exit_code == 0, result.output
    data = strict_json(result.stdout)
    assert data["review_support_below"] == 0.5
    points = {p["review_support_below"]: p for p in data["queue_points"]}
    assert points[0.5]["recall"]["value"] == data["queue_recall"]
    assert points[0.5]["load"]["value"] == data["queue_load"]
    loads = [p["load"]["value"] for p in data["queue_points"]]
    assert loads == sorted(loads)  # a higher threshold never sends fewer claims
    assert set(data["queue_budget"]) == {"25%", "50%"}


def test_eval_gold_rejects_invalid_gold_before_judging(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [gold_item(1, CLAIMS[0], "supported"),
                                                 gold_item(2, CLAIMS[1], "true")])
    result = invoke("eval-gold", str(gold), "--db", str(tmp_path / "e.db"), "--model",
                    FAKE_MODEL)
    assert result.exit_code == 1 and "line 2" in result.output
    assert fake_llm.calls == []
    nosrc = write_jsonl(tmp_path / "nosrc.jsonl", [gold_item(1, CLAIMS[0], "supported",
                                                             sources=[])])
    result = invoke("eval-gold", str(nosrc), "--db", str(tmp_path / "e.db"), "--model",
                    FAKE_MODEL)
    assert result.exit_code == 1 and "no sources" in result.output


def test_eval_gold_judges_the_rest_when_a_gold_text_cannot_be_an_answer_record(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """A NUL written \\u0000 in a gold text: the gold reader keeps the person's label with a
    warning, the answer record refuses the text; the item is reported and not judged, the
    others are judged and calibrated (before, the whole evaluation stopped)."""
    items = eval_gold_items()[:3]
    items[1]["claim"] = items[1]["claim"].replace(" ", " \u0000", 1)
    gold = write_jsonl(tmp_path / "gold.jsonl", items)
    result = invoke("eval-gold", str(gold), "--db", str(tmp_path / "e.db"), "--model",
                    FAKE_MODEL, "--output-json", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.output
    assert "rejected" in result.output and "NUL" in result.output
    data = strict_json((tmp_path / "r.json").read_text())
    assert data["n"] == 2 and len(fake_llm.calls) == 2
    assert any("1 gold item(s) have no verdict" in n for n in data["notes"])


def test_gold_check_command(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", base_gold())
    bad = write_jsonl(tmp_path / "bad.jsonl", [base_gold()[0],
                                               {**base_gold()[1], "annotator": "gpt-4o"}])
    ok = invoke("gold-check", str(good), "--json")
    assert ok.exit_code == 0 and strict_json(ok.stdout)[0]["ok"] is True
    result = invoke("gold-check", str(good), str(bad))
    assert result.exit_code == 1
    assert "line 2 (g2): refused" in result.stdout and "NOT USABLE" in result.stdout
