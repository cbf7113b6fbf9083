"""Calibration reports as JSON (the contract keys, with the full report under ``report``) and
as HTML, threshold checks for CI gates, and what judging the claims cost."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from calibration import Figures, check_thresholds, render_calibration_html
from calibration.plots import reliability
from calibration.stats import roc_auc
from judge.evaluation.calibrate import CalibrationOutcome
from judge.runs.summary import RunSummary
from judge.store import Store
from judge.text import script_lang

#: Thresholds a calibration gate understands besides :func:`calibration.check_thresholds`'s:
#: the zero-tolerance validity gate, as counts.
GATE_THRESHOLDS = ("schema_errors_above", "invalid_evidence_above")

# --------------------------------------------------------------------------- misjudged


def _human_rationale(item: Any) -> str | None:
    """Why people gave the gold label, when the gold item says: the adjudication's reason,
    a revision's reason, or the note."""
    if item.adjudication is not None:
        return str(item.adjudication.reason)
    if item.revision is not None:
        return str(item.revision.reason)
    note: str | None = item.note
    return note


def support_bins(outcome: CalibrationOutcome, n_bins: int = 10
                 ) -> list[tuple[float, float, int]]:
    """(mean support, share gold-supported, claims) per tenth of ``support``, for the claims
    that have one (the judge's probability that the claim is supported)."""
    groups: dict[int, list[tuple[float, bool]]] = {}
    for m in outcome.matching.matched:
        support = m.row.get("support")
        if support is not None:
            k = min(int(support * n_bins), n_bins - 1)
            groups.setdefault(k, []).append((support, m.entry.item.label == "supported"))
    return [(sum(s for s, _ in g) / len(g), sum(ok for _, ok in g) / len(g), len(g))
            for _, g in sorted(groups.items())]


def support_auc(outcome: CalibrationOutcome) -> dict[str | None, Any]:
    """ROC AUC of ``support`` (gold-supported claims against the others: how well the
    support score ranks them, whatever the threshold), unweighted, with its interval: over
    every claim with a support score (key None) and per gold dataset."""
    scores: dict[str | None, tuple[list[float], list[float]]] = {}
    for m in outcome.matching.matched:
        support = m.row.get("support")
        if support is None:
            continue
        item = m.entry.item
        for key in (None, item.dataset):
            pos, neg = scores.setdefault(key, ([], []))
            (pos if item.label == "supported" else neg).append(float(support))
    return {key: _est(roc_auc(pos, neg)) for key, (pos, neg) in scores.items()}


def misjudged(outcome: CalibrationOutcome) -> list[dict[str, Any]]:
    """The claims whose judge label differs from the gold label, with the claim's text and
    both rationales: ``lenient`` (the judge passed a claim people rejected) first, then
    ``strict`` (it flagged a claim people accepted), then other wrong labels."""
    out = []
    for m in outcome.matching.matched:
        item, row = m.entry.item, m.row
        if row["label"] == item.label:
            continue
        direction = ("lenient" if row["label"] == "supported" else
                     "strict" if item.label == "supported" else "other label")
        out.append({
            "gold_id": item.id, "claim_id": row["claim_id"], "answer_id": row["answer_id"],
            "dataset": item.dataset, "claim": row.get("claim") or item.claim,
            "gold_label": item.label, "gold_subtype": item.subtype,
            "judge_label": row["label"], "judge_subtype": row.get("subtype"),
            "support": row.get("support"), "direction": direction,
            "judge_rationale": row.get("rationale") or row.get("error"),
            "human_rationale": _human_rationale(item), "annotator": item.annotator,
        })
    order = {"lenient": 0, "strict": 1, "other label": 2}
    return sorted(out, key=lambda d: order[d["direction"]])


# --------------------------------------------------------------------------- JSON


def _ci(e: Any) -> dict[str, Any]:
    d = e.model_dump(mode="json")
    return {"ci_low": d["ci_low"], "ci_high": d["ci_high"], "n": d["n"]}


def _est(e: Any) -> dict[str, Any]:
    d = e.model_dump(mode="json")
    return {"value": d["value"], "ci_low": d["ci_low"], "ci_high": d["ci_high"], "n": d["n"]}


def _value(e: Any) -> float | None:
    value: float | None = e.model_dump(mode="json")["value"]
    return value


