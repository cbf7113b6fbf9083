"""Error direction, the calibration report, human agreement and the HTML page."""

from __future__ import annotations

import json
import math
import re

import pytest
from pydantic import ValidationError

from calibration import (
    JUDGE_ERROR,
    LABELS,
    CalibrationItem,
    CalibrationReport,
    HumanLabel,
    build_calibration_report,
    check_thresholds,
    error_direction,
    human_agreement,
    lenient_rate,
    max_share_for_load,
    projected_load,
    render_calibration_html,
    strict_rate,
)
from calibration.render import REPORT_SCRIPT
from calibration.stats import cohen_kappa, krippendorff_alpha, wilson_bounds

S, C, N, V = LABELS

# Toy set: 4 gold-supported and 4 gold non-supported claims.
GOLD = [S, S, S, S, C, N, N, V]
JUDGED = [S, C, JUDGE_ERROR, S, S, S, N, V]
SUBTYPES = [None, None, None, None, "numeric_or_version_error", "unsupported_addition",
            "unsupported_addition", None]


# --------------------------------------------------------------------------- direction


def test_lenient_and_strict_on_a_toy_set():
    # lenient: gold non-supported = C, N, N, V; judged supported: C->S, N->S -> 2/4
    # strict: gold supported = 4; judged not supported: C and judge_error -> 2/4
    assert lenient_rate(GOLD, JUDGED).value == pytest.approx(0.5)
    assert strict_rate(GOLD, JUDGED).value == pytest.approx(0.5)
    d = error_direction(GOLD, JUDGED, gold_subtypes=SUBTYPES)
    assert d.lenient.n == 4 and d.strict.n == 4
    assert d.lenient_by_label[C].value == 1.0 and d.lenient_by_label[C].n == 1
    assert d.lenient_by_label[N].value == pytest.approx(0.5)
    assert d.lenient_by_label[V].value == 0.0
    assert d.lenient_by_subtype["numeric_or_version_error"].value == 1.0
    assert d.lenient_by_subtype["unsupported_addition"].value == pytest.approx(0.5)
    assert d.lenient_by_subtype["(unspecified)"].n == 1  # the V claim
    assert d.strict_by_subtype == {}  # no gold-supported claim has a subtype
    assert d.judge_errors == 1 and d.judge_errors_by_gold_label[S] == 1
    low, high = wilson_bounds(0.5, 4)
    assert (d.lenient.ci_low, d.lenient.ci_high) == (pytest.approx(low), pytest.approx(high))


def test_judge_error_fails_closed():
    # a judge error on a hallucination is not a miss (it goes to review) ...
    assert lenient_rate([C, C], [JUDGE_ERROR, S]).value == pytest.approx(0.5)
    # ... and on a supported claim it costs review time
    assert strict_rate([S, S], [JUDGE_ERROR, S]).value == pytest.approx(0.5)


def test_weighted_direction_uses_kish_effective_n():
    # lenient over C, N, N, V with weights 2, 2, 1, 1: hits C and first N -> (2+2)/6
    # Kish n_eff = 6^2 / (4 + 4 + 1 + 1) = 3.6
    weights = [1, 1, 1, 1, 2, 2, 1, 1]
    e = lenient_rate(GOLD, JUDGED, weights=weights)
    assert e.value == pytest.approx(4 / 6) and e.n == 4
    low, high = wilson_bounds(4 / 6, 3.6)
    assert (e.ci_low, e.ci_high) == (pytest.approx(low), pytest.approx(high))


def test_no_gold_non_supported_gives_nan_not_zero():
    e = lenient_rate([S, S], [S, C])
    assert math.isnan(e.value) and e.n == 0


# --------------------------------------------------------------------------- report


def _items(**overrides) -> list[CalibrationItem]:
    in_queue = [False, True, True, False, False, True, True, True]
    return [
        CalibrationItem(claim_id=f"c{i}", gold_label=g, gold_subtype=s, judge_label=j,
                        judge_subtype=s if j not in (S, JUDGE_ERROR) else None,
                        in_queue=q, **overrides)
        for i, (g, j, s, q) in enumerate(zip(GOLD, JUDGED, SUBTYPES, in_queue, strict=True))
    ]


