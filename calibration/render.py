"""Self-contained HTML pages for calibration and drift reports.

One file each, no external JS or CSS: inline styles, charts as inline SVG (bars with their
interval as a black whisker, the confusion heatmap, per-label recall, the queue's recall
against its load, the drift flip matrix: :mod:`calibration.plots`). Templates are rendered
by Jinja2 with autoescaping on, so claim ids, rationales, dataset names and notes are always
escaped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from jinja2 import DictLoader, Environment, StrictUndefined
from markupsafe import Markup

from calibration import plots
from calibration.drift import DriftReport, drift_verdict
from calibration.formatting import defined, num, pct, pvalue
from calibration.labels import JUDGE_LABELS, LABELS
from calibration.report import CalibrationReport
from calibration.results import Estimate
from calibration.thresholds import ThresholdViolation

_BAR_WIDTH = 160


_defined = defined
_pvalue = pvalue


def _pct(x: float | None) -> str:
    return pct(x, 1)


def _num(x: float | None, digits: int = 3) -> str:
    return num(x, digits)


def _ci(e: Estimate, fmt: str = "pct") -> str:
    f = _pct if fmt == "pct" else _num
    if not (_defined(e.ci_low) and _defined(e.ci_high)):
        return "—"
    return f"{f(e.ci_low)} – {f(e.ci_high)}"


def _bar(e: Estimate, lo: float = 0.0, hi: float = 1.0) -> dict[str, Any] | None:
    """Geometry of an SVG bar for ``e`` on the scale ``[lo, hi]`` (``None`` if undefined)."""
    if not _defined(e.value):
        return None

    def x(v: float) -> float:
        return round(_BAR_WIDTH * (min(max(v, lo), hi) - lo) / (hi - lo), 1)

    zero = x(0.0) if lo < 0 else 0.0
    geometry = {"x": min(zero, x(e.value)), "w": round(abs(x(e.value) - zero), 1), "zero": zero,
                "lo": None, "hi": None, "width": _BAR_WIDTH}
    if _defined(e.ci_low) and _defined(e.ci_high):
        geometry["lo"], geometry["hi"] = x(e.ci_low), x(e.ci_high)
    return geometry


def _conf(confidence: float) -> str:
    return f"{100 * confidence:g}%"


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;
max-width:1100px;color:#1d1d1f;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0 1rem}
th,td{border:1px solid #d0d0d0;padding:.25rem .5rem;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.l,th.l{text-align:left}
td.diag{background:#e6f4ea;font-weight:600}td.err{background:#fdecea}
.note{color:#8a4b00}.muted{color:#666}.bad{color:#b00020;font-weight:600}
.rationale{max-width:320px;text-align:left;white-space:pre-wrap;word-break:break-word}
svg{vertical-align:middle}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start;margin:.5rem 0}
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK TC","Noto Sans CJK SC",
"PingFang TC","Microsoft JhengHei",sans-serif}
"""

