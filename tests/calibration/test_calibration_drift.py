"""Drift between two judge versions: flips, agreement, tests, gold, thresholds, HTML."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from pydantic import ValidationError

from calibration import (
    JUDGE_ERROR,
    JUDGE_LABELS,
    LABELS,
    DriftPair,
    DriftReport,
    build_drift_report,
    check_thresholds,
    drift_verdict,
    render_drift_html,
)
from calibration.render import REPORT_SCRIPT
from calibration.stats import bowker, stuart_maxwell

S, C, N, V = LABELS
E = JUDGE_ERROR

# claim, gold, A, B
ROWS = [
    ("1", S, S, S),
    ("2", S, S, S),
    ("3", S, S, C),  # away from gold (B now strict)
    ("4", C, C, S),  # away from gold (B now lenient)
    ("5", C, C, C),
    ("6", N, S, S),  # lenient under both
    ("7", N, N, S),  # away (B lenient)
    ("8", N, N, N),
    ("9", V, V, N),  # away
    ("10", V, E, V),  # toward gold (A failed, B right)
]


def _pairs(with_gold: bool = True) -> list[DriftPair]:
    return [
        DriftPair(claim_id=c, label_a=a, label_b=b, rationale_a=f"A on {c}",
                  rationale_b=f"B on {c}", gold_label=g if with_gold else None)
        for c, g, a, b in ROWS
    ]


@pytest.fixture(scope="module")
def report() -> DriftReport:
    return build_drift_report(_pairs(), version_a="judge-a", version_b="judge-b", seed=11)


def test_flip_table_and_flipped_claims(report):
    assert report.n == 10 and report.n_flipped == 5
    assert report.flips[S][S] == 3  # claims 1, 2, 6
    assert report.flips[S][C] == 1 and report.flips[C][S] == 1
    assert report.flips[N][S] == 1 and report.flips[V][N] == 1 and report.flips[E][V] == 1
    assert sum(sum(row.values()) for row in report.flips.values()) == 10
    flipped = {f.claim_id: f for f in report.flipped}
    assert set(flipped) == {"3", "4", "7", "9", "10"}
    assert flipped["4"].label_a == C and flipped["4"].label_b == S
    assert flipped["4"].rationale_b == "B on 4"
    assert flipped["10"].toward_gold == "toward"
    assert {flipped[c].toward_gold for c in ("3", "4", "7", "9")} == {"away"}


def test_agreement_and_kappa_by_hand(report):
    assert report.agreement.value == pytest.approx(0.5) and report.agreement.n == 10
    # categories S, C, N, V, E; diagonal 3 + 1 + 1 + 0 + 0 = 5
    # A marginals S4 C2 N2 V1 E1; B marginals S5 C2 N2 V1 E0
    # sum(a * b) = 20 + 4 + 4 + 1 + 0 = 29; kappa = (10*5 - 29) / (100 - 29) = 21/71
    assert report.kappa.value == pytest.approx(21 / 71)
    assert report.kappa.ci_low < 21 / 71 < report.kappa.ci_high


def test_significance_tests(report):
    # supported vs not: A-only supported {3}, B-only supported {4, 7}: b = 1, c = 2
    # exact: p = min(1, 2 * P(X <= 1 | Bin(3, 1/2))) = min(1, 2 * 4/8) = 1
    assert report.mcnemar.method.startswith("exact")
    assert report.mcnemar.statistic == 1 and report.mcnemar.p_value == 1.0
    table = np.array([[report.flips[a][b] for b in JUDGE_LABELS] for a in JUDGE_LABELS])
    assert report.stuart_maxwell.statistic == pytest.approx(stuart_maxwell(table).statistic)
    assert report.stuart_maxwell.df == 4  # five used categories
    # Bowker: pairs (S,C) 1 vs 1 -> 0; (S,N) 0 vs 1 -> 1; (N,V) 0 vs 1 -> 1; (V,E) 1 vs 0 -> 1
    assert report.bowker.statistic == pytest.approx(3.0) and report.bowker.df == 4
    assert report.bowker.p_value == pytest.approx(bowker(table).p_value)


def test_label_rate_changes(report):
    sup = report.per_label[S]
    assert sup.rate_a.value == pytest.approx(0.4) and sup.rate_b.value == pytest.approx(0.5)
    assert sup.change.value == pytest.approx(0.1)
    assert sup.change.ci_low < 0.1 < sup.change.ci_high
    err = report.per_label[E]
    assert err.rate_a.value == pytest.approx(0.1) and err.rate_b.value == 0.0


def test_versions_against_gold_side_by_side(report):
    g = report.gold
    assert g is not None and g.n == 10
    # A right on 1, 2, 3, 4, 5, 7, 8, 9 -> 0.8; B right on 1, 2, 5, 8, 10 -> 0.5
    assert g.accuracy.rate_a.value == pytest.approx(0.8)
    assert g.accuracy.rate_b.value == pytest.approx(0.5)
    assert g.accuracy.change.value == pytest.approx(-0.3)
    # lenient over gold non-supported 4..10 (7): A supported on 6 -> 1/7; B on 4, 6, 7 -> 3/7
    assert g.lenient.rate_a.value == pytest.approx(1 / 7)
    assert g.lenient.rate_b.value == pytest.approx(3 / 7)
    assert g.lenient.change.value == pytest.approx(2 / 7) and g.lenient.change.n == 7
    # strict over gold supported 1..3: A 0/3, B 1/3 (claim 3)
    assert g.strict.change.value == pytest.approx(1 / 3)
    assert (g.toward_gold, g.away_from_gold, g.neither) == (1, 4, 0)


def test_thresholds_violated_and_passed(report):
    fail_on = {"lenient_rate_increase": 0.05, "kappa_below": 0.6, "accuracy_drop": 0.05}
    violations = check_thresholds(report, fail_on)
    assert [v.name for v in violations] == list(fail_on)
    by_name = {v.name: v for v in violations}
    assert by_name["accuracy_drop"].observed == pytest.approx(0.3)
    assert by_name["lenient_rate_increase"].observed == pytest.approx(2 / 7)
    assert "0.2857" in by_name["lenient_rate_increase"].message
    assert by_name["kappa_below"].observed == pytest.approx(21 / 71)
    lenient = {"lenient_rate_increase": 0.3, "kappa_below": 0.2, "accuracy_drop": 0.35,
               "flip_rate_above": 0.5}
    assert check_thresholds(report, lenient) == []
    assert [v.name for v in check_thresholds(report, {"flip_rate_above": 0.4})] == [
        "flip_rate_above"
    ]
    with pytest.raises(ValueError, match="unknown drift threshold"):
        check_thresholds(report, {"lenient_rate_incraese": 0.05})


def test_thresholds_without_gold_fail_closed():
    report = build_drift_report(_pairs(with_gold=False), version_a="a", version_b="b",
                                n_resamples=50)
    assert report.gold is None
    assert all(f.toward_gold is None for f in report.flipped)
    [v] = check_thresholds(report, {"accuracy_drop": 0.05})
    assert "cannot be checked" in v.message and "no gold" in v.message


def test_drift_json_round_trip(report):
    dumped = report.model_dump()
    loaded = json.loads(json.dumps(dumped, allow_nan=False))
    assert DriftReport.model_validate(loaded).model_dump() == dumped


def test_drift_input_validation():
    with pytest.raises(ValidationError):
        DriftPair(claim_id="x", label_a="supported", label_b="unsure")
    with pytest.raises(ValidationError):
        DriftPair(claim_id="x", label_a=S, label_b=S, gold_label=JUDGE_ERROR)
    twice = _pairs()[:2] + _pairs()[:1]
    with pytest.raises(ValueError, match="twice"):
        build_drift_report(twice, version_a="a", version_b="b")


def test_no_flips_at_all():
    pairs = [DriftPair(claim_id=str(i), label_a=x, label_b=x) for i, x in enumerate([S, C, N])]
    r = build_drift_report(pairs, version_a="a", version_b="b", n_resamples=50)
    assert r.n_flipped == 0 and r.flipped == []
    assert r.mcnemar.p_value == 1.0 and r.stuart_maxwell.p_value == 1.0
    assert r.kappa.value == pytest.approx(1.0)


def test_drift_html_escapes_and_shows_the_flip_table(report):
    pairs = _pairs()
    pairs[2] = pairs[2].model_copy(update={
        "claim_id": "<script>alert('id')</script>",
        "rationale_b": "B says <img src=x onerror=alert(1)> & more",
    })
    r = build_drift_report(pairs, version_a="a<b>", version_b="b", n_resamples=50)
    violations = check_thresholds(r, {"kappa_below": 0.6})
    html = render_drift_html(r, violations)
    assert html.count(f"<script>{REPORT_SCRIPT}</script>") == 1  # the fixed filter script
    html = html.replace(f"<script>{REPORT_SCRIPT}</script>", "")
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#39;id&#39;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; more" in html
    assert "a&lt;b&gt;" in html
    assert "kappa_below 0.6" in html
    table = re.search(r'<table class="confusion" id="flips">(.*?)</table>', html, re.S)
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)
    supported_row = [re.sub(r"<[^>]+>", "", c).strip()
                     for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[1], re.S)]
    assert supported_row == ["3", "1", "0", "0", "0", "4"]  # A supported -> B ...
    assert "Flips toward gold: 1; away from gold: 4" in html


def _gold_pairs(right_a: int, right_b: int, n: int = 200) -> list[DriftPair]:
    """``n`` gold-supported claims: A labels the first ``right_a`` supported, B the first
    ``right_b`` (the rest not_in_source)."""
    return [DriftPair(claim_id=f"c{k}", label_a=S if k < right_a else N,
                      label_b=S if k < right_b else N, gold_label=S) for k in range(n)]


def test_the_verdict_names_the_version_that_agrees_more_with_people():
    worse = build_drift_report(_gold_pairs(160, 120), version_a="a", version_b="b")
    g = worse.gold
    assert g is not None and g.accuracy.change.ci_high < 0
    text = drift_verdict(worse)
    assert text.startswith("B agrees with people less than A: accuracy 80.0% \u2192 60.0%, "
                           "\u221220.0 [\u2212")
    assert text.endswith(f"points on 200 gold claims; {g.toward_gold} flips toward gold, "
                         f"{g.away_from_gold} away.")
    assert g.away_from_gold == 40 and g.toward_gold == 0
    better = drift_verdict(build_drift_report(_gold_pairs(120, 160), version_a="a",
                                              version_b="b"))
    assert better.startswith("B agrees with people more than A: accuracy 60.0% \u2192 80.0%, "
                             "+20.0 [+")
    close = drift_verdict(build_drift_report(_gold_pairs(150, 149), version_a="a",
                                             version_b="b"))
    assert close.startswith("B agrees with people about as much as A (the interval of the "
                            "difference includes 0)")
    blind = drift_verdict(build_drift_report(_pairs(with_gold=False), version_a="a",
                                             version_b="b"))
    assert blind.startswith("Without gold labels this report cannot say which version "
                            "agrees more with people")


def test_the_drift_page_opens_with_its_verdict_and_names_the_versions():
    page = render_drift_html(build_drift_report(_gold_pairs(160, 120), version_a="a",
                                                version_b="b"))
    assert page.index("B agrees with people less than A") < page.index('<nav class="contents">')
    titles = re.findall(r'<li><a href="#[^"]+">([^<]+)</a>', page)
    assert titles and len(set(titles)) == len(titles)
    assert all(re.search(r"\b(A|B)\b", t) for t in titles), titles