def test_report_core_figures_by_hand():
    r = build_calibration_report(_items(), judge_version="judge-v1", declined=2)
    assert r.n == 8 and r.declined == 2 and r.judge_version == "judge-v1"
    assert r.confusion[S] == {S: 2, C: 1, N: 0, V: 0, JUDGE_ERROR: 1}
    assert r.confusion[N][S] == 1 and r.confusion[N][N] == 1
    assert sum(sum(row.values()) for row in r.confusion.values()) == 8
    # correct: c0 and c3 (S), c6 (N), c7 (V) -> 4/8
    assert r.accuracy.value == pytest.approx(4 / 8) and r.accuracy.n == 8
    # recalls: S 2/4, C 0/1, N 1/2, V 1/1 -> (0.5 + 0 + 0.5 + 1) / 4 = 0.5
    assert r.balanced_accuracy.value == pytest.approx(0.5)
    assert r.kappa.value == pytest.approx(cohen_kappa(GOLD, JUDGED).value)
    assert r.lenient_rate.value == pytest.approx(0.5)
    assert r.strict_rate.value == pytest.approx(0.5)
    # queue recall: gold non-supported c4..c7, in queue c5, c6, c7 -> 3/4
    # (c4, the missed contradiction, was judged supported and not queued)
    assert r.queue_recall.value == pytest.approx(0.75) and r.queue_recall.n == 4
    # queue load: 5 of 8 claims go to people
    assert r.queue_load.value == pytest.approx(5 / 8)
    # false alarms: of the 4 gold-supported claims, the queue sends the other 2 of the 5
    assert r.queue_false_alarm.value == pytest.approx(2 / 4) and r.queue_false_alarm.n == 4
    # the load follows from recall and false alarms at any label mix (here: half rejected)
    assert projected_load(r.queue_recall.value, r.queue_false_alarm.value, 0.5) == \
        pytest.approx(r.queue_load.value)
    assert projected_load(0.9, 0.1, 0.2) == pytest.approx(0.26)
    # at the largest share the load target allows, the projected load is exactly the target
    limit = max_share_for_load(0.9, 0.3, 0.5)
    assert limit == pytest.approx(1 / 3)
    assert projected_load(0.9, 0.3, limit) == pytest.approx(0.5)
    assert max_share_for_load(0.9, 0.56, 0.5) is None  # false alarms alone exceed it
    assert max_share_for_load(0.4, 0.2, 0.5) == 1.0  # never above it
    assert max_share_for_load(0.3, 0.6, 0.5) == 1.0  # falls as the share grows
    with pytest.raises(ValueError):
        projected_load(0.9, 0.1, 1.5)
    assert r.judge_errors == 1
    assert r.per_subtype["unsupported_addition"].value == pytest.approx(0.5)
    # subtype agreement: only c6 has gold and judge subtypes (both unsupported_addition)
    assert r.subtype_agreement.value == 1.0 and r.subtype_agreement.n == 1
    assert r.weighted is None  # all weights 1
    assert r.per_dataset == {}  # a single dataset
    assert r.human_agreement is None


def test_report_json_round_trip_with_undefined_values():
    items = _items(dataset="d1")[:4]  # gold supported only: lenient rate undefined
    r = build_calibration_report(items, judge_version="v")
    assert math.isnan(r.lenient_rate.value)
    dumped = r.model_dump()
    text = json.dumps(dumped, allow_nan=False)  # would raise on NaN
    loaded = json.loads(text)
    assert loaded["lenient_rate"]["value"] is None
    assert loaded["per_label"][V]["precision"]["value"] is None
    again = CalibrationReport.model_validate(loaded)
    assert math.isnan(again.lenient_rate.value)
    assert again.model_dump() == dumped
    assert again.confusion == r.confusion


