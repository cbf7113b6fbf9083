"""Terminal renderings of calibration and drift reports (rich tables)."""

from __future__ import annotations

import math
from typing import Any

from rich.markup import escape
from rich.table import Table

from calibration.formatting import num, pct, pvalue
from judge.cli.common import out, print_table


def _pct(x: float | None) -> str:
    return pct(x, 1)


def _num(x: float | None, digits: int = 3) -> str:
    return num(x, digits)


def _ci(e: Any, fmt: Any = _pct) -> str:
    low, high = e.ci_low, e.ci_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return "—"
    return f"{fmt(low)} – {fmt(high)}"


def _vci(e: Any, fmt: Any = _pct) -> str:
    """``value [low–high]`` in one cell (percent signs only on the value)."""
    value: str = fmt(e.value)
    low, high = e.ci_low, e.ci_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return value
    bound = (lambda x: f"{100 * x:.1f}") if fmt is _pct else fmt
    return f"{value} [{bound(low)}–{bound(high)}]"


_SHORT = {"supported": "supp.", "contradicted": "contr.", "not_in_source": "not in src",
          "not_verifiable": "not verif.", "judge_error": "error"}




def _figures_table(f: Any, title: str) -> Table:
    table = Table("figure", "value [95% CI]", "n", title=title, title_justify="left")
    rows = [
        ("lenient rate (missed hallucinations)", f.lenient_rate, _pct),
        ("strict rate (wasted review)", f.strict_rate, _pct),
        ("queue recall (gold non-supported sent to people)", f.queue_recall, _pct),
        ("queue load (all claims sent to people)", f.queue_load, _pct),
        ("queue false alarms (gold-supported sent to people)", f.queue_false_alarm, _pct),
        ("accuracy", f.accuracy, _pct),
        ("balanced accuracy", f.balanced_accuracy, _pct),
        ("Cohen's kappa (judge vs gold)", f.kappa, _num),
        ("subtype agreement", f.subtype_agreement, _pct),
    ]
    for name, e, fmt in rows:
        table.add_row(name, _vci(e, fmt), str(e.n))
    return table


def _confusion_table(confusion: dict[str, dict[str, int]], rows_title: str,
                     cols_title: str, title: str) -> Table:
    cols = list(next(iter(confusion.values())).keys())
    table = Table(f"{rows_title} ↓ / {cols_title} →", *(_SHORT.get(c, c) for c in cols),
                  "total", title=title, title_justify="left")
    for row, cells in confusion.items():
        values = [f"[bold]{cells[c]}[/]" if c == row else str(cells[c]) for c in cols]
        table.add_row(row, *values, str(sum(cells.values())))
    return table


