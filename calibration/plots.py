"""Charts for the HTML reports as inline SVG: no network, no JavaScript, every text escaped.

- :func:`heatmap`: a confusion matrix or a drift flip table (shade = share of the row);
- :func:`interval_bars`: estimates with their intervals (per-label recall);
- :func:`curve`: the review queue's recall against its load, the configured point marked;
- :func:`reliability`: predicted against observed share supported, per bin of ``support``.

Text is drawn in a font stack that covers Chinese, so labels and dataset names in Chinese
read as well as English ones.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

from calibration.results import Estimate

FONT = ("system-ui,-apple-system,'Segoe UI','Noto Sans CJK TC','Noto Sans CJK SC',"
        "'PingFang TC','Microsoft JhengHei',sans-serif")
_BLUE = (31, 95, 191)


def text_width(text: object, size: float = 12) -> float:
    """A generous estimate of the drawn width of ``text`` in pixels (no font metrics in
    SVG without a browser): wide (CJK) characters one em, others 0.62 em, so labels are
    given room enough and never cut at the chart's edge."""
    return sum(size if unicodedata.east_asian_width(ch) in "WF" else 0.62 * size
               for ch in str(text))


def _ok(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _svg(width: int, height: int, title: str, body: list[str]) -> Markup:
    head = (f'<svg width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
            f'font-family="{FONT}" font-size="12" class="chart">'
            f"<title>{escape(title)}</title>")
    return Markup(head + "".join(body) + "</svg>")


def _text(x: float, y: float, text: object, anchor: str = "start", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>'
            f"{escape(str(text))}</text>")


def _shade(share: float, rgb: tuple[int, int, int] = _BLUE) -> str:
    r, g, b = (round(255 - (255 - c) * share) for c in rgb)
    return f"rgb({r},{g},{b})"


def heatmap(table: Mapping[str, Mapping[str, int]], rows: Sequence[str], cols: Sequence[str],
            row_title: str, col_title: str, title: str) -> Markup:
    """Counts as a grid of cells shaded by their share of the row; the diagonal (agreement)
    outlined."""
    cell, top = 64, 64
    left = max(90, round(max((text_width(r.replace("_", " ")) for r in rows), default=0) + 16),
               round(text_width(f"{row_title} ↓", 12) + 16))
    # column labels are turned 20°: the last one reaches past its cell
    spill = max((text_width(c.replace("_", " ")) * 0.47 for c in cols), default=0)
    width = left + cell * len(cols) + max(10, round(spill - cell / 2 + 10))
    height = top + cell * len(rows) + 10
    body = [_text(left + cell * len(cols) / 2, 14, f"{col_title} →", "middle",
                  'font-weight="600"'),
            _text(8, top - 8, f"{row_title} ↓", extra='font-weight="600"')]
    for j, c in enumerate(cols):
        x = left + cell * j + cell / 2
        body.append(_text(x, top - 24, c.replace("_", " "), "middle",
                          f'transform="rotate(-20 {x:.1f} {top - 24})"'))
    for i, r in enumerate(rows):
        y = top + cell * i
        body.append(_text(left - 6, y + cell / 2 + 4, r.replace("_", " "), "end"))
        total = sum(table.get(r, {}).get(c, 0) for c in cols)
        for j, c in enumerate(cols):
            n = table.get(r, {}).get(c, 0)
            share = n / total if total else 0.0
            x = left + cell * j
            stroke = ' stroke="#1e7a3c" stroke-width="3"' if r == c else ' stroke="#fff"'
            body.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                        f'fill="{_shade(share)}"{stroke}><title>{escape(r)} → {escape(c)}: '
                        f"{n}</title></rect>")
            colour = "#fff" if share > 0.55 else "#1d2328"
            body.append(_text(x + cell / 2, y + cell / 2 + 4, n, "middle",
                              f'fill="{colour}" font-weight="600"'))
    return _svg(width, height, title, body)