def test_report_weighted_with_the_seed_design():
    # seed 000 shape with our labels: pass stratum 20 of 64 claims (weight 3.2): 1 supported,
    # 19 not_in_source; flagged stratum fully labelled (weight 1): 12 supported,
    # 118 not_in_source, 1 not_verifiable. Everything judged as gold, queued when flagged.
    items = []
    for k, gold in enumerate([S] + [N] * 19):
        items.append(CalibrationItem(claim_id=f"p{k}", gold_label=gold, judge_label=gold,
                                     in_queue=False, weight=3.2, stratum="pass"))
    for k, gold in enumerate([S] * 12 + [N] * 118 + [V]):
        items.append(CalibrationItem(claim_id=f"f{k}", gold_label=gold, judge_label=gold,
                                     in_queue=True, weight=1.0, stratum="flagged"))
    r = build_calibration_report(items, judge_version="v", n_resamples=200)
    w = r.weighted
    assert w is not None
    assert w.design.stratum("pass").weight == pytest.approx(3.2)
    assert w.gold_label_shares[S].weighted_count == pytest.approx(15.2)
    assert w.gold_label_shares[N].weighted_count == pytest.approx(178.8)
    assert w.gold_label_shares[S].value == pytest.approx(15.2 / 195)
    # the queue sends only the flagged 131 of the 195 claims: weighted load 131/195,
    # while the unweighted load (131 of 151 labelled) overstates it
    assert w.queue_load.value == pytest.approx(131 / 195)
    assert r.queue_load.value == pytest.approx(131 / 151)
    # weighted queue recall: non-supported claims 3.2*19 + 119 = 179.8, queued 119
    assert w.queue_recall.value == pytest.approx(119 / 179.8)
    json.dumps(r.model_dump(), allow_nan=False)


def test_report_per_dataset_only_with_several_datasets():
    items = _items()
    mixed = [i.model_copy(update={"dataset": "wice" if k < 4 else "dialfact"})
             for k, i in enumerate(items)]
    r = build_calibration_report(mixed, judge_version="v", n_resamples=100)
    assert set(r.per_dataset) == {"wice", "dialfact"}
    assert r.per_dataset["wice"].n == 4
    assert math.isnan(r.per_dataset["wice"].lenient_rate.value)  # no non-supported gold
    assert r.per_dataset["dialfact"].lenient_rate.value == pytest.approx(0.5)


def test_report_rejects_bad_input_and_notes_silent_judge_errors():
    with pytest.raises(ValidationError):
        CalibrationItem(claim_id="x", gold_label="partially_supported", judge_label=S,
                        in_queue=False)
    with pytest.raises(ValidationError):
        CalibrationItem(claim_id="x", gold_label=S, judge_label="error", in_queue=True)
    with pytest.raises(ValueError, match="twice"):
        build_calibration_report(_items() + _items()[:1], judge_version="v")
    silent = CalibrationItem(claim_id="e", gold_label=S, judge_label=JUDGE_ERROR,
                             in_queue=False)
    r = build_calibration_report([silent], judge_version="v")
    assert any("fail-closed" in note for note in r.notes)


def test_calibration_thresholds():
    r = build_calibration_report(_items(), judge_version="v", n_resamples=100)
    violations = check_thresholds(r, {"lenient_rate_above": 0.1, "accuracy_below": 0.2,
                                      "judge_errors_above": 0})
    assert [v.name for v in violations] == ["lenient_rate_above", "judge_errors_above"]
    assert "lenient rate" in violations[0].message and "0.5" in violations[0].message
    with pytest.raises(ValueError, match="unknown"):
        check_thresholds(r, {"lenient_rate_increase": 0.05})  # a drift threshold


# --------------------------------------------------------------------------- people