def print_calibration(outcome: Any, data: dict[str, Any]) -> None:
    r = outcome.report
    m = outcome.matching
    out.print(f"[bold]Calibration: judge {escape(r.judge_version)}[/] "
              f"(model {escape(outcome.model)})")
    out.print(f"gold {escape(outcome.gold['file'])} (sha256 {outcome.gold['sha256'][:12]}): "
              f"{outcome.gold['items']} items → {len(m.matched)} matched, "
              f"{len(m.refused)} refused by the judge, {len(m.not_judged)} not judged, "
              f"{len(m.duplicates)} duplicates")
    for p in outcome.operating_points or []:
        where = f" domain {p['domain']}" if p["domain"] else ""
        out.print(f"operating point{escape(where)} ({p['source']}): {escape(p['statement'])}")
    watch = outcome.recall_watch
    if watch:
        style = "bold red" if watch["status"] in ("below", "significantly_below") else "dim"
        out.print(f"[{style}]recall watch, queue {escape(watch['queue_id'])}: "
                  f"{escape(watch['message'])}[/]")
    out.print(f"judge errors: {r.judge_errors} (counted as not supported; they go to review)\n")
    print_table(_figures_table(r, f"Judge versus gold ({r.n} claims)"))
    print_table(_confusion_table(r.confusion, "gold", "judge", "Confusion matrix"))
    per_label = Table("label", "gold", "judge", "both", "precision [95% CI]",
                      "recall [95% CI]", "F1", title="Per label", title_justify="left")
    for label, lm in r.per_label.items():
        per_label.add_row(label, str(lm.support), str(lm.predicted), str(lm.true_positives),
                          _vci(lm.precision), _vci(lm.recall), _num(lm.f1, 2))
    print_table(per_label)
    lenient = Table("gold", "lenient rate [95% CI]", "n",
                    title="Lenient rate (judge said supported) per gold label and subtype",
                    title_justify="left")
    for label, e in r.lenient_by_label.items():
        lenient.add_row(f"label {label}", _vci(e), str(e.n))
    for subtype, e in r.per_subtype.items():
        lenient.add_row(f"subtype {subtype}", _vci(e), str(e.n))
    print_table(lenient)
    g = outcome.gate
    gate = Table("gate (zero tolerance)", "failures", "of", "status",
                 title="Validity gate (reported apart from the rates)", title_justify="left")
    for name, key in (("schema: judge gave valid output", "schema"),
                      ("evidence: judge's quotes/sources exist", "evidence")):
        ok = g[key]["passed"]
        gate.add_row(name, str(g[key]["failures"]), str(g["n"]),
                     "[green]passed[/]" if ok else "[red]FAILED[/]")
    print_table(gate)
    out.print(f"answer citations that do not resolve (the answer's fault): "
              f"{g['answer_citation_failures']}")
    if m.refused:
        out.print(f"\n[yellow]{len(m.refused)} gold claim(s) not judged: the judge refused "
                  "their answers[/]")
        for e, reason in m.refused[:20]:
            out.print(f"  line {e.line} {escape(e.item.id)}: {escape(reason)}")
    if m.not_judged:
        shown = ", ".join(e.item.id for e in m.not_judged[:10])
        more = " …" if len(m.not_judged) > 10 else ""
        out.print(f"[yellow]{len(m.not_judged)} gold item(s) without a verdict by this "
                  f"version[/]: {escape(shown)}{more}")
    if r.weighted is not None:
        w = r.weighted
        strata = Table("stratum", "claims", "labelled", "weight", "status",
                       title="Sampling design", title_justify="left")
        for s in w.design.strata:
            strata.add_row(s.name, str(s.size), str(s.sample_size), _num(s.weight, 3),
                           s.status.replace("_", " "))
        print_table(strata)
        weighted = Table("figure", "value [95% CI]", "n", "interval",
                         title=f"Population estimates (weighted; cover {w.design.population} "
                               "claims)", title_justify="left")
        for name, e in (("lenient rate", w.lenient_rate), ("strict rate", w.strict_rate),
                        ("queue recall", w.queue_recall), ("queue load", w.queue_load),
                        ("accuracy", w.accuracy)):
            weighted.add_row(name, _vci(e), str(e.n), e.ci_method)
        print_table(weighted)
        for note in w.design.notes:
            out.print(f"[dim]{escape(note)}[/]")
    if r.per_dataset:
        ds = Table("dataset", "n", "acc.", "bal.", "κ", "len.", "str.", "recall", "load",
                   "err.", title="Per dataset (lenient, strict, queue recall and load; "
                                 "intervals in --json / --html)", title_justify="left")
        ds.columns[0].no_wrap = True

        def p0(x: float) -> str:
            return pct(x, 0)

        for name, f in r.per_dataset.items():
            ds.add_row(name, str(f.n), p0(f.accuracy.value), p0(f.balanced_accuracy.value),
                       _num(f.kappa.value, 2), p0(f.lenient_rate.value),
                       p0(f.strict_rate.value), p0(f.queue_recall.value),
                       p0(f.queue_load.value), str(f.judge_errors))
        print_table(ds)
    if r.human_agreement is not None:
        h = r.human_agreement
        people = Table("figure", "value [95% CI]", "n",
                       title=f"Agreement between people, not the judge ({h.n_items} claims, "
                             f"{len(h.annotators)} annotators)", title_justify="left")
        people.add_row(h.method.replace("_", " "), _vci(h.value, _num), str(h.value.n))
        for p in h.pairwise:
            people.add_row(f"kappa {p.annotator_a} / {p.annotator_b}", _vci(p.kappa, _num),
                           str(p.kappa.n))
        for s in h.self_agreement:
            people.add_row(f"self-agreement {s.annotator} (same person twice)",
                           _vci(s.agreement), str(s.agreement.n))
        print_table(people)
        for note in h.notes:
            out.print(f"[dim]{escape(note)}[/]")
    for note in r.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")
    wrong = data.get("misjudged") or []
    if wrong:
        out.print(f"[bold]Claims the judge got wrong ({len(wrong)}; lenient first)[/]")
        for w in wrong[:30]:
            gold = w["gold_label"] + (f" / {w['gold_subtype']}" if w["gold_subtype"] else "")
            out.print(f"  {escape(w['gold_id'])}: [bold]{w['direction']}[/]: gold "
                      f"{escape(gold)}, judge {escape(w['judge_label'])}")
            out.print(f"    claim: {escape((w['claim'] or '')[:300])}")
            out.print(f"    judge: {escape((w['judge_rationale'] or '-')[:300])}")
            out.print(f"    people: {escape((w['human_rationale'] or '-')[:300])}")
        if len(wrong) > 30:
            out.print(f"  ... {len(wrong) - 30} more in --json / --html")