_MACROS = """
{% macro bar(e, lo=0.0, hi=1.0) -%}
{%- set g = geom(e, lo, hi) -%}
{%- if g -%}
<svg width="{{ g.width }}" height="14" role="img" aria-label="bar">
<rect x="0" y="0" width="{{ g.width }}" height="14" fill="#f1f1f1"/>
<rect x="{{ g.x }}" y="2" width="{{ g.w }}" height="10" fill="#5b8def"/>
{%- if lo < 0 %}<line x1="{{ g.zero }}" y1="0" x2="{{ g.zero }}" y2="14" stroke="#999"/>{% endif %}
{%- if g.lo is not none %}
<line x1="{{ g.lo }}" y1="7" x2="{{ g.hi }}" y2="7" stroke="#000" stroke-width="1.5"/>
<line x1="{{ g.lo }}" y1="3" x2="{{ g.lo }}" y2="11" stroke="#000"/>
<line x1="{{ g.hi }}" y1="3" x2="{{ g.hi }}" y2="11" stroke="#000"/>
{%- endif %}
</svg>
{%- else %}<span class="muted">undefined</span>{% endif -%}
{%- endmacro %}

{% macro row(name, e, kind="pct", lo=0.0, hi=1.0) -%}
<tr><th class="l">{{ name }}</th>
<td>{{ pct(e.value) if kind == "pct" else num(e.value) }}</td>
<td>{{ ci(e, kind) }}</td><td>{{ e.n }}</td><td class="l">{{ bar(e, lo, hi) }}</td></tr>
{%- endmacro %}

{% macro estimates_head() -%}
<tr><th class="l">figure</th><th>value</th><th>{{ conf }} CI</th><th>n</th>
<th class="l">chart</th></tr>
{%- endmacro %}

{% macro confusion(table, rows, cols, row_title, col_title, css_id) -%}
<table class="confusion" id="{{ css_id }}">
<tr><th class="l">{{ row_title }} ↓ / {{ col_title }} →</th>
{%- for c in cols %}<th>{{ c }}</th>{% endfor %}<th>total</th></tr>
{%- for r in rows %}
<tr><th class="l">{{ r }}</th>
{%- for c in cols %}
<td class="{{ 'diag' if r == c else ('err' if c == 'judge_error' and table[r][c] else '') }}">
{{- table[r][c] }}</td>
{%- endfor %}<td>{{ table[r].values() | sum }}</td></tr>
{%- endfor %}
</table>
{%- endmacro %}

{% macro figures_block(f, prefix) -%}
<table>{{ estimates_head() }}
{{ row("lenient rate (missed hallucinations)", f.lenient_rate) }}
{{ row("strict rate (wasted review)", f.strict_rate) }}
{{ row("queue recall (gold non-supported sent to people)", f.queue_recall) }}
{{ row("queue load (all claims sent to people)", f.queue_load) }}
{{ row("queue false alarms (gold-supported sent to people)", f.queue_false_alarm) }}
{%- for share, e in f.queue_budget.items() %}
{{ row("gold non-supported in the first " ~ share ~ " of claims read in queue order", e) }}
{%- endfor %}
{{ row("accuracy", f.accuracy) }}
{{ row("balanced accuracy", f.balanced_accuracy) }}
{{ row("Cohen's kappa (judge vs gold)", f.kappa, "num", -1.0, 1.0) }}
{{ row("subtype agreement", f.subtype_agreement) }}
</table>
<p>Claims: {{ f.n }}. Judge errors: {{ f.judge_errors }}
{%- for g, k in f.judge_errors_by_gold_label.items() if k %} ({{ g }}: {{ k }}){% endfor %}.</p>
{%- if f.queue_points %}
<h3>The queue at other review_support_below thresholds</h3>
<table><tr><th class="l">review_support_below</th><th>queue recall</th><th>false alarms</th>
<th>load</th></tr>
{%- for p in f.queue_points %}
<tr><th class="l">{{ p.review_support_below }}</th><td>{{ pct(p.recall.value) }}</td>
<td>{{ pct(p.false_alarm.value) }}</td><td>{{ pct(p.load.value) }}</td></tr>
{%- endfor %}
</table>
{%- endif %}
<h3>Confusion matrix</h3>
<div class="charts">
{{ plots.heatmap(f.confusion, labels, judge_labels, "gold", "judge",
                 "Confusion: gold label (rows) against judge label (columns)") }}
{{ plots.interval_bars(recall_of(f), "Recall per gold label with " ~ conf ~ " intervals") }}
{{ plots.curve(queue_curve(f), (f.queue_load.value, f.queue_recall.value),
               "Review queue: recall against load") }}
</div>
{{ confusion(f.confusion, labels, judge_labels, "gold", "judge", prefix ~ "confusion") }}
<h3>Lenient rate per gold label and subtype</h3>
<table>{{ estimates_head() }}
{%- for label, e in f.lenient_by_label.items() %}{{ row("gold " ~ label, e) }}{% endfor %}
{%- for subtype, e in f.per_subtype.items() %}{{ row("subtype " ~ subtype, e) }}{% endfor %}
</table>
<h3>Per label</h3>
<table><tr><th class="l">label</th><th>support</th><th>predicted</th><th>correct</th>
<th>precision</th><th>{{ conf }} CI</th><th>recall</th><th>{{ conf }} CI</th><th>F1</th></tr>
{%- for label, m in f.per_label.items() %}
<tr><th class="l">{{ label }}</th><td>{{ m.support }}</td><td>{{ m.predicted }}</td>
<td>{{ m.true_positives }}</td><td>{{ pct(m.precision.value) }}</td>
<td>{{ ci(m.precision) }}</td><td>{{ pct(m.recall.value) }}</td><td>{{ ci(m.recall) }}</td>
<td>{{ num(m.f1) }}</td></tr>
{%- endfor %}
</table>
{%- endmacro %}
"""