def test_human_agreement_two_annotators_is_cohen_kappa():
    # 2×2 table [[20, 5], [10, 15]] between annotators ann and bob -> kappa 0.4
    a = [S] * 25 + [C] * 25
    b = [S] * 20 + [C] * 5 + [S] * 10 + [C] * 15
    labels = [HumanLabel(claim_id=f"c{i}", annotator="ann", label=x) for i, x in enumerate(a)]
    labels += [HumanLabel(claim_id=f"c{i}", annotator="bob", label=x) for i, x in enumerate(b)]
    h = human_agreement(labels)
    assert h.method == "cohen_kappa"
    assert h.value.value == pytest.approx(0.4) and h.n_items == 50
    assert h.pairwise[0].agreement.value == pytest.approx(0.7)
    assert h.self_agreement == []


def test_human_agreement_three_annotators_and_self_agreement():
    per_claim = {"c1": [S, S, S], "c2": [C, C, N], "c3": [N, N, N], "c4": [S, C, None]}
    labels = [
        HumanLabel(claim_id=c, annotator=who, label=x)
        for c, values in per_claim.items()
        for who, x in zip(["ann", "bob", "cy"], values, strict=True) if x is not None
    ]
    # ann labels c1 again, differently, and c3 again, identically: self-agreement 1/2.
    # The repeats must not change the inter-annotator figures.
    labels += [HumanLabel(claim_id="c1", annotator="ann", label=C),
               HumanLabel(claim_id="c3", annotator="ann", label=N),
               HumanLabel(claim_id="c9", annotator="bob", label=S)]  # single annotator
    h = human_agreement(labels)
    assert h.method == "krippendorff_alpha"
    assert h.annotators == ["ann", "bob", "cy"]
    assert h.n_items == 4
    expected = krippendorff_alpha(list(per_claim.values()))
    assert h.value.value == pytest.approx(expected.value)
    assert len(h.pairwise) == 3
    [own] = h.self_agreement
    assert own.annotator == "ann" and own.agreement.value == pytest.approx(0.5)
    assert own.agreement.n == 2
    assert any("self-agreement" in note and "'ann'" in note for note in h.notes)
    assert any("one annotator only" in note for note in h.notes)


def test_human_agreement_is_kept_apart_in_the_report():
    labels = [HumanLabel(claim_id="c0", annotator="ann", label=S),
              HumanLabel(claim_id="c0", annotator="bob", label=S),
              HumanLabel(claim_id="c1", annotator="ann", label=C),
              HumanLabel(claim_id="c1", annotator="bob", label=S)]
    r = build_calibration_report(_items(), judge_version="v", human_labels=labels,
                                 n_resamples=50)
    assert r.human_agreement is not None and r.human_agreement.n_items == 2
    # judge-vs-gold kappa is unchanged by the human labels
    assert r.kappa.value == pytest.approx(cohen_kappa(GOLD, JUDGED).value)


# --------------------------------------------------------------------------- HTML


def _cells(html: str, table_id: str) -> list[list[str]]:
    table = re.search(rf'<table class="confusion" id="{table_id}">(.*?)</table>', html, re.S)
    assert table, f"no table {table_id}"
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                   row, re.S)] for row in rows]


