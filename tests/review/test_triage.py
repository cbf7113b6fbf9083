"""Triage at a stated recall, end to end on a store: the threshold set from a gold file, the
queue's flags following it, a changed threshold shown wherever the version is, the recall
watch, and zero model calls after judging."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from judge.api import judge_file
from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.review.design import draw
from judge.review.queue import (
    Candidate,
    QueueOptions,
    build_queue,
    priority_order,
    queue_items,
)
from judge.review.reviews import record_review
from judge.review.triage import recall_watch
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, Reply, choice_reply

SOURCE = {"id": "s", "text": "The archive lists forty items, each described in one line."}
NO_SAMPLES = {"sample_rate": 0.0, "min_sample": 0, "double_fraction": 0.0,
              "informative_share": 0.0}


def claim_text(i: int) -> str:
    """Distinct claims without numbers (a number the source lacks fails a check)."""
    return f"The {chr(97 + i % 26)}{chr(97 + i // 26)} record is described."


@pytest.fixture
def judged(tmp_path: Path, store: Store, fake_llm: FakeLLM) -> Iterator[dict[str, Any]]:
    """40 claims of one answer, judged with the scores strategy; each claim's support comes
    from the option letter's probability the fake model gives (0.30 to 0.99)."""
    rng = random.Random(5)
    confidence = {claim_text(i): round(rng.uniform(0.3, 0.99), 3) for i in range(40)}

    def respond(schema: str, messages: list[dict]) -> Reply:  # type: ignore[type-arg]
        tail = messages[-1]["content"].split("Claim")[-1]
        claim = next(c for c in confidence if c in tail)
        return choice_reply("A", confidence[claim])

    fake_llm.responder = respond
    path = write_jsonl(tmp_path / "answers.jsonl", [{
        "id": "a", "domain": "archive", "sources": [SOURCE], "answer": " ".join(confidence),
        "claims": [{"text": c, "citations": ["s"]} for c in confidence]}])
    config = JudgeConfig(model="fake/judge-model", strategy="scores", signals=False,
                         prompts={"split_claims": "v1", "choose_label": "v1"})
    judge_file(path, config=config, db=store)
    rows = {r["claim"]: r for r in store.verdict_rows()}
    assert len(rows) == 40 and all(r["support"] is not None for r in rows.values())
    # people reject the 26 claims of lowest support but two, and two of the higher ones
    ranked = sorted(rows, key=lambda c: rows[c]["support"])
    problems = set(ranked[:24]) | set(ranked[30:32])
    gold = write_jsonl(tmp_path / "gold.jsonl", [{
        "id": f"g{i}", "claim": c, "sources": [SOURCE],
        "label": "not_in_source" if c in problems else "supported",
        "annotator": "human:alice"} for i, c in enumerate(ranked)])
    yield {"rows": rows, "problems": problems, "gold": gold, "calls": len(fake_llm.calls),
           "fake": fake_llm, "db": store.path}


def cli(*args: str) -> Any:
    _register()
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def flagged_claims(store: Store, queue_id: str) -> set[str]:
    ids = {i["claim_id"] for i in queue_items(store, queue_id) if i["stratum"] == "flagged"}
    return {r["claim"] for r in store.verdict_rows() if r["claim_id"] in ids}


def test_the_queue_flags_exactly_what_the_threshold_set_from_gold_flags(
        judged: dict[str, Any], store: Store) -> None:
    db = str(judged["db"])
    set_ = cli("queue", "threshold", "--db", db, "--gold", str(judged["gold"]), "--json")
    point = set_["points"][0]
    assert point["domain"] == "" and point["sufficient"] and point["n_problems"] == 26
    threshold = point["threshold"]
    supports = {c: r["support"] for c, r in judged["rows"].items()}
    below = {c for c, s in supports.items() if s < threshold}
    # the stated guarantee on the gold itself: at most the allowed misses
    missed = [c for c in judged["problems"] if supports[c] >= threshold]
    assert len(missed) == point["gold_misses"] <= 1
    summary = build_queue(store, options=QueueOptions(**NO_SAMPLES))
    assert flagged_claims(store, summary.queue_id) == below
    used = summary.operating_points
    assert [(p["source"], p["threshold"]) for p in used] == [("gold", threshold)]
    assert used[0]["gold_sha256"] == set_["gold"]["sha256"] and used[0]["n_gold"] == 40
    stored = store.queue_row(summary.queue_id)
    assert stored is not None and stored["operating_points"][0]["threshold"] == threshold
    # every item records its inclusion probability (1 for the census strata)
    assert {i["inclusion_probability"] for i in queue_items(store, summary.queue_id)} == {1.0}
    # nothing after judging called the model
    assert len(judged["fake"].calls) == judged["calls"]