def flatten_figures(f: Figures) -> dict[str, Any]:
    """The JSON contract of a set of figures: plain numbers where the contract wants them
    (``accuracy``, ``balanced_accuracy``, ``queue_recall``, ``queue_load``) with the
    intervals alongside (``*_ci``); ``kappa``, ``lenient_rate``, ``strict_rate`` as
    ``value``/``ci_low``/``ci_high``/``n``."""
    d = f.model_dump(mode="json")
    return {
        "n": f.n,
        "confusion": d["confusion"],
        "accuracy": _value(f.accuracy), "accuracy_ci": _ci(f.accuracy),
        "balanced_accuracy": _value(f.balanced_accuracy),
        "balanced_accuracy_ci": _ci(f.balanced_accuracy),
        "kappa": _est(f.kappa),
        "lenient_rate": _est(f.lenient_rate),
        "strict_rate": _est(f.strict_rate),
        "lenient_by_label": {k: _est(v) for k, v in f.lenient_by_label.items()},
        "lenient_by_subtype": {k: _est(v) for k, v in f.per_subtype.items()},
        "per_label": d["per_label"],
        "subtype_agreement": _est(f.subtype_agreement),
        "queue_recall": _value(f.queue_recall), "queue_recall_ci": _ci(f.queue_recall),
        "queue_load": _value(f.queue_load), "queue_load_ci": _ci(f.queue_load),
        "queue_false_alarm": _est(f.queue_false_alarm),
        "queue_budget": {k: _est(v) for k, v in f.queue_budget.items()},
        "queue_points": [{"review_support_below": p.review_support_below,
                          "recall": _est(p.recall), "false_alarm": _est(p.false_alarm),
                          "load": _est(p.load)} for p in f.queue_points],
        "judge_errors": f.judge_errors,
        "judge_errors_by_gold_label": d["judge_errors_by_gold_label"],
    }


def calibration_json(outcome: CalibrationOutcome) -> dict[str, Any]:
    """One JSON object: the contract keys, the extras, and the full report under ``report``
    (which validates back into :class:`calibration.CalibrationReport`)."""
    r = outcome.report
    m = outcome.matching
    dump = r.model_dump(mode="json")
    aucs = support_auc(outcome)
    out = {
        "judge_version": r.judge_version,
        "model": outcome.model,
        "review_support_below": outcome.review_support_below,
        "operating_points": outcome.operating_points or [],
        "recall_watch": outcome.recall_watch,
        "queue_load_parts": outcome.load_parts,
        "in_sample_points": [p.get("point_id") or p.get("source") for p in in_sample(outcome)],
        **flatten_figures(r),
        "refused_answers": {
            "count": len(m.refused),
            "items": [{"gold_id": e.item.id, "line": e.line, "reason": reason}
                      for e, reason in m.refused],
        },
        "not_judged": {"count": len(m.not_judged),
                       "gold_ids": [e.item.id for e in m.not_judged][:100]},
        "validity_gate": outcome.gate,
        "weighted": dump["weighted"],
        "roc_auc_support": aucs.get(None),
        "per_dataset": {name: {**flatten_figures(f), "roc_auc_support": aucs.get(name)}
                        for name, f in r.per_dataset.items()},
        "human_agreement": dump["human_agreement"],
        "notes": r.notes,
        "misjudged": misjudged(outcome),
        "support_reliability": [{"mean_support": p, "share_supported": o, "claims": n}
                                for p, o, n in support_bins(outcome)],
        "gold": outcome.gold,
        "confidence": r.confidence,
        "report": dump,
    }
    return out


# --------------------------------------------------------------------------- HTML


def _esc(value: Any) -> str:
    import html

    return html.escape(str(value), quote=True)


def _lang(text: str) -> str:
    """`` lang="zh-Hant"`` (one of a few fixed tags) for a cell of Chinese or Japanese text."""
    tag = script_lang(text)
    return f' lang="{tag}"' if tag else ""


def _watch_html(watch: dict[str, Any] | None, suffix: str) -> list[str]:
    if not watch:
        return []
    bad = watch["status"] in ("below", "significantly_below")
    return [f"<p id=\"recall-watch{suffix}\" class=\"{'bad' if bad else ''}\">Recall watch "
            f"(queue {_esc(watch['queue_id'])}): {_esc(watch['message'])}</p>"]


def in_sample(outcome: CalibrationOutcome) -> list[dict[str, Any]]:
    """The operating points set on the very gold this report measures (same sha256): the
    figures at those points are in-sample, optimistic for new claims."""
    sha = outcome.gold.get("sha256")
    return [p for p in outcome.operating_points or [] if sha and p.get("gold_sha256") == sha]


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "–"


