"""Commands that measure the judge: ``calibrate``, ``drift``, ``eval-gold``, ``gold-check``.

Exit codes: 0 fine; 1 error or refusal (self-grading ban, a model's labels offered as gold,
invalid gold); 3 a ``--fail-on`` threshold is violated.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from judge.cli import app
from judge.cli.common import DB_OPTION, console, fail, open_store, out, print_json
from judge.config import JudgeConfig
from judge.gold import GoldFile, GoldRejected, load_gold, read_gold
from judge.store import Store

THRESHOLD_EXIT = 3

FAIL_ON_HELP = (
    "Threshold KEY=VALUE (repeatable); a violation exits with code 3. Calibration: "
    "kappa_below, accuracy_below, balanced_accuracy_below, lenient_rate_above, "
    "strict_rate_above, queue_recall_below, judge_errors_above, schema_errors_above, "
    "invalid_evidence_above. Drift: kappa_below, agreement_below, flip_rate_above, "
    "lenient_rate_increase, strict_rate_increase, accuracy_drop, mcnemar_p_below, "
    "stuart_maxwell_p_below."
)


# --------------------------------------------------------------------------- helpers


def _pct(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _pvalue(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return "< 0.0001" if x < 1e-4 else f"{x:.4f}"


def _ci(e: Any, fmt: Any = _pct) -> str:
    low, high = e.ci_low, e.ci_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return "—"
    return f"{fmt(low)} – {fmt(high)}"


def _vci(e: Any, fmt: Any = _pct) -> str:
    """``value [low–high]`` in one cell (percent signs only on the value)."""
    value = fmt(e.value)
    low, high = e.ci_low, e.ci_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return value
    bound = (lambda x: f"{100 * x:.1f}") if fmt is _pct else fmt
    return f"{value} [{bound(low)}–{bound(high)}]"


_SHORT = {"supported": "supp.", "contradicted": "contr.", "not_in_source": "not in src",
          "not_verifiable": "not verif.", "judge_error": "error"}


def parse_fail_on(values: list[str]) -> dict[str, float]:
    thresholds: dict[str, float] = {}
    for raw in values:
        for part in (p.strip() for p in raw.split(",")):
            if not part:
                continue
            key, sep, value = part.partition("=")
            try:
                if not sep:
                    raise ValueError
                thresholds[key.strip()] = float(value)
            except ValueError:
                fail(f"--fail-on {part!r}: expected KEY=NUMBER, e.g. kappa_below=0.6")
    return thresholds


def _gold(path: Path) -> GoldFile:
    if not path.exists():
        fail(f"gold file {path} does not exist")
    try:
        return load_gold(path)
    except GoldRejected as exc:
        fail(escape(str(exc)))


def _write_html(path: Path, page: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {path}: {exc}")
    console.print(f"HTML report: {escape(str(path))}")


def _run(input_path: Path, store: Store, cfg: JudgeConfig, what: str, quiet: bool,
         purpose: str = "eval") -> Any:
    from judge.runner import run_batch

    columns = (TextColumn(f"[bold]{escape(what)}[/]"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=console, disable=quiet and not sys.stderr.isatty()) as bar:
        task = bar.add_task(what, total=None)

        def progress(event: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            return asyncio.run(run_batch(input_path, store, cfg, progress=progress,
                                         purpose=purpose))
        except KeyboardInterrupt:
            fail("interrupted; run the same command again to resume", code=130)
        except Exception as exc:
            fail(f"{type(exc).__name__}: {escape(str(exc))}")


def _load_config(config: Path | None, **overrides: Any) -> JudgeConfig:
    try:
        return JudgeConfig.load(config, **overrides)
    except ValueError as exc:
        fail(escape(str(exc)))


# --------------------------------------------------------------------------- printing


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
    out.print(f"judge errors: {r.judge_errors} (counted as not supported; they go to review)\n")
    out.print(_figures_table(r, f"Judge versus gold ({r.n} claims)"))
    out.print(_confusion_table(r.confusion, "gold", "judge", "Confusion matrix"))
    per_label = Table("label", "gold", "judge", "both", "precision [95% CI]",
                      "recall [95% CI]", "F1", title="Per label", title_justify="left")
    for label, lm in r.per_label.items():
        per_label.add_row(label, str(lm.support), str(lm.predicted), str(lm.true_positives),
                          _vci(lm.precision), _vci(lm.recall), _num(lm.f1, 2))
    out.print(per_label)
    lenient = Table("gold", "lenient rate [95% CI]", "n",
                    title="Lenient rate (judge said supported) per gold label and subtype",
                    title_justify="left")
    for label, e in r.lenient_by_label.items():
        lenient.add_row(f"label {label}", _vci(e), str(e.n))
    for subtype, e in r.per_subtype.items():
        lenient.add_row(f"subtype {subtype}", _vci(e), str(e.n))
    out.print(lenient)
    g = outcome.gate
    gate = Table("gate (zero tolerance)", "failures", "of", "status",
                 title="Validity gate (reported apart from the rates)", title_justify="left")
    for name, key in (("schema: judge gave valid output", "schema"),
                      ("evidence: judge's quotes/sources exist", "evidence")):
        ok = g[key]["passed"]
        gate.add_row(name, str(g[key]["failures"]), str(g["n"]),
                     "[green]passed[/]" if ok else "[red]FAILED[/]")
    out.print(gate)
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
        out.print(strata)
        weighted = Table("figure", "value [95% CI]", "n", "interval",
                         title=f"Population estimates (weighted; cover {w.design.population} "
                               "claims)", title_justify="left")
        for name, e in (("lenient rate", w.lenient_rate), ("strict rate", w.strict_rate),
                        ("queue recall", w.queue_recall), ("queue load", w.queue_load),
                        ("accuracy", w.accuracy)):
            weighted.add_row(name, _vci(e), str(e.n), e.ci_method)
        out.print(weighted)
        for note in w.design.notes:
            out.print(f"[dim]{escape(note)}[/]")
    if r.per_dataset:
        ds = Table("dataset", "n", "acc.", "bal.", "κ", "len.", "str.", "recall", "load",
                   "err.", title="Per dataset (lenient, strict, queue recall and load; "
                                 "intervals in --json / --html)", title_justify="left")
        ds.columns[0].no_wrap = True

        def p0(x: float) -> str:
            return "—" if not math.isfinite(x) else f"{100 * x:.0f}%"

        for name, f in r.per_dataset.items():
            ds.add_row(name, str(f.n), p0(f.accuracy.value), p0(f.balanced_accuracy.value),
                       _num(f.kappa.value, 2), p0(f.lenient_rate.value),
                       p0(f.strict_rate.value), p0(f.queue_recall.value),
                       p0(f.queue_load.value), str(f.judge_errors))
        out.print(ds)
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
        out.print(people)
        for note in h.notes:
            out.print(f"[dim]{escape(note)}[/]")
    for note in r.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")


def _report_violations(violations: list[Any]) -> None:
    if not violations:
        return
    for v in violations:
        message = v.message if hasattr(v, "message") else v["message"]
        console.print(f"[bold red]threshold violated:[/] {escape(message)}")
    raise typer.Exit(THRESHOLD_EXIT)


def calibration_violations(outcome: Any, thresholds: dict[str, float]) -> list[dict[str, Any]]:
    from calibration import check_thresholds
    from judge.evaluation import GATE_THRESHOLDS

    found: list[dict[str, Any]] = []
    gate_keys = {"schema_errors_above": "schema", "invalid_evidence_above": "evidence"}
    for key in GATE_THRESHOLDS:
        if key in thresholds:
            observed = outcome.gate[gate_keys[key]]["failures"]
            if observed > thresholds[key]:
                found.append({"name": key, "threshold": thresholds[key], "observed": observed,
                              "message": f"{key} {thresholds[key]:g}: {observed} of "
                                         f"{outcome.gate['n']} claims fail the "
                                         f"{gate_keys[key]} gate"})
    rest = {k: v for k, v in thresholds.items() if k not in GATE_THRESHOLDS}
    try:
        found += [v.model_dump(mode="json") for v in check_thresholds(outcome.report, rest)]
    except ValueError as exc:
        fail(f"{exc} (also: {', '.join(GATE_THRESHOLDS)})")
    return found


def _emit_calibration(outcome: Any, as_json: bool, html: Path | None,
                      thresholds: dict[str, float], extra: dict[str, Any] | None = None,
                      output_json: Path | None = None) -> None:
    from calibration import render_calibration_html
    from judge.evaluation import calibration_json, extra_html, inject_html, now_iso

    violations = calibration_violations(outcome, thresholds) if thresholds else []
    data = {"generated_at": now_iso(), **calibration_json(outcome), **(extra or {}),
            "violations": violations}
    if output_json is not None:
        output_json.parent.mkdir(parents=True, exist_ok=True)
        output_json.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n",
                               encoding="utf-8")
    if as_json:
        print_json(data)
    else:
        print_calibration(outcome, data)
        if extra and extra.get("cost"):
            c = extra["cost"]
            out.print(f"cost: {c['calls']} model calls, {c['model_seconds']} s of model time "
                      f"for {c['claims']} claims ({c['calls_per_claim']} calls, "
                      f"{c['seconds_per_claim']} s per claim)")
    if html is not None:
        page = inject_html(render_calibration_html(outcome.report), extra_html(outcome))
        _write_html(html, page)
    _report_violations(violations)


# --------------------------------------------------------------------------- calibrate


@app.command()
def calibrate(
    db: Path = DB_OPTION,
    gold: Path = typer.Option(..., "--gold", help="Gold JSONL file (human labels)."),
    judge_version: str | None = typer.Option(
        None, "--judge-version", help="Judge version id or unique prefix (default: the one "
                                      "version that judged the gold claims)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report."),
    fail_on: list[str] = typer.Option([], "--fail-on", help=FAIL_ON_HELP),
) -> None:
    """Compare the judge's verdicts with human gold labels on the same claims (matched by
    claim id, or by claim text + sources): confusion matrix, direction of error (lenient /
    strict), review-queue recall and load, kappa, per label and subtype, with intervals.

    Refuses, without any override, when the judge model generated the judged answers or
    when a gold label was not given by a person."""
    from judge.evaluation import EvaluationError
    from judge.evaluation import calibrate as run_calibration

    thresholds = parse_fail_on(fail_on)
    gold_file = _gold(gold)
    store = open_store(db, must_exist=True)
    try:
        outcome = run_calibration(store, gold_file, judge_version)
    except EvaluationError as exc:
        fail(escape(str(exc)))
    _emit_calibration(outcome, as_json, html, thresholds)


# --------------------------------------------------------------------------- eval-gold


@app.command("eval-gold")
def eval_gold(
    gold: Path = typer.Argument(..., help="Gold JSONL file (claim-level, with sources)."),
    db: Path = DB_OPTION,
    config: Path | None = typer.Option(None, "--config", "-c", help="Judge config (TOML)."),
    model: str | None = typer.Option(None, "--model", "-m", help="Any litellm model string."),
    concurrency: int | None = typer.Option(None, "--concurrency", "-j", min=1, max=64),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N items."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report."),
    output_json: Path | None = typer.Option(
        None, "--output-json", help="Also write the JSON report to this file."),
    fail_on: list[str] = typer.Option([], "--fail-on", help=FAIL_ON_HELP),
) -> None:
    """Judge the claims of a gold file (as pre-split claims with their sources), then print
    the calibration report of that run. Resumable; stored model calls are reused."""
    from judge.evaluation import (
        EvaluationError,
        StoreIndex,
        eval_cost,
        gold_to_records,
        records_path,
        write_records,
    )
    from judge.evaluation import calibrate as run_calibration

    thresholds = parse_fail_on(fail_on)
    gold_file = _gold(gold)
    entries = gold_file.entries[:limit] if limit else gold_file.entries
    conv = gold_to_records(entries)
    if conv.problems:
        fail("some gold items cannot be judged:\n" + escape("\n".join(conv.problems[:20])))
    cfg = _load_config(config, model=model, concurrency=concurrency)
    store = open_store(db)
    path = write_records(conv, records_path(db, gold, conv))
    console.print(f"{len(entries)} gold items → {len(conv.records)} answer records "
                  f"({escape(str(path))})")
    summary = _run(path, store, cfg, "judging gold claims", as_json)
    for rej in summary.rejected_lines:
        console.print(f"[yellow]records line {rej['line']} rejected:[/] {escape(rej['error'])}")
    stale = summary.stale_warning(db)
    if stale:
        console.print(f"[yellow]warning:[/] {escape(stale)}")
    try:
        index = StoreIndex(store, [summary.judge_version])
        outcome = run_calibration(store, gold_file, summary.judge_version, entries=entries,
                                  refs=conv.refs, index=index)
    except EvaluationError as exc:
        fail(escape(str(exc)))
    extra = {
        "run": summary.as_dict(),
        "cost": eval_cost(store, outcome.rows),
        "cpus": os.cpu_count(),
        "limit": limit,
    }
    _emit_calibration(outcome, as_json, html, thresholds, extra, output_json)


# --------------------------------------------------------------------------- drift


def print_drift(report: Any, data: dict[str, Any], claims: dict[str, str]) -> None:
    out.print(f"[bold]Drift: {escape(report.version_a)} (A) → {escape(report.version_b)} (B)"
              f"[/]")
    out.print(f"{report.n} claims judged by both; {report.n_flipped} changed label; "
              f"{len(data['only_a'])} judged only by A, {len(data['only_b'])} only by B")
    out.print(_confusion_table(report.flips, "A", "B", "Flip table"))
    stats = Table("figure", "value [95% CI]", "n", title="Agreement between versions",
                  title_justify="left")
    stats.add_row("agreement (same label)", _vci(report.agreement), str(report.agreement.n))
    stats.add_row("Cohen's kappa A vs B", _vci(report.kappa, _num), str(report.kappa.n))
    out.print(stats)
    tests = Table("test", "statistic", "df", "p", "method", title="Significance",
                  title_justify="left")
    for name, t in (("McNemar (supported vs not)", report.mcnemar),
                    ("Stuart–Maxwell (marginal homogeneity)", report.stuart_maxwell),
                    ("Bowker (symmetry)", report.bowker)):
        tests.add_row(name, _num(t.statistic), "—" if t.df is None else str(t.df),
                      _pvalue(t.p_value), t.method + (f" ({t.note})" if t.note else ""))
    out.print(tests)
    rates = Table("label", "rate A", "rate B", "change B − A [95% CI]",
                  title="Label rates", title_justify="left")
    for label, c in report.per_label.items():
        rates.add_row(label, _pct(c.rate_a.value), _pct(c.rate_b.value), _vci(c.change))
    out.print(rates)
    cal = data.get("calibration")
    if cal:
        side = Table("figure (on claims both judged)", "A", "B",
                     title=f"Against gold ({cal['a']['n']} claims)", title_justify="left")

        def fig(d: dict[str, Any], key: str) -> str:
            v = d[key]
            if isinstance(v, dict):
                fmt = _num if key == "kappa" else _pct
                return f"{fmt(v['value'])} [{fmt(v['ci_low'])}–{fmt(v['ci_high'])}]"
            return str(v) if isinstance(v, int) else _pct(v)

        for key in ("accuracy", "balanced_accuracy", "kappa", "lenient_rate", "strict_rate",
                    "queue_recall", "queue_load", "judge_errors"):
            side.add_row(key.replace("_", " "), fig(cal["a"], key), fig(cal["b"], key))
        out.print(side)
        g = report.gold
        if g is not None:
            out.print(f"flips toward gold: {g.toward_gold}; away from gold: "
                      f"{g.away_from_gold}; neither: {g.neither}")
    if report.flipped:
        out.print(f"[bold]Flipped claims ({report.n_flipped})[/]")
        for f in report.flipped[:100]:
            gold = f" (gold {f.gold_label}: {f.toward_gold})" if f.gold_label else ""
            out.print(f"  {f.claim_id}: [bold]{f.label_a} → {f.label_b}[/]{escape(gold)}")
            out.print(f"    claim: {escape(claims.get(f.claim_id, '')[:300])}")
            out.print(f"    A: {escape((f.rationale_a or '-')[:300])}")
            out.print(f"    B: {escape((f.rationale_b or '-')[:300])}")
        if report.n_flipped > 100:
            out.print(f"  ... {report.n_flipped - 100} more in --json / --html")
    else:
        out.print("no claim changed label")


@app.command()
def drift(
    db: Path = DB_OPTION,
    version_a: str = typer.Option(..., "--from", help="Judge version A (id or unique prefix)."),
    version_b: str = typer.Option(..., "--to", help="Judge version B (id or unique prefix)."),
    gold: Path | None = typer.Option(
        None, "--gold", help="Gold file: judge its claims with both versions if needed, and "
                             "compare each version with the gold labels."),
    input: Path | None = typer.Option(
        None, "--input", help="Answer records both versions must have judged (run if needed)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report."),
    fail_on: list[str] = typer.Option([], "--fail-on", help=FAIL_ON_HELP),
) -> None:
    """Compare two judge versions on the same claims: flip table, agreement and kappa,
    McNemar / Stuart–Maxwell / Bowker, label rate changes, flipped claims with both
    rationales; with --gold, each version against gold and flips toward / away from it."""
    from calibration import build_drift_report, check_thresholds, render_drift_html
    from judge.evaluation import (
        EvaluationError,
        StoreIndex,
        drift_pairs,
        extra_html,
        flatten_figures,
        gold_to_records,
        inject_html,
        input_answer_ids,
        missing_answers,
        now_iso,
        records_path,
        resolve_version,
        version_config,
        write_records,
    )
    from judge.evaluation import calibrate as run_calibration

    thresholds = parse_fail_on(fail_on)
    store = open_store(db, must_exist=True)
    gold_file = _gold(gold) if gold is not None else None
    try:
        a, b = resolve_version(store, version_a), resolve_version(store, version_b)
        if a == b:
            fail("--from and --to name the same judge version")
        inputs: list[Path] = []
        conv = None
        if input is not None:
            if not input.exists():
                fail(f"input file {input} does not exist")
            inputs.append(input)
        if gold_file is not None:
            conv = gold_to_records(gold_file.entries)
            if conv.problems:
                fail("some gold items cannot be judged:\n" + escape("\n".join(conv.problems[:20])))
            inputs.append(write_records(conv, records_path(db, gold_file.path, conv)))
        input_ids: set[str] = set()
        for path in inputs:
            ids = input_answer_ids(path)
            if path == input:
                input_ids |= set(ids)
            for version in (a, b):
                todo = missing_answers(store, version, ids)
                if todo:
                    console.print(f"{version} has not judged {len(todo)} answer(s) of "
                                  f"{escape(str(path))}: judging them now")
                    summary = _run(path, store, version_config(store, version),
                                   f"judging with {version}", as_json, purpose="drift")
                    if summary.judge_version != version:
                        fail(f"re-running {version} produced version {summary.judge_version}")
        index = StoreIndex(store, [a, b])
        gold_by_claim: dict[str, str] = {}
        claim_scope: set[str] | None = None
        if input is not None:
            claim_scope = {cid for v in (a, b) for cid, r in index.rows.get(v, {}).items()
                           if r["answer_id"] in input_ids}
        outcomes = {}
        if gold_file is not None:
            claim_scope = claim_scope or set()
            for key, version in (("a", a), ("b", b)):
                outcome = run_calibration(store, gold_file, version, refs=conv.refs if conv
                                          else None, index=index)
                outcomes[key] = outcome
                for m in outcome.matching.matched:
                    gold_by_claim[m.row["claim_id"]] = m.entry.item.label
                    claim_scope.add(m.row["claim_id"])
        pairs, only_a, only_b = drift_pairs(index, a, b, claim_ids=claim_scope,
                                            gold_by_claim=gold_by_claim)
        if not pairs:
            fail(f"{a} and {b} judged no claim in common"
                 + ("" if inputs else "; pass --input FILE or --gold FILE to have them judge "
                                      "the same answers"))
        report = build_drift_report(pairs, version_a=a, version_b=b)
        common = {p.claim_id for p in pairs}
        calibration = None
        if gold_file is not None:
            calibration = {}
            for key, version in (("a", a), ("b", b)):
                both = run_calibration(store, gold_file, version,
                                       refs=conv.refs if conv else None, index=index,
                                       restrict=common)
                outcomes[key] = both
                calibration[key] = {"judge_version": version, **flatten_figures(both.report),
                                    "validity_gate": both.gate}
    except EvaluationError as exc:
        fail(escape(str(exc)))
    try:
        violations = [v.model_dump(mode="json") for v in check_thresholds(report, thresholds)]
    except ValueError as exc:
        fail(escape(str(exc)))
    claims = {cid: index.rows[a][cid]["claim"] for cid in common}
    dump = report.model_dump(mode="json")
    data = {
        "generated_at": now_iso(),
        "version_a": a,
        "version_b": b,
        "n": report.n,
        "flips": dump["flips"],
        "n_flipped": report.n_flipped,
        "agreement": dump["agreement"]["value"],
        "agreement_ci": {k: dump["agreement"][k] for k in ("ci_low", "ci_high", "n")},
        "kappa": {k: dump["kappa"][k] for k in ("value", "ci_low", "ci_high", "n")},
        "mcnemar_p": dump["mcnemar"]["p_value"],
        "stuart_maxwell_p": dump["stuart_maxwell"]["p_value"],
        "bowker_p": dump["bowker"]["p_value"],
        "flipped": [f.claim_id for f in report.flipped],
        "flipped_claims": [{**f.model_dump(mode="json"), "claim": claims.get(f.claim_id)}
                           for f in report.flipped],
        "per_label": dump["per_label"],
        "only_a": only_a,
        "only_b": only_b,
        "gold": dump["gold"],
        "calibration": calibration,
        "violations": violations,
        "report": dump,
    }
    if as_json:
        print_json(data)
    else:
        print_drift(report, data, claims)
    if html is not None:
        from calibration import ThresholdViolation

        page = render_drift_html(
            report, [ThresholdViolation.model_validate(v) for v in violations]
            if thresholds else None)
        for key, label in (("a", "A"), ("b", "B")):
            if key in outcomes:
                page = inject_html(page, extra_html(
                    outcomes[key], f"Version {label} ({outcomes[key].report.judge_version}): "
                                   "gates and gold coverage"))
        _write_html(html, page)
    _report_violations(violations)


# --------------------------------------------------------------------------- gold-check


@app.command("gold-check")
def gold_check(
    files: list[Path] = typer.Argument(..., help="Gold JSONL file(s)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per file list."),
) -> None:
    """Validate gold files: every problem with its line number; items labelled by a model are
    refused. Exit code 1 when any file has an invalid or refused item."""
    results = []
    bad = False
    for path in files:
        if not path.exists():
            fail(f"gold file {path} does not exist")
        gold = read_gold(path)
        bad = bad or not gold.ok
        results.append((gold, gold.summary()))
    if as_json:
        print_json([{**summary, "ok": gold.ok,
                     "problems": [p.as_dict() for p in gold.problems]}
                    for gold, summary in results])
    else:
        for gold, summary in results:
            status = "[green]ok[/]" if gold.ok else "[red]NOT USABLE[/]"
            out.print(f"[bold]{escape(str(gold.path))}[/]: {status}: {summary['items']} valid "
                      f"items of {summary['lines']} lines; labels "
                      f"{escape(json.dumps(summary['labels']))}; annotators "
                      f"{escape(json.dumps(summary['annotators']))}; guideline versions "
                      f"{escape(json.dumps(summary['guideline_versions']))}")
            if summary["revised"] or summary["adjudicated"] or summary["with_reviews"]:
                out.print(f"  revised {summary['revised']}, adjudicated "
                          f"{summary['adjudicated']}, with reviews {summary['with_reviews']}")
            for problem in gold.problems:
                colour = {"error": "red", "refused": "red", "warning": "yellow"}[problem.kind]
                out.print(f"  [{colour}]{escape(str(problem))}[/]")
    if bad:
        raise typer.Exit(1)


def _register_gold_validate() -> None:
    """Also offer ``judge gold validate`` when the review commands' ``gold`` group exists."""
    try:
        from judge.cli.review import gold_app
    except ImportError:
        return
    gold_app.command("validate")(gold_check)


_register_gold_validate()