_CALIBRATION = """{% import "macros" as m with context %}<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Calibration report: {{ r.judge_version }}</title><style>{{ css }}</style></head>
<body>
<h1>Calibration report: judge {{ r.judge_version }}</h1>
<p>{{ r.n }} claims with gold labels; {{ r.declined }} declined by annotators;
judge errors: {{ r.judge_errors }} (counted as not supported: they go to review).
Intervals: Wilson for proportions, seeded percentile bootstrap
(seed {{ r.bootstrap_seed }}, {{ r.bootstrap_resamples }} resamples) for kappa and balanced
accuracy.</p>
{%- for note in r.notes %}<p class="note">{{ note }}</p>{% endfor %}
<h2>Judge versus gold</h2>
{{ m.figures_block(r, "") }}
{%- if r.weighted %}
<h2>Population estimates (design-weighted)</h2>
{%- set w = r.weighted %}
<p>The estimates cover {{ w.design.population }} claims
{%- if w.design.not_covered %}; {{ w.design.not_covered }} claims in strata that were not
sampled are not represented{% endif %}.</p>
<table><tr><th class="l">stratum</th><th>claims</th><th>labelled</th><th>weight</th>
<th class="l">status</th></tr>
{%- for s in w.design.strata %}
<tr><th class="l">{{ s.name }}</th><td>{{ s.size }}</td><td>{{ s.sample_size }}</td>
<td>{{ num(s.weight, 3) }}</td><td class="l">{{ s.status | replace("_", " ") }}</td></tr>
{%- endfor %}
</table>
{%- for note in w.design.notes %}<p class="note">{{ note }}</p>{% endfor %}
<table><tr><th class="l">figure</th><th>value</th><th>{{ conf }} CI</th><th>n</th>
<th>weighted count / total</th><th class="l">interval</th><th class="l">chart</th></tr>
{%- for name, e in weighted_rows %}
<tr><th class="l">{{ name }}</th><td>{{ pct(e.value) }}</td><td>{{ ci(e) }}</td>
<td>{{ e.n }}</td><td>{{ num(e.weighted_count, 1) }} / {{ num(e.weighted_total, 1) }}</td>
<td class="l muted">{{ e.ci_method }}</td><td class="l">{{ m.bar(e) }}</td></tr>
{%- endfor %}
</table>
{%- endif %}
{%- if r.per_dataset %}
<h2>Per dataset</h2>
{%- for name, f in r.per_dataset.items() %}
<h3>Dataset {{ name }}</h3>
{{ m.figures_block(f, "dataset-" ~ loop.index ~ "-") }}
{%- endfor %}
{%- endif %}
{%- if r.human_agreement %}
{%- set h = r.human_agreement %}
<h2>Agreement between people (not the judge)</h2>
<p>{{ h.n_items }} claims labelled by two or more of {{ h.annotators | length }} annotators
({{ h.annotators | join(", ") }}).</p>
<table>{{ m.estimates_head() }}
{{ m.row(h.method | replace("_", " "), h.value, "num", -1.0, 1.0) }}
{%- for p in h.pairwise %}
{{ m.row("kappa " ~ p.annotator_a ~ " / " ~ p.annotator_b, p.kappa, "num", -1.0, 1.0) }}
{%- endfor %}
</table>
{%- if h.self_agreement %}
<h3>Self-agreement (same annotator twice; not inter-annotator agreement)</h3>
<table>{{ m.estimates_head() }}
{%- for s in h.self_agreement %}{{ m.row(s.annotator ~ " repeats identical", s.agreement) }}
{%- endfor %}
</table>
{%- endif %}
{%- for note in h.notes %}<p class="note">{{ note }}</p>{% endfor %}
{%- endif %}
</body></html>
"""