def load_sentence(parts: dict[str, int]) -> str:
    """What reviewers get from a queue over ``parts['claims']`` claims, in parts."""
    n = parts["claims"]
    return (f"A queue over these {n} claims with the [review] settings gives reviewers "
            f"{parts['total']} claims ({_share(parts['total'], n)}): {parts['flagged']} the "
            f"operating point and the checks flag ({_share(parts['flagged'], n)}), "
            f"{parts['near_threshold']} passed claims nearest the threshold "
            f"({_share(parts['near_threshold'], n)}, [review] informative_share) and "
            f"{parts['sampled']} sampled passed claims ({_share(parts['sampled'], n)}, the "
            "queue's sample rate and minimum sample).")


def lead_html(outcome: CalibrationOutcome) -> str:
    """The answer a calibration page opens with: the operating point and the recall it
    states, the recall measured here (marked in-sample when the point was set on this gold),
    the recall watch, and the load reviewers get, broken into its parts."""
    r = outcome.report
    inside = in_sample(outcome)
    stated = [p for p in outcome.operating_points or [] if p.get("threshold") is not None
              and p.get("source") in ("gold", "default")]
    parts = ['<section id="answer" class="answer">']
    for p in outcome.operating_points or []:
        where = f" domain {_esc(p['domain'])}" if p.get("domain") else ""
        mark = (" <b class=\"bad\">In-sample:</b> set on this gold file, so the figures at "
                "this point below are measured on the claims it was fitted to and are "
                "optimistic for new claims." if p in inside else "")
        parts.append(f"<p><b>Operating point</b> of {_esc(p['judge_version'])}{where} "
                     f"({_esc(p['source'])}): {_esc(p['statement'])}.{mark}</p>")
    if stated:
        target = min(p["target_recall"] for p in stated)
        confidence = min(p["confidence"] for p in stated)
        measured = r.queue_recall
        ci = (f" [{measured.ci_low:.0%}, {measured.ci_high:.0%}]"
              if math.isfinite(measured.ci_low) and math.isfinite(measured.ci_high) else "")
        where = ("in-sample: on the gold the point was set on" if inside else
                 "out-of-sample: this gold was not used to set the point")
        value = f"{measured.value:.0%}" if math.isfinite(measured.value) else "–"
        parts.append(f"<p id=\"stated-recall\"><b>Stated recall</b> &ge; {target:.0%} with "
                     f"{confidence:.0%} confidence; measured here {value}{ci} on "
                     f"{measured.n} problem claims ({where}).</p>")
    else:
        parts.append("<p id=\"stated-recall\"><b>No stated recall</b>: this version has no "
                     "operating point set from gold, so the queue flags by labels and review "
                     "reasons; set one with <code>judge queue threshold</code>.</p>")
    watch = outcome.recall_watch
    bad = "bad" if watch and watch["status"] in ("below", "significantly_below") else ""
    said = (f"queue {_esc(watch['queue_id'])}: {_esc(watch['message'])}" if watch else
            "no queue of this version in the store yet")
    parts.append(f"<p id=\"recall-watch\" class=\"{bad}\"><b>Recall watch</b>: {said}</p>")
    if outcome.load_parts:
        parts.append(f"<p id=\"load\"><b>Load</b>: {_esc(load_sentence(outcome.load_parts))}"
                     "</p>")
    parts.append("</section>")
    return "\n".join(parts)


def inject_lead(page: str, lead: str) -> str:
    """Put ``lead`` right under the page's title, above the contents list."""
    at = page.find("</h1>")
    if at < 0:
        return lead + page
    at += len("</h1>")
    return page[:at] + "\n" + lead + page[at:]