def test_queue_threshold_exits_3_when_it_set_no_threshold(
        judged: dict[str, Any], store: Store, tmp_path: Path) -> None:
    # 10 gold claims hold too few problems (22 are needed for recall 0.9 at 90%)
    lines = Path(judged["gold"]).read_text(encoding="utf-8").splitlines()[:10]
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _register()
    for extra in ((), ("--json",)):
        result = CliRunner().invoke(app, ["queue", "threshold", "--db", str(judged["db"]),
                                          "--gold", str(small), *extra])
        assert result.exit_code == 3, result.output
        assert "no threshold set" in result.output and "are needed" in result.output
    points = cli("versions", "--db", str(judged["db"]), "--json")[0]["operating_points"]
    assert points[0]["threshold"] is None  # nothing the queue would use
    # with enough gold a threshold is set: exit 0 (cli() asserts it)
    assert cli("queue", "threshold", "--db", str(judged["db"]), "--gold",
               str(judged["gold"]), "--json")["points"][0]["sufficient"]


def test_a_changed_threshold_shows_wherever_the_version_is_shown(
        judged: dict[str, Any], store: Store, tmp_path: Path) -> None:
    db, gold = str(judged["db"]), str(judged["gold"])
    before = cli("versions", "--db", db, "--json")[0]["operating_points"]
    assert before[0]["source"] == "configured" and before[0]["threshold"] is None
    first = cli("queue", "threshold", "--db", db, "--gold", gold, "--json")["points"][0]
    lower = cli("queue", "threshold", "--db", db, "--gold", gold, "--recall", "0.8",
                "--json")["points"][0]
    assert lower["threshold"] < first["threshold"]
    shown = cli("versions", "--db", db, "--json")[0]["operating_points"][0]
    assert (shown["source"], shown["threshold"]) == ("gold", first["threshold"])
    config = tmp_path / "judge.toml"
    config.write_text('[judge]\nmodel = "fake/judge-model"\n\n[review]\ntarget_recall = 0.8\n')
    shown = cli("versions", "--db", db, "-c", str(config), "--json")[0]["operating_points"][0]
    assert shown["threshold"] == lower["threshold"] and shown["target_recall"] == 0.8
    summary = cli("queue", "build", "--db", db, "-c", str(config), "--json",
                  "--sample-rate", "0", "--min-sample", "0", "--informative-share", "0")
    assert summary["operating_points"][0]["threshold"] == lower["threshold"]
    below = {c for c, r in judged["rows"].items() if r["support"] < lower["threshold"]}
    assert flagged_claims(store, summary["queue_id"]) == below
    report = cli("calibrate", "--db", db, "--gold", gold, "--json")
    assert report["operating_points"][0]["threshold"] == first["threshold"]  # default 0.9
    assert len(judged["fake"].calls) == judged["calls"]


def test_without_a_point_the_queue_flags_by_labels_and_says_it_states_no_recall(
        judged: dict[str, Any], store: Store) -> None:
    summary = build_queue(store, options=QueueOptions(**NO_SAMPLES))
    point = summary.operating_points[0]
    assert point["source"] == "configured" and point["threshold"] is None
    assert "states no recall" in point["statement"]
    flagged = flagged_claims(store, summary.queue_id)
    assert flagged == {r["claim"] for r in store.verdict_rows() if r["review"]}