_DRIFT = """{% import "macros" as m with context %}<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Drift report: {{ r.version_a }} → {{ r.version_b }}</title><style>{{ css }}</style>
</head><body>
<h1>Drift report: {{ r.version_a }} (A) → {{ r.version_b }} (B)</h1>
<p id="verdict" class="verdict"><b>{{ verdict }}</b></p>
<p>{{ r.n }} claims judged by both versions; {{ r.n_flipped }} changed label.</p>
{%- if violations is not none %}
<h2>Thresholds (B against A)</h2>
{%- if violations %}<ul>{% for v in violations %}<li class="bad">{{ v.message }}</li>
{% endfor %}</ul>{% else %}<p>No threshold violated.</p>{% endif %}
{%- endif %}
<h2>Agreement and tests: A against B</h2>
<table>{{ m.estimates_head() }}
{{ m.row("agreement (same label)", r.agreement) }}
{{ m.row("Cohen's kappa A vs B", r.kappa, "num", -1.0, 1.0) }}
</table>
<table><tr><th class="l">test</th><th>statistic</th><th>df</th><th>p</th>
<th class="l">method</th><th class="l">note</th></tr>
{%- for name, t in tests %}
<tr><th class="l">{{ name }}</th><td>{{ num(t.statistic) }}</td>
<td>{{ t.df if t.df is not none else "—" }}</td><td>{{ pvalue(t.p_value) }}</td>
<td class="l">{{ t.method }}</td><td class="l">{{ t.note or "" }}</td></tr>
{%- endfor %}
</table>
<h2>Flip table: A's label against B's</h2>
<div class="charts">
{{ plots.heatmap(r.flips, judge_labels, judge_labels, "A", "B",
                 "Flips: version A's label (rows) against version B's (columns)") }}
</div>
{{ m.confusion(r.flips, judge_labels, judge_labels, "A", "B", "flips") }}
<h2>Label rates of A and B</h2>
<table><tr><th class="l">label</th><th>rate A</th><th>rate B</th><th>change B − A</th>
<th>{{ conf }} CI</th><th class="l">change</th></tr>
{%- for label, c in r.per_label.items() %}
<tr><th class="l">{{ label }}</th><td>{{ pct(c.rate_a.value) }}</td>
<td>{{ pct(c.rate_b.value) }}</td><td>{{ pct(c.change.value) }}</td>
<td>{{ ci(c.change) }}</td><td class="l">{{ m.bar(c.change, -1.0, 1.0) }}</td></tr>
{%- endfor %}
</table>
{%- if r.gold %}
{%- set g = r.gold %}
<h2>A and B against gold ({{ g.n }} claims with a gold label)</h2>
<table><tr><th class="l">figure</th><th>A</th><th>{{ conf }} CI</th><th>B</th><th>{{ conf }} CI</th>
<th>n</th><th>change B − A</th><th>{{ conf }} CI</th></tr>
{%- for name, c in [("accuracy", g.accuracy), ("lenient rate", g.lenient),
                    ("strict rate", g.strict)] %}
<tr><th class="l">{{ name }}</th><td>{{ pct(c.rate_a.value) }}</td><td>{{ ci(c.rate_a) }}</td>
<td>{{ pct(c.rate_b.value) }}</td><td>{{ ci(c.rate_b) }}</td><td>{{ c.change.n }}</td>
<td>{{ pct(c.change.value) }}</td><td>{{ ci(c.change) }}</td></tr>
{%- endfor %}
</table>
<p>Flips toward gold: {{ g.toward_gold }}; away from gold: {{ g.away_from_gold }};
neither: {{ g.neither }}.</p>
{%- endif %}
<h2>Claims that changed label from A to B</h2>
{%- if r.flipped %}
<table id="flipped"><tr><th class="l">claim</th><th class="l">text</th>
<th class="l">A</th><th class="l">B</th>
<th class="l">gold</th><th class="l">direction</th><th class="l">rationale A</th>
<th class="l">rationale B</th></tr>
{%- for f in r.flipped %}
<tr><td class="l">{{ f.claim_id }}</td><td class="rationale">{{ claims.get(f.claim_id, "") }}</td>
<td class="l">{{ f.label_a }}</td>
<td class="l">{{ f.label_b }}</td><td class="l">{{ f.gold_label or "—" }}</td>
<td class="l">{{ f.toward_gold or "—" }}</td>
<td class="rationale">{{ f.rationale_a or "" }}</td>
<td class="rationale">{{ f.rationale_b or "" }}</td></tr>
{%- endfor %}
</table>
{%- else %}<p>No claim changed label.</p>{% endif %}
</body></html>
"""

_env = Environment(
    loader=DictLoader({"macros": _MACROS, "calibration": _CALIBRATION, "drift": _DRIFT}),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=False,
)
def _recall_of(f: Any) -> dict[str, Estimate]:
    return {label: m.recall for label, m in f.per_label.items()}


def _queue_curve(f: Any) -> list[tuple[float, float, str]]:
    """(load, recall, setting) of the queue at other ``review_support_below`` values, else of
    reading only the first share of claims in queue order."""
    if f.queue_points:
        return [(p.load.value, p.recall.value, f"review_support_below {p.review_support_below}")
                for p in f.queue_points]
    return [(float(share.rstrip("%")) / 100, e.value, f"first {share} read")
            for share, e in f.queue_budget.items()]