def print_drift(report: Any, data: dict[str, Any], claims: dict[str, str], show: int) -> None:
    """The drift report in the terminal: the verdict first (which version agrees more with
    people), then the figures, then the first ``show`` flipped claims."""
    from calibration import drift_verdict

    out.print(f"[bold]Drift: {escape(report.version_a)} (A) → {escape(report.version_b)} (B)"
              f"[/]")
    out.print(f"[bold]{escape(drift_verdict(report))}[/]")
    out.print(f"{report.n} claims judged by both; {report.n_flipped} changed label; "
              f"{len(data['only_a'])} judged only by A, {len(data['only_b'])} only by B")
    print_table(_confusion_table(report.flips, "A", "B", "Flip table: A's label against B's"))
    stats = Table("figure", "value [95% CI]", "n", title="Agreement between A and B",
                  title_justify="left")
    stats.add_row("agreement (same label)", _vci(report.agreement), str(report.agreement.n))
    stats.add_row("Cohen's kappa A vs B", _vci(report.kappa, _num), str(report.kappa.n))
    print_table(stats)
    tests = Table("test", "statistic", "df", "p", "method", title="Significance",
                  title_justify="left")
    for name, t in (("McNemar (supported vs not)", report.mcnemar),
                    ("Stuart–Maxwell (marginal homogeneity)", report.stuart_maxwell),
                    ("Bowker (symmetry)", report.bowker)):
        tests.add_row(name, _num(t.statistic), "—" if t.df is None else str(t.df),
                      pvalue(t.p_value), t.method + (f" ({t.note})" if t.note else ""))
    print_table(tests)
    rates = Table("label", "rate A", "rate B", "change B − A [95% CI]",
                  title="Label rates of A and B", title_justify="left")
    for label, c in report.per_label.items():
        rates.add_row(label, _pct(c.rate_a.value), _pct(c.rate_b.value), _vci(c.change))
    print_table(rates)
    cal = data.get("calibration")
    if cal:
        side = Table("figure (on claims both judged)", "A", "B",
                     title=f"A and B against gold ({cal['a']['n']} claims)",
                     title_justify="left")

        def fig(d: dict[str, Any], key: str) -> str:
            v = d[key]
            if isinstance(v, dict):
                fmt = _num if key == "kappa" else _pct
                return f"{fmt(v['value'])} [{fmt(v['ci_low'])}–{fmt(v['ci_high'])}]"
            return str(v) if isinstance(v, int) else _pct(v)

        for key in ("accuracy", "balanced_accuracy", "kappa", "lenient_rate", "strict_rate",
                    "queue_recall", "queue_load", "judge_errors"):
            side.add_row(key.replace("_", " "), fig(cal["a"], key), fig(cal["b"], key))
        print_table(side)
        g = report.gold
        if g is not None:
            out.print(f"flips toward gold: {g.toward_gold}; away from gold: "
                      f"{g.away_from_gold}; neither: {g.neither}")
    if report.flipped:
        shown = report.flipped[:max(show, 0)]
        out.print(f"[bold]Claims that changed label from A to B ({report.n_flipped}"
                  f"{f', the first {len(shown)}' if len(shown) < report.n_flipped else ''})[/]")
        for f in shown:
            gold = f" (gold {f.gold_label}: {f.toward_gold})" if f.gold_label else ""
            out.print(f"  {f.claim_id}: [bold]{f.label_a} → {f.label_b}[/]{escape(gold)}")
            out.print(f"    claim: {escape(claims.get(f.claim_id, '')[:300])}")
            out.print(f"    A: {escape((f.rationale_a or '-')[:300])}")
            out.print(f"    B: {escape((f.rationale_b or '-')[:300])}")
        if report.n_flipped > len(shown):
            out.print(f"  ... {report.n_flipped - len(shown)} more: --show "
                      f"{report.n_flipped} lists them all, --html and --json hold every one")
    else:
        out.print("no claim changed label")