def extra_html(outcome: CalibrationOutcome, title: str = "Gates, refusals and coverage",
               version: str | None = None) -> str:
    """Sections the calibration package's page does not have: the validity gate (apart from
    the rates), refused answers and gold items without a verdict, the gold file, the
    reliability of support and the misjudged claims. ``version`` (``"A"``, ``"B"``: one of
    two on a drift page) names the version in every section title and id, and adds its
    operating point and recall watch (a calibration page opens with those,
    :func:`lead_html`)."""
    g, m = outcome.gate, outcome.matching
    status = "passed" if g["passed"] else "FAILED"
    suffix = f"-{version.lower()}" if version else ""
    named = f"Version {version}: " if version else ""
    point = [
        f"<h3 id=\"operating-point{suffix}\">Operating point of the queue</h3>",
        *[f"<p>{_esc(p['judge_version'])}{' domain ' + _esc(p['domain']) if p['domain'] else ''}"
          f" ({_esc(p['source'])}): {_esc(p['statement'])}</p>"
          for p in outcome.operating_points or []],
        *_watch_html(outcome.recall_watch, suffix),
    ] if version else []
    parts = [
        f"<h2>{_esc(title)}</h2>",
        "<h3>Validity gate (zero tolerance, not a rate)</h3>",
        "<table><tr><th class=\"l\">gate</th><th>failures</th><th>of</th>"
        "<th class=\"l\">status</th></tr>",
        f"<tr><th class=\"l\">schema (judge produced valid output)</th>"
        f"<td>{g['schema']['failures']}</td><td>{g['n']}</td>"
        f"<td class=\"l\">{'passed' if g['schema']['passed'] else 'FAILED'}</td></tr>",
        f"<tr><th class=\"l\">evidence (judge's quotes and source ids exist)</th>"
        f"<td>{g['evidence']['failures']}</td><td>{g['n']}</td>"
        f"<td class=\"l\">{'passed' if g['evidence']['passed'] else 'FAILED'}</td></tr>",
        "</table>",
        f"<p>Gate: <b class=\"{'' if g['passed'] else 'bad'}\">{status}</b>. Answer citations "
        f"that do not resolve (the answer's fault, sent to review): "
        f"{g['answer_citation_failures']}.</p>",
        *point,
        "<h3>Coverage of the gold file</h3>",
        f"<p>Gold file <code>{_esc(outcome.gold['file'])}</code> (sha256 "
        f"{_esc(outcome.gold['sha256'][:12])}): {outcome.gold['items']} items; "
        f"{len(m.matched)} matched to a verdict, {len(m.refused)} refused by the judge "
        f"(self-grading ban), {len(m.not_judged)} not judged by this version, "
        f"{len(m.duplicates)} duplicates of an earlier item. Judge model: "
        f"<code>{_esc(outcome.model)}</code>.</p>",
    ]
    if m.refused:
        parts.append("<table id=\"refused\"><tr><th class=\"l\">gold item</th>"
                     "<th class=\"l\">reason</th></tr>")
        parts += [f"<tr><td class=\"l\">{_esc(e.item.id)}</td><td class=\"l\">{_esc(r)}</td></tr>"
                  for e, r in m.refused]
        parts.append("</table>")
    if m.not_judged:
        shown = ", ".join(_esc(e.item.id) for e in m.not_judged[:50])
        parts.append(f"<p class=\"note\">Not judged: {shown}"
                     f"{' …' if len(m.not_judged) > 50 else ''}</p>")
    bins = support_bins(outcome)
    heading = f"{named}reliability of support" if version else "Reliability of support"
    parts.append(f"<h2 id=\"reliability{suffix}\">{heading}</h2><p>support is the "
                 "judge's probability that a claim is supported. Per tenth of its range: the "
                 "mean predicted against the share of those claims that gold says are "
                 f"supported ({sum(n for *_, n in bins)} claims with a support value).</p>")
    parts.append(str(reliability(bins, "Reliability of support: predicted against observed")))
    wrong = misjudged(outcome)
    who = f"{named}claims it" if version else "Claims the judge"
    parts.append(f"<h2 id=\"misjudged{suffix}\">{who} got wrong ({len(wrong)})</h2>")
    if wrong:
        parts.append("<p>Lenient first (the judge passed a claim people rejected), then "
                     "strict (it flagged a claim people accepted).</p>")
        parts.append(f"<table id=\"misjudged-claims{suffix}\"><tr><th class=\"l\">claim</th>"
                     "<th class=\"l\">direction</th><th class=\"l\">gold</th>"
                     "<th class=\"l\">judge</th><th>support</th>"
                     "<th class=\"l\">judge's rationale</th>"
                     "<th class=\"l\">people's rationale</th></tr>")
        for w in wrong:
            gold = w["gold_label"] + (f" / {w['gold_subtype']}" if w["gold_subtype"] else "")
            said = w["judge_label"] + (f" / {w['judge_subtype']}" if w["judge_subtype"]
                                       else "")
            support = "—" if w["support"] is None else f"{w['support']:.2f}"
            parts.append(
                f"<tr><td class=\"rationale\"{_lang(w['claim'])}>{_esc(w['claim'])}<br>"
                f"<span class=\"muted\">"
                f"{_esc(w['gold_id'])}</span></td><td class=\"l\">{_esc(w['direction'])}</td>"
                f"<td class=\"l\">{_esc(gold)}</td><td class=\"l\">{_esc(said)}</td>"
                f"<td>{support}</td><td class=\"rationale\">{_esc(w['judge_rationale'] or '')}"
                f"</td><td class=\"rationale\">{_esc(w['human_rationale'] or '—')}</td></tr>")
        parts.append("</table>")
    return "\n".join(parts)