def test_the_recall_watch_weighs_the_passed_sample_and_warns_below_the_target(
        judged: dict[str, Any], store: Store) -> None:
    db = str(judged["db"])
    cli("queue", "threshold", "--db", db, "--gold", str(judged["gold"]), "--json")
    summary = build_queue(store, options=QueueOptions(
        sample_rate=0.5, min_sample=0, double_fraction=0.0, informative_share=0.0))
    items = queue_items(store, summary.queue_id)
    assert recall_watch(store, summary.queue_id)["status"] == "not_estimable"
    flagged = [i for i in items if i["stratum"] == "flagged"]
    passed = [i for i in items if i["stratum"] == "passed"]
    weight = passed[0]["weight"]
    # people find a problem in every flagged claim and in 2 of the sampled passed claims
    for item in flagged:
        record_review(store, item["subject"], "human:alice", "not_in_source",
                      subtype="unsupported_addition")
    for k, item in enumerate(passed):
        if k < 2:
            record_review(store, item["subject"], "human:alice", "contradicted",
                          subtype="numeric_or_version_error")
        else:
            record_review(store, item["subject"], "human:alice", "supported")
    watch = recall_watch(store, summary.queue_id)
    expected = len(flagged) / (len(flagged) + weight * 2)
    assert watch["recall"] == pytest.approx(expected)
    assert watch["ci_low"] <= expected <= watch["ci_high"]
    assert watch["status"] in ("below", "significantly_below") and expected < 0.9
    assert watch["message"].startswith("warning: estimated recall")
    report = cli("calibrate", "--db", db, "--gold", str(judged["gold"]), "--json")
    assert report["recall_watch"]["recall"] == pytest.approx(expected)


def test_the_informative_share_keeps_weighted_estimates_unbiased() -> None:
    """Seeded simulation of the queue's design: the passed claims nearest the threshold are
    taken whole, the rest sampled; the weighted count of problems among passed claims is
    right on average, although the near ones hold far more problems than the rest."""
    rng = np.random.default_rng(1)
    n = 600
    support = rng.uniform(0.3, 1.0, n)
    problem = rng.random(n) < (1.0 - support) * 0.8  # problems crowd near the threshold
    truth = int(problem.sum())
    estimates, near_share = [], []
    for seed in range(300):
        cands = [Candidate(subject=f"c{i}", kind="claim", answer_id="a", claim_id=f"c{i}",
                           verdict_id=None, judge_version="v", run_id="r", reasons=[],
                           stratum="passed", category="sampled_pass", rank=0, idx=i,
                           support=float(support[i])) for i in range(n)]
        options = QueueOptions(sample_rate=0.05, min_sample=10, seed=seed,
                               informative_share=0.3)
        chosen, strata = draw(cands, options, priority_order(None))
        total = 0.0
        for c in chosen:
            total += strata[c.stratum]["weight"] * problem[int(c.subject[1:])]
        estimates.append(total)
        near = [c for c in chosen if c.stratum == "near_threshold"]
        near_share.append(len(near) / len(chosen))
        assert max(c.support for c in near) <= min(
            c.support for c in cands if c.stratum == "passed")
    assert np.mean(near_share) == pytest.approx(0.3, abs=0.02)
    se = np.std(estimates) / math.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) < 3 * se + 1
    # and the near stratum is where the problems are: far more than among the rest
    near_ids = {int(c.subject[1:]) for c in cands if c.stratum == "near_threshold"}
    rest = [i for i in range(n) if i not in near_ids]
    assert problem[sorted(near_ids)].mean() > 2 * problem[rest].mean()


def package_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **point: Any) -> None:
    """A packaged point file for head ``f…f`` (0.9 / 0.9, threshold 0.42, set on 300 held-out
    gold claims, with ``point``'s fields), read in place of the shipped ones."""
    from judge.review import triage

    packaged = tmp_path / "operating"
    packaged.mkdir()
    (packaged / "head.json").write_text(json.dumps({
        "head_sha256": "f" * 64, "gold": {"description": "held-out gold", "sha256": "g" * 64},
        "points": [{"target_recall": 0.9, "confidence": 0.9, "threshold": 0.42, "n": 300,
                    "n_problems": 150, **point}],
    }))
    monkeypatch.setattr(triage, "PACKAGED", packaged)
    triage.packaged_points.cache_clear()