def test_html_has_the_confusion_matrix_and_escapes_text():
    items = [i.model_copy(update={"dataset": "<script>alert(1)</script>" if k % 2 else "ok"})
             for k, i in enumerate(_items())]
    r = build_calibration_report(items, judge_version='v1"><script>x</script>',
                                 n_resamples=50)
    html = render_calibration_html(r)
    # the page's one script is the fixed filter script, with no data in it
    assert html.count(f"<script>{REPORT_SCRIPT}</script>") == 1
    assert "<script" not in html.replace(f"<script>{REPORT_SCRIPT}</script>", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    cells = _cells(html, "confusion")
    # header row has no <td>; then one row per gold label: 5 judge columns + total
    assert cells[1] == ["2", "1", "0", "0", "1", "4"]  # gold supported
    assert cells[2] == ["1", "0", "0", "0", "0", "1"]  # gold contradicted
    assert cells[3] == ["1", "0", "1", "0", "0", "2"]  # gold not_in_source
    assert "<svg" in html and "50.0%" in html  # lenient rate bar and value
    assert "http://" not in html and "https://" not in html  # self-contained
    assert 'id="dataset-1-confusion"' in html  # per-dataset tables


def test_html_shows_weighted_strata():
    items = [CalibrationItem(claim_id=f"p{k}", gold_label=S, judge_label=S, in_queue=False,
                             weight=2, stratum="pass") for k in range(4)]
    items += [CalibrationItem(claim_id="f", gold_label=C, judge_label=C, in_queue=True,
                              stratum="flagged")]
    r = build_calibration_report(items, judge_version="v", population={"pass": 8,
                                 "flagged": 1, "never": 5}, n_resamples=50)
    html = render_calibration_html(r)
    assert "not sampled" in html and "never" in html
    assert "5 claims in strata that were not" in html


def test_queue_budget_counts_rejected_claims_in_the_first_part_of_the_reading_order():
    # 8 claims, 4 gold non-supported; reading order: N(1) S(2) C(3) V(4) N(5) — 3 not queued
    gold = [N, S, C, V, N, S, S, S]
    positions = [1, 2, 3, 4, 5, None, None, None]
    items = [CalibrationItem(claim_id=f"c{i}", gold_label=g, judge_label=g if g != S else C,
                             in_queue=p is not None, queue_position=p)
             for i, (g, p) in enumerate(zip(gold, positions, strict=True))]
    report = build_calibration_report(items, judge_version="j", n_resamples=50)
    budget = report.queue_budget
    # 25% of 8 = the first 2 read: N, S -> 1 of 4; 50% = first 4: N, S, C, V -> 3 of 4
    assert budget["25%"].value == pytest.approx(0.25) and budget["25%"].n == 4
    assert budget["50%"].value == pytest.approx(0.75)
    # the order matters, not the ids: reversing the positions changes the figure
    flipped = [i.model_copy(update={"queue_position": 6 - i.queue_position})
               if i.queue_position else i for i in items]
    assert build_calibration_report(flipped, judge_version="j", n_resamples=50
                                    ).queue_budget["25%"].value == pytest.approx(0.5)
    # without positions there is no budget figure (not a made-up one)
    plain = [i.model_copy(update={"queue_position": None}) for i in items]
    assert build_calibration_report(plain, judge_version="j", n_resamples=50).queue_budget == {}


def test_queue_points_move_only_the_supported_claims_below_the_threshold():
    # (gold, judge label, support, flagged otherwise)
    rows = [(S, S, 0.90, False), (S, S, 0.42, False), (S, C, 0.20, True), (S, S, 0.95, True),
            (N, S, 0.33, False), (N, S, 0.80, False), (C, C, 0.10, True), (V, N, 0.45, True)]
    items = [CalibrationItem(claim_id=f"c{i}", gold_label=g, judge_label=j, support=p,
                             flagged=f, in_queue=f or p < 0.5)
             for i, (g, j, p, f) in enumerate(rows)]
    report = build_calibration_report(items, judge_version="j", n_resamples=50)
    points = {p.review_support_below: p for p in report.queue_points}
    # at 0.3: only flagged claims -> rejected caught: C, V (2 of 4); supported sent: c2, c3
    assert points[0.3].recall.value == pytest.approx(0.5)
    assert points[0.3].false_alarm.value == pytest.approx(0.5)
    # at 0.35 the N claim with support 0.33 joins; at 0.45 the supported 0.42 one too
    assert points[0.35].recall.value == pytest.approx(0.75)
    assert points[0.45].false_alarm.value == pytest.approx(0.75)
    # the configured threshold (0.5 here) reproduces the queue as measured
    assert points[0.5].recall.value == report.queue_recall.value
    assert points[0.5].load.value == report.queue_load.value
    # not known -> no points rather than guessed ones
    unknown = [i.model_copy(update={"flagged": None}) for i in items]
    assert build_calibration_report(unknown, judge_version="j", n_resamples=50).queue_points == []