def inject_html(page: str, section: str) -> str:
    """Add ``section`` at the end of a page rendered by :mod:`calibration.render`; its
    sections join the page's contents list and become collapsible like the others."""
    from calibration.render import navigable

    marker = "</body>"
    at = page.rfind(marker)
    page = page[:at] + section + "\n" + page[at:] if at >= 0 else page + section
    return navigable(page)


# --------------------------------------------------------------------------- cost


def eval_cost(store: Store, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What judging these claims cost, from the stored calls (so a resumed or repeated run
    reports the cost of the verdicts, not of its tail): calls, model seconds, tokens."""
    totals = {"calls": 0, "latency_ms": 0.0, "prompt_tokens": 0, "completion_tokens": 0,
              "cost": 0.0, "failed": 0}
    columns = "latency_ms, prompt_tokens, completion_tokens, cost, error"
    for row in store.call_rows((c for r in rows for c in r["call_ids"]), columns):
        totals["calls"] += 1
        totals["latency_ms"] += row["latency_ms"] or 0.0
        totals["prompt_tokens"] += row["prompt_tokens"] or 0
        totals["completion_tokens"] += row["completion_tokens"] or 0
        totals["cost"] += row["cost"] or 0.0
        totals["failed"] += int(row["error"] is not None)
    n = len(rows)
    return {
        "claims": n,
        "calls": totals["calls"],
        "failed_calls": totals["failed"],
        "model_seconds": round(totals["latency_ms"] / 1000, 1),
        "calls_per_claim": round(totals["calls"] / n, 3) if n else None,
        "seconds_per_claim": round(totals["latency_ms"] / 1000 / n, 2) if n else None,
        "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"],
        "cost_usd": round(totals["cost"], 6),
    }


# --------------------------------------------------------------------------- result


@dataclass
class CalibrationResult:
    """A calibration report with everything its renderings show. ``extra`` holds what an
    evaluation run adds (``run``, ``cost``, ``cpus``, ``limit``); ``summary`` its run."""

    outcome: CalibrationOutcome
    extra: dict[str, Any] = field(default_factory=dict)
    summary: RunSummary | None = None
    generated_at: str = field(
        default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def report(self) -> Any:
        """The :class:`calibration.CalibrationReport`."""
        return self.outcome.report

    def violations(self, thresholds: dict[str, float]) -> list[dict[str, Any]]:
        """Thresholds (``kappa_below``, ``lenient_rate_above``, ``schema_errors_above``, ...)
        this report violates. Unknown keys raise ``ValueError``."""
        outcome = self.outcome
        found: list[dict[str, Any]] = []
        gate_keys = {"schema_errors_above": "schema", "invalid_evidence_above": "evidence"}
        for key in GATE_THRESHOLDS:
            if key in thresholds:
                observed = outcome.gate[gate_keys[key]]["failures"]
                if observed > thresholds[key]:
                    found.append({"name": key, "threshold": thresholds[key],
                                  "observed": observed,
                                  "message": f"{key} {thresholds[key]:g}: {observed} of "
                                             f"{outcome.gate['n']} claims fail the "
                                             f"{gate_keys[key]} gate"})
        rest = {k: v for k, v in thresholds.items() if k not in GATE_THRESHOLDS}
        try:
            found += [v.model_dump(mode="json") for v in check_thresholds(outcome.report, rest)]
        except ValueError as exc:
            raise ValueError(f"{exc} (also: {', '.join(GATE_THRESHOLDS)})") from exc
        return found

    def to_dict(self, thresholds: dict[str, float] | None = None) -> dict[str, Any]:
        """The JSON contract of ``judge calibrate --json`` / ``judge eval-gold --json``."""
        return {"generated_at": self.generated_at, **calibration_json(self.outcome),
                **self.extra, "violations": self.violations(thresholds or {})}

    def to_html(self) -> str:
        """A self-contained HTML page."""
        page = render_calibration_html(self.outcome.report)
        return inject_html(inject_lead(page, lead_html(self.outcome)), extra_html(self.outcome))