def test_a_head_s_packaged_point_decides_until_gold_in_the_store_sets_one(
        judged: dict[str, Any], store: Store, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.config.review import ReviewSettings
    from judge.review import triage

    package_point(tmp_path, monkeypatch, statement="support < 0.42, set on 300 gold claims")
    version = store.judge_versions()[0]["id"]
    config = {"strategy": "probe", "probe_head": {"file": "builtin:x", "sha256": "f" * 64}}
    point = triage.active_point(store, version, "", ReviewSettings(), config)
    assert (point.source, point.threshold, point.n_gold) == ("default", 0.42, 300)
    assert "held-out gold" in point.statement
    # another target has no packaged point: none, said so
    other = triage.active_point(store, version, "", ReviewSettings(target_recall=0.8), config)
    assert other.source == "configured" and other.threshold is None
    # a point set from gold in the store wins
    cli("queue", "threshold", "--db", str(judged["db"]), "--gold", str(judged["gold"]),
        "--json")
    assert triage.active_point(store, version, "", ReviewSettings(), config).source == "gold"
    triage.packaged_points.cache_clear()


def test_a_domain_with_enough_new_reviews_is_proposed_a_head_of_its_own(
        judged: dict[str, Any], store: Store) -> None:
    first = build_queue(store, options=QueueOptions(**NO_SAMPLES))
    assert first.proposals == []
    for k, row in enumerate(judged["rows"].values()):
        if k < 39:
            record_review(store, row["claim_id"], "human:alice", "supported")
    assert build_queue(store, options=QueueOptions(**NO_SAMPLES)).proposals == []
    last = list(judged["rows"].values())[39]
    record_review(store, last["claim_id"], "human:alice", "supported")
    proposals = build_queue(store, options=QueueOptions(**NO_SAMPLES)).proposals
    assert [(p["domain"], p["new"]) for p in proposals] == [("archive", 40)]
    assert proposals[0]["command"].startswith("judge fit --domain archive")


def test_the_embedded_default_head_comes_with_a_point_for_the_default_target() -> None:
    """The shipped head's packaged points were set on scores no fitted head gave the claims it
    saw (out of fold); the one for 0.9 with 90% confidence states what it was set on."""
    from calibration.operating_point import min_problems
    from judge.config import EMBEDDED_PROFILE
    from judge.review.triage import packaged_points

    packaged = packaged_points(EMBEDDED_PROFILE["probe_head"]["sha256"])
    assert packaged is not None and "out-of-fold" in packaged["gold"]["description"]
    point = next(p for p in packaged["points"]
                 if (p["target_recall"], p["confidence"]) == (0.9, 0.9))
    assert 0.0 < point["threshold"] < 1.0
    assert point["n_problems"] >= min_problems(0.9, 0.9)
    assert point["gold_recall"]["value"] >= 0.9 and point["miss_bound"] <= 0.1


# -- the stacked flag score (a point's score spec) ------------------------------------------

STACKED = {"kind": "stacked-v1",
           "weights": {"intercept": 0.5, "support_logit": 1.2, "strength": -0.8}}


def test_a_score_spec_forms_the_flag_score_and_without_one_it_is_the_support() -> None:
    from judge.review.score import ScoreSpecError, parse_spec
    from judge.review.triage import ActivePoint, flag_score

    spec = parse_spec(STACKED)
    assert spec is not None and parse_spec(spec.as_dict()) == spec
    assert parse_spec(json.dumps(STACKED)) == spec and parse_spec(None) is None
    with pytest.raises(ScoreSpecError):
        parse_spec({"kind": "stacked-v9", "weights": STACKED["weights"]})
    with pytest.raises(ScoreSpecError):
        parse_spec({"kind": "stacked-v1", "weights": {"intercept": 1.0}})
    row = {"label": "supported", "support": 0.7, "strength": 0.9}
    z = 0.5 + 1.2 * math.log(0.7 / 0.3) - 0.8 * 0.9
    assert flag_score(row, [], spec) == pytest.approx(1 / (1 + math.exp(-z)))
    assert flag_score(row, []) == 0.7  # no spec: the support, as before specs
    # forced claims stay -inf, claims without support stay None, a missing strength flags
    assert flag_score(row, ["check:numbers_match"], spec) == -math.inf
    assert flag_score({**row, "support": None}, [], spec) is None
    assert flag_score({**row, "strength": None}, [], spec) == -math.inf
    point = ActivePoint("v", "", "gold", 0.5, 0.9, 0.9, "s", score=spec.as_dict())
    assert point.flags(point.score_of({**row, "strength": None}, [])) is True
    plain = ActivePoint("v", "", "gold", 0.5, 0.9, 0.9, "s")
    assert plain.spec is None and plain.score_of(row, []) == 0.7


def test_a_spec_holds_the_strength_of_claims_read_in_a_held_language() -> None:
    """The strength weight was learnt on English claims: a claim read as Chinese (the claim
    and its evidence quotes, as the probe reads it) is scored with the held strength, so its
    flag score follows its support alone; English claims keep their own strength."""
    from judge.review.score import ScoreSpecError, parse_spec
    from judge.review.triage import flag_score

    raw = {**STACKED, "held_strength": {"rule": "han-share-half/v1", "by_language": {"zh": 0.7}}}
    spec = parse_spec(raw)
    assert spec is not None and spec.as_dict() == raw and parse_spec(spec.as_dict()) == spec
    plain = parse_spec(STACKED)
    assert plain is not None and plain != spec
    english = {"label": "supported", "support": 0.7, "strength": 0.2, "claim": "Python 3.11 "
               "added tomllib.", "evidence": [{"quote": "Python 3.11 added the tomllib module."}]}
    chinese = {**english, "claim": "東、中、西部地區發展存在不協調",
               "evidence": [{"quote": "東、中、西部地區要加強多種形式的合作，在協調發展中逐步實現共同富裕"}]}
    assert flag_score(english, [], spec) == flag_score(english, [], plain)
    assert flag_score(chinese, [], spec) == pytest.approx(plain.score(0.7, 0.7))
    assert flag_score({**chinese, "strength": 0.9}, [], spec) == flag_score(chinese, [], spec)
    assert flag_score(chinese, [], spec) != flag_score(chinese, [], plain)
    # evidence as the store keeps it (JSON text) reads the same; no strength still flags
    as_json = {**chinese, "evidence": json.dumps(chinese["evidence"])}
    assert flag_score(as_json, [], spec) == flag_score(chinese, [], spec)
    assert flag_score({**chinese, "strength": None}, [], spec) == -math.inf
    with pytest.raises(ScoreSpecError, match="needs the claim's text"):
        spec.score(0.7, 0.2)
    for bad in ({"rule": "nope", "by_language": {"zh": 0.7}},
                {"rule": "han-share-half/v1", "by_language": {"zh": "x"}},
                {"rule": "han-share-half/v1"}):
        with pytest.raises(ScoreSpecError, match="held_strength"):
            parse_spec({**STACKED, "held_strength": bad})


def stacked_point(store: Store, gold: Path, weights: dict[str, float]) -> tuple[Any, float]:
    """Set and store a 0.9/0.9 point under a stacked spec with ``weights``: (spec, threshold)."""
    from judge.evaluation.gold import read_gold
    from judge.evaluation.operating import gold_scores, set_point
    from judge.review.score import parse_spec

    spec = parse_spec({"kind": "stacked-v1", "weights": weights})
    data = gold_scores(store, read_gold(gold), spec=spec)
    point, row = set_point(store, data)
    assert json.loads(row["score"]) == STACKED | {"weights": weights}
    assert point.statement().startswith("support <")  # the model's own sentence
    assert row["report"]["statement"].startswith("stacked score <")
    return spec, float(point.threshold)


def test_a_queue_under_a_stacked_point_flags_the_rows_whose_stacked_score_is_below_it(
        judged: dict[str, Any], store: Store) -> None:
    from judge.config.review import ReviewSettings
    from judge.review.triage import active_point

    assert all(r["strength"] is not None for r in judged["rows"].values())
    # the fake judge's evidence is equally strong for every claim: spread it (seeded)
    rng = random.Random(7)
    with store.transaction():
        for r in judged["rows"].values():
            store.db.execute("update verdicts set strength = ? where id = ?",
                             [round(rng.uniform(0.2, 1.0), 3), r["id"]])
    rows = {r["claim"]: r for r in store.verdict_rows()}
    spec, threshold = stacked_point(store, judged["gold"], STACKED["weights"])
    version = store.judge_versions()[0]["id"]
    point = active_point(store, version, "archive", ReviewSettings())
    assert point.spec == spec and point.threshold == threshold  # read back from the store
    expected = {c for c, r in rows.items() if spec.score(r["support"], r["strength"])
                < threshold}
    summary = build_queue(store, options=QueueOptions(**NO_SAMPLES))
    assert flagged_claims(store, summary.queue_id) == expected
    assert summary.operating_points[0]["score"] == spec.as_dict()
    # another spec (strength weighs more) and its threshold flag other claims
    flipped = {"intercept": -3.0, "support_logit": 1.0, "strength": 6.0}
    spec2, threshold2 = stacked_point(store, judged["gold"], flipped)
    expected2 = {c for c, r in rows.items() if spec2.score(r["support"], r["strength"])
                 < threshold2}
    assert expected2 != expected
    again = build_queue(store, options=QueueOptions(**NO_SAMPLES))
    assert flagged_claims(store, again.queue_id) == expected2
    # the informative stratum takes the passed claims of lowest stacked score
    near = build_queue(store, options=QueueOptions(sample_rate=0.0, min_sample=0,
                                                   double_fraction=0.0,
                                                   informative_share=0.2))
    taken = {i["claim_id"] for i in queue_items(store, near.queue_id)
             if i["stratum"] == "near_threshold"}
    passed = sorted((spec2.score(r["support"], r["strength"]), r["claim_id"])
                    for c, r in rows.items() if c not in expected2)
    assert taken and taken == {cid for _, cid in passed[:len(taken)]}
    assert len(judged["fake"].calls) == judged["calls"]  # replayed: no model call


def test_a_packaged_stacked_point_is_carried_to_the_queue_and_queue_threshold_keeps_it(
        judged: dict[str, Any], store: Store, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.config.review import ReviewSettings
    from judge.review import triage

    package_point(tmp_path, monkeypatch, score=STACKED,
                  statement="stacked score < 0.42, set on 300 gold claims")
    version = store.judge_versions()[0]["id"]
    config = {"strategy": "probe", "probe_head": {"file": "builtin:x", "sha256": "f" * 64}}
    point = triage.active_point(store, version, "", ReviewSettings(), config)
    assert point.source == "default" and point.score == STACKED
    # `judge queue threshold` re-sets the threshold under the packaged point's spec
    monkeypatch.setattr(triage, "_head_sha", lambda config, domain: "f" * 64)
    cli("queue", "threshold", "--db", str(judged["db"]), "--gold", str(judged["gold"]),
        "--json")
    gold = triage.active_point(store, version, "", ReviewSettings(), config)
    assert gold.source == "gold" and gold.score == STACKED
    triage.packaged_points.cache_clear()


def test_every_packaged_point_file_reads_and_a_point_without_a_spec_is_on_support() -> None:
    from judge.review.score import parse_spec
    from judge.review.triage import PACKAGED

    files = sorted(PACKAGED.glob("*.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        for p in data["points"]:
            spec = parse_spec(p.get("score"))
            word = "support <" if spec is None else "stacked score <"
            assert p["statement"].startswith(word), path.name
    v4 = json.loads((PACKAGED / "qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v4.json")
                    .read_text(encoding="utf-8"))
    assert all("score" not in p for p in v4["points"])  # v4 stays on the support score
    v6 = json.loads((PACKAGED / "qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v6.json")
                    .read_text(encoding="utf-8"))
    held = {json.dumps(p["score"]["held_strength"], sort_keys=True) for p in v6["points"]}
    assert held == {json.dumps({"by_language": {"zh": 0.7183}, "rule": "han-share-half/v1"},
                               sort_keys=True)}  # v6's stacked score holds Chinese strength