def interval_bars(estimates: Mapping[str, Estimate], title: str) -> Markup:
    """One bar per estimate on 0..100% with its interval as a whisker; undefined ones are
    labelled so."""
    row, scale = 26, 300
    left = max(60, round(max((text_width(n.replace("_", " ")) for n in estimates),
                             default=0) + 12))
    values = [f"{100 * e.value:.0f}% n={e.n}" for e in estimates.values() if _ok(e.value)]
    right = max(40, round(max((text_width(v) for v in values), default=0) + 16))
    width, height = left + scale + right, 30 + row * len(estimates)
    body = [_text(left + x * scale, 16, f"{round(x * 100)}%", "middle", 'fill="#666"')
            for x in (0.0, 0.5, 1.0)]
    for i, (name, e) in enumerate(estimates.items()):
        y = 24 + row * i
        body.append(_text(left - 6, y + 13, name.replace("_", " "), "end"))
        body.append(f'<rect x="{left}" y="{y + 3}" width="{scale}" height="14" fill="#f1f1f1"/>')
        if not _ok(e.value):
            body.append(_text(left + 4, y + 14, "undefined (no such gold claims)",
                              extra='fill="#666"'))
            continue
        body.append(f'<rect x="{left}" y="{y + 5}" width="{scale * e.value:.1f}" height="10" '
                    f'fill="#5b8def"><title>{escape(name)}: {100 * e.value:.1f}% '
                    f"(n={e.n})</title></rect>")
        if _ok(e.ci_low) and _ok(e.ci_high):
            lo, hi = left + scale * e.ci_low, left + scale * e.ci_high
            body.append(f'<line x1="{lo:.1f}" y1="{y + 10}" x2="{hi:.1f}" y2="{y + 10}" '
                        'stroke="#000" stroke-width="1.5"/>')
            body += [f'<line x1="{x:.1f}" y1="{y + 5}" x2="{x:.1f}" y2="{y + 15}" '
                     'stroke="#000"/>' for x in (lo, hi)]
        body.append(_text(left + scale + 6, y + 14, f"{100 * e.value:.0f}% n={e.n}"))
    return _svg(width, height, title, body)


def _axes(left: int, top: int, size: int, x_title: str, y_title: str) -> list[str]:
    body = [f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="#fafafa" '
            'stroke="#ccc"/>']
    for k in range(0, 101, 25):
        x, y = left + size * k / 100, top + size - size * k / 100
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + size}" '
                    'stroke="#eee"/>')
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + size}" y2="{y:.1f}" '
                    'stroke="#eee"/>')
        body.append(_text(x, top + size + 14, f"{k}%", "middle", 'fill="#666"'))
        body.append(_text(left - 4, y + 4, f"{k}%", "end", 'fill="#666"'))
    body.append(_text(left + size / 2, top + size + 30, x_title, "middle"))
    body.append(_text(12, top + size / 2, y_title, "middle",
                      f'transform="rotate(-90 12 {top + size / 2:.1f})"'))
    return body


def curve(points: Sequence[tuple[float, float, str]], configured: tuple[float, float] | None,
          title: str, x_title: str = "load: share of claims sent to people",
          y_title: str = "recall: gold non-supported sent to people") -> Markup:
    """Recall (y) against load (x) of the queue at other settings, as a line through the
    points (each with its setting as a tooltip), and the configured setting as a red dot."""
    left, top, size = 56, 14, 260
    body = _axes(left, top, size, x_title, y_title)

    def at(x: float, y: float) -> tuple[float, float]:
        return left + size * x, top + size - size * y

    shown = sorted((p for p in points if _ok(p[0]) and _ok(p[1])), key=lambda p: p[0])
    if shown:
        path = " ".join(f"{'M' if i == 0 else 'L'}{at(x, y)[0]:.1f},{at(x, y)[1]:.1f}"
                        for i, (x, y, _) in enumerate(shown))
        body.append(f'<path d="{path}" fill="none" stroke="#5b8def" stroke-width="2"/>')
        for x, y, name in shown:
            px, py = at(x, y)
            body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="#5b8def">'
                        f"<title>{escape(name)}: load {100 * x:.0f}%, recall {100 * y:.0f}%"
                        "</title></circle>")
    if configured and _ok(configured[0]) and _ok(configured[1]):
        px, py = at(*configured)
        body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="6" fill="#b3261e" class="configured">'
                    f"<title>configured: load {100 * configured[0]:.0f}%, recall "
                    f"{100 * configured[1]:.0f}%</title></circle>")
        label_right = px + 8 + text_width("configured") > left + size + 20
        body.append(_text(px - 8 if label_right else px + 8, py - 6, "configured",
                          "end" if label_right else "start", 'fill="#b3261e"'))
    return _svg(left + size + 20, top + size + 40, title, body)


def reliability(bins: Sequence[tuple[float, float, int]], title: str) -> Markup:
    """Per bin of ``support``: the mean predicted probability (x) against the observed share
    of gold-supported claims (y); dot area grows with the bin's size; the diagonal is a
    perfectly calibrated judge."""
    left, top, size = 56, 14, 260
    body = _axes(left, top, size, "predicted: mean support in the bin",
                 "observed: share gold supported")
    body.append(f'<line x1="{left}" y1="{top + size}" x2="{left + size}" y2="{top}" '
                'stroke="#999" stroke-dasharray="4 3"/>')
    biggest = max((n for *_, n in bins), default=1) or 1
    for predicted, observed, n in bins:
        px, py = left + size * predicted, top + size - size * observed
        radius = 3 + 7 * math.sqrt(n / biggest)
        body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{radius:.1f}" fill="#5b8def" '
                    f'fill-opacity="0.75"><title>predicted {100 * predicted:.0f}%, observed '
                    f"{100 * observed:.0f}%, {n} claims</title></circle>")
    if not bins:
        body.append(_text(left + size / 2, top + size / 2, "no claim has a support value",
                          "middle", 'fill="#666"'))
    return _svg(left + size + 20, top + size + 40, title, body)
