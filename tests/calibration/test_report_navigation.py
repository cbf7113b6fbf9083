"""Calibration and drift pages people can read: chart labels that fit their charts, a
contents list, collapsible sections and a text filter over long lists of claims."""

from __future__ import annotations

import re

from calibration import build_calibration_report, render_calibration_html
from calibration.plots import heatmap, interval_bars, text_width
from calibration.render import COLLAPSE_ROWS, navigable
from calibration.results import Estimate
from judge.evaluation.reports import inject_html
from tests.calibration.test_calibration_report import _items


def _overflows(svg: str) -> list[str]:
    """Texts (not turned) that reach past the left or right edge of the chart."""
    width = float(re.search(r'<svg width="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    bad = []
    for m in re.finditer(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)" ([^>]*)>(.*?)</text>',
                         svg):
        x, anchor, extra, text = float(m[1]), m[2], m[3], m[4]
        if "rotate" in extra:
            continue
        w = text_width(text.replace("&amp;", "&"))
        lo, hi = {"start": (x, x + w), "end": (x - w, x), "middle": (x - w / 2, x + w / 2)}[anchor]
        if lo < 0 or hi > width:
            bad.append(text)
    return bad


def test_interval_bar_labels_fit_their_chart() -> None:
    estimates = {
        "numeric_or_version_error": Estimate(value=0.53, ci_low=0.47, ci_high=0.58, n=335),
        "supported": Estimate(value=1.0, ci_low=0.9, ci_high=1.0, n=12345),
        "中文資料集的很長名稱": Estimate(value=0.1, ci_low=0.0, ci_high=0.3, n=7),
    }
    svg = str(interval_bars(estimates, "recall"))
    assert "53% n=335" in svg and "100% n=12345" in svg
    assert _overflows(svg) == []


def test_heatmap_row_labels_fit() -> None:
    labels = ["supported", "numeric_or_version_error", "not_verifiable"]
    table = {r: {c: 3 for c in labels} for r in labels}
    assert _overflows(str(heatmap(table, labels, labels, "gold", "judge", "t"))) == []


def test_report_has_contents_collapsible_sections_and_collapsed_datasets() -> None:
    items = [i.model_copy(update={"dataset": "wice" if k % 2 else "dialfact"})
             for k, i in enumerate(_items())]
    html = render_calibration_html(build_calibration_report(items, judge_version="v1",
                                                            n_resamples=50))
    nav = re.search(r'<nav class="contents">(.*?)</nav>', html, re.S).group(1)  # type: ignore[union-attr]
    targets = re.findall(r'href="#([^"]+)"', nav)
    assert len(targets) >= 2
    for ident in targets:
        assert f'<details class="section" id="{ident}"' in html
    assert html.count('<details class="dataset">') == 2
    assert re.search(r'<details class="section" id="per-dataset" open>', html)  # lists them
    assert "<summary><h3>Dataset dialfact</h3></summary>" in html
    assert navigable(html) == html  # idempotent


def _claims_page(rows: int) -> str:
    body = "".join(f"<tr><td>claim number {k}</td></tr>" for k in range(rows))
    return ("<html><head></head><body><h1>r</h1><h2>Summary</h2><p>x</p>"
            '<h2 id="misjudged">Claims the judge got wrong</h2>'
            f'<table id="misjudged-claims"><tr><th>claim</th></tr>{body}</table></body></html>')


def test_long_claim_lists_are_collapsed_filterable_and_counted_in_the_contents() -> None:
    page = navigable(_claims_page(300))
    assert '<details class="section" id="summary" open>' in page
    # collapsed; the contents list and the filter count the same rows (the header is none)
    assert '<details class="section" id="misjudged" data-rows="300">' in page
    assert "(300 rows, collapsed)" in page
    assert 'class="filter" data-table="misjudged-claims" hidden' in page
    assert "Filter these 300 rows" in page
    short = navigable(_claims_page(COLLAPSE_ROWS - 5))
    assert '<details class="section" id="misjudged" open>' in short
    # a section added later (the evaluation's extra sections) joins the contents
    more = inject_html(page, "<h2>Reliability of support</h2><p>...</p>")
    assert more.count('<nav class="contents">') == 1
    assert 'href="#reliability-of-support"' in more
    assert '<details class="section" id="reliability-of-support" open>' in more
    assert more.count("<script>") == 1


def test_each_version_s_claim_table_gets_its_own_filter_with_the_same_count() -> None:
    """A drift page holds one table of misjudged claims per version (``-a``, ``-b``): each
    gets a filter, and a header row of ``<th>`` cells (row labels included) is no row."""
    table = ('<table id="misjudged-claims-{v}"><tr><th class="l">claim</th><th>x</th></tr>'
             + "".join(f'<tr><th class="l">c{k}</th><td>{k}</td></tr>' for k in range(50))
             + "</table>")
    page = navigable("<html><head></head><body><h1>r</h1>"
                     + "".join(f'<h2 id="misjudged-{v}">Version {v}</h2>' + table.format(v=v)
                               for v in "ab") + "</body></html>")
    for v in "ab":
        assert f'data-table="misjudged-claims-{v}"' in page
    assert page.count("Filter these 50 rows") == 2
    assert page.count("(50 rows, collapsed)") == 2