_env.globals.update(plots=plots, recall_of=_recall_of, queue_curve=_queue_curve)
_env.globals.update(pct=_pct, num=_num, ci=_ci, pvalue=_pvalue, geom=_bar,
                    labels=LABELS, judge_labels=JUDGE_LABELS,
                    css=Markup(_CSS))  # a constant of this module, not input


def render_calibration_html(report: CalibrationReport) -> str:
    """A self-contained HTML page for a calibration report."""
    weighted_rows = []
    if report.weighted is not None:
        w = report.weighted
        weighted_rows = [
            *((f"share gold {label}", e) for label, e in w.gold_label_shares.items()),
            ("lenient rate", w.lenient_rate),
            ("strict rate", w.strict_rate),
            ("queue recall", w.queue_recall),
            ("queue load", w.queue_load),
            ("accuracy", w.accuracy),
        ]
    return navigable(_env.get_template("calibration").render(
        r=report, weighted_rows=weighted_rows, conf=_conf(report.confidence)
    ))


def render_drift_html(
    report: DriftReport, violations: Sequence[ThresholdViolation] | None = None,
    claims: Mapping[str, str] | None = None,
) -> str:
    """A self-contained HTML page for a drift report; with ``violations`` (from
    :func:`calibration.thresholds.check_thresholds`) a thresholds section is added, with
    ``claims`` (claim id → text) the flipped claims show their text."""
    tests = [
        ("McNemar (supported vs not)", report.mcnemar),
        ("Stuart–Maxwell (marginal homogeneity)", report.stuart_maxwell),
        ("Bowker (symmetry)", report.bowker),
    ]
    return navigable(_env.get_template("drift").render(
        r=report, tests=tests, violations=None if violations is None else list(violations),
        conf=_conf(report.confidence), claims=dict(claims or {}), verdict=drift_verdict(report),
    ))


# --------------------------------------------------------------------------- navigation

#: sections with more table rows than this start collapsed
COLLAPSE_ROWS = 40
#: tables whose rows get a text filter: the misjudged claims (one table per version in a drift
#: report: ``misjudged-claims-a``), the flipped claims
FILTERED_TABLES = ("misjudged-claims", "flipped")
_FILTERED = re.compile('<table id="((?:' + "|".join(FILTERED_TABLES) + ')(?:-[a-z0-9]+)?)"')
_ROW = re.compile(r"<tr\b")


def data_rows(html: str) -> int:
    """Table rows holding data (a ``<td>``) in ``html``: a header row of ``<th>`` cells is
    not counted, so the contents list and a table's filter give the same count."""
    return sum("<td" in chunk for chunk in _ROW.split(html)[1:])

_NAV_CSS = """
nav.contents{background:#f7f7f9;border:1px solid #ddd;padding:.5rem 1rem;margin:1rem 0}
nav.contents ol{margin:.25rem 0;padding-left:1.5rem;columns:2}
details.section>summary{cursor:pointer;list-style-position:outside}
details.section>summary>h2{display:inline-block;border:0;margin:1.25rem 0 .25rem}
details.section{border-bottom:1px solid #ddd}
details.dataset>summary{cursor:pointer}details.dataset>summary>h3{display:inline-block}
input.filter{font:inherit;padding:.3rem .5rem;width:min(32rem,100%);margin:.25rem 0}
"""

# A fixed script (no data in it): the text filter, and opening a collapsed section when the
# contents list (or a link) points into it. The page reads in full without it.
REPORT_SCRIPT = """
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("input.filter").forEach(function (box) {
    var table = document.getElementById(box.dataset.table);
    var count = document.getElementById(box.dataset.table + "-shown");
    box.hidden = false;
    box.addEventListener("input", function () {
      var q = box.value.trim().toLowerCase(), shown = 0;
      for (var i = 1; i < table.rows.length; i++) {
        var hit = !q || table.rows[i].textContent.toLowerCase().indexOf(q) >= 0;
        table.rows[i].hidden = !hit;
        if (hit) { shown++; }
      }
      count.textContent = q ? shown + " of " + (table.rows.length - 1) + " shown" : "";
    });
  });
  function reveal() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
  }
  window.addEventListener("hashchange", reveal);
  reveal();
});
"""

_H2 = re.compile(r"<h2(?P<attrs>[^>]*)>(?P<title>.*?)</h2>", re.S)
_ID = re.compile(r'\bid="([^"]*)"')
_TAGS = re.compile(r"<[^>]+>")
_NAV_BLOCK = re.compile(r'<nav class="contents">.*?</nav>\n?', re.S)
_SECTION_START = '<details class="section"'


def _slug(title: str, taken: set[str]) -> str:
    base = re.sub(r"[^0-9a-z]+", "-", _TAGS.sub("", title).lower()).strip("-") or "section"
    slug, k = base, 2
    while slug in taken:
        slug, k = f"{base}-{k}", k + 1
    taken.add(slug)
    return slug


def _filter_box(table_id: str, rows: int) -> str:
    return (f'<p><input type="search" class="filter" data-table="{table_id}" hidden '
            f'placeholder="Filter these {rows} rows by claim text, id, label or rationale" '
            f'aria-label="Filter the rows of this table"> '
            f'<span class="muted" id="{table_id}-shown"></span></p>\n')


def _datasets(section: str) -> str:
    """Each ``<h3>Dataset ...</h3>`` block of the per-dataset section as a collapsed
    ``<details>``."""
    parts = re.split(r"(?=<h3>Dataset )", section)
    if len(parts) < 2:
        return section
    out = [parts[0]]
    for part in parts[1:]:
        end = part.index("</h3>") + len("</h3>")
        out.append(f'<details class="dataset"><summary>{part[:end]}</summary>'
                   f"{part[end:]}</details>\n")
    return "".join(out)


def navigable(page: str) -> str:
    """A report page made navigable: each ``<h2>`` section collapsible (``<details>``; open
    unless it holds more than :data:`COLLAPSE_ROWS` table rows), the per-dataset blocks
    collapsed, a contents list at the top (with row counts of the long sections), and a text
    filter above the long claim tables. Safe to call again after sections were added: the
    contents list is rebuilt and only unwrapped sections are wrapped."""
    page = _NAV_BLOCK.sub("", page)
    taken = set(_ID.findall(page))
    # wrap the sections that are not wrapped yet, last first so offsets stay valid
    body_end = page.rfind("</body>")
    body_end = len(page) if body_end < 0 else body_end
    heads = [m for m in _H2.finditer(page) if not page[:m.start()].endswith("<summary>")]
    for m in reversed(heads):
        ends = [body_end, *(i for i in (page.find(_SECTION_START, m.end()),) if i >= 0)]
        nxt = next((h.start() for h in heads if h.start() > m.start()), None)
        if nxt is not None:
            ends.append(nxt)
        end = min(ends)
        body = page[m.end():end]
        found = _ID.search(m["attrs"])
        ident = found.group(1) if found else _slug(m["title"], taken)
        attrs = _ID.sub("", m["attrs"])
        if "<h3>Dataset " in body:
            body = _datasets(body)
        for found_table in list(_FILTERED.finditer(body))[::-1]:
            table_id, at = found_table.group(1), found_table.start()
            end_at = body.find("</table>", at)
            rows = data_rows(body[at:end_at if end_at >= 0 else len(body)])
            body = body[:at] + _filter_box(table_id, rows) + body[at:]
        # rows in folded dataset blocks do not count: the section lists the datasets open
        shown_rows = data_rows(re.sub(r'<details class="dataset">.*?</details>', "", body,
                                      flags=re.S))
        opened = " open" if shown_rows <= COLLAPSE_ROWS else ""
        rows_note = "" if opened else f' data-rows="{shown_rows}"'
        page = (page[:m.start()]
                + f'{_SECTION_START} id="{ident}"{opened}{rows_note}><summary>'
                  f'<h2{attrs}>{m["title"]}</h2></summary>'
                + body.rstrip("\n") + "\n</details>\n" + page[end:])
    # the contents list, from every section
    items = []
    for m in re.finditer(_SECTION_START + r' id="([^"]*)"([^>]*)><summary><h2[^>]*>(.*?)</h2>',
                         page, re.S):
        count = re.search(r'data-rows="(\d+)"', m.group(2))
        more = f' <span class="muted">({count.group(1)} rows, collapsed)</span>' if count else ""
        items.append(f'<li><a href="#{m.group(1)}">{_TAGS.sub("", m.group(3))}</a>{more}</li>')
    if items:
        nav = ('<nav class="contents"><b>Contents</b><ol>' + "".join(items) + "</ol></nav>\n")
        first = page.find(_SECTION_START)
        page = page[:first] + nav + page[first:]
    if "</head>" in page and 'id="report-nav"' not in page:
        head = (f'<style id="report-nav">{_NAV_CSS}</style>'
                f"<script>{REPORT_SCRIPT}</script>")
        page = page.replace("</head>", head + "</head>", 1)
    return page
