"""The quality blocks of the READMEs, generated from ``judge eval-gold --output-json``
(``make eval``), never typed by hand.

    python -m research.quality_block --update-readme out/eval.json [--readme README.md] \
        [--details research/README.md]

``--readme``: the short block of the user README (one table per dataset and overall, and one
line naming the judge version, the gold file and the cost per claim) between
``<!-- quality:start -->`` and ``<!-- quality:end -->``; with ``--fit REPORT`` (the report of
``research/fit_per_domain.py``) the block also gives, per dataset, the rule ``judge fit``
learns from that dataset's tuning items against the default on its check items, and the
learning curve. ``--details``: the longer figures
(recall per gold label, the queue at other label mixes, reading budgets and thresholds, the
validity gate) between ``<!-- quality-details:start -->`` and ``<!-- quality-details:end -->``
of the research notes. Either refuses (and changes nothing) when its markers are missing.
Product code never writes a README.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calibration import max_share_for_load, projected_load
from calibration.formatting import pct, with_ci
from judge.verdicts import LABELS

ROOT = Path(__file__).resolve().parents[1]
QUALITY_START = "<!-- quality:start -->"
QUALITY_END = "<!-- quality:end -->"
DETAILS_START = "<!-- quality-details:start -->"
DETAILS_END = "<!-- quality-details:end -->"


class BlockError(ValueError):
    """The README has no markers for the block."""


def _pct(x: float | None) -> str:
    return pct(x, 0)


_with_ci = with_ci


def _recall(figures: dict[str, Any], label: str) -> str:
    metrics = (figures.get("per_label") or {}).get(label) or {}
    recall = metrics.get("recall")
    if not metrics.get("support") or not isinstance(recall, dict):
        return "–"
    return f"{_pct(recall.get('value'))} (n={metrics['support']})"


def _row(name: str, f: dict[str, Any]) -> str:
    bal = {"value": f["balanced_accuracy"], **(f.get("balanced_accuracy_ci") or {})}
    return (f"| {name} | {f['n']} | {_with_ci(bal, _pct)} | {_recall(f, 'contradicted')} | "
            f"{_pct(f['lenient_rate']['value'])} | {_pct(f['strict_rate']['value'])} | "
            f"{_pct(f['queue_recall'])} | {_pct((f.get('queue_false_alarm') or {}).get('value'))}"
            f" | {_pct(f['queue_load'])} |")


def _measured(data: dict[str, Any]) -> str:
    """Which judge version, on which gold file, when."""
    gold = data["gold"]
    subset = f"the first {data['limit']} items" if data.get("limit") else "all items"
    return (f"Judge `{data['judge_version']}` on {subset} of `{gold['file']}` (sha256 "
            f"`{gold['sha256'][:12]}`, {gold['items']} claims), measured "
            f"{data.get('generated_at', '?')[:10]} by `make eval`")


def in_sample_note(data: dict[str, Any], root: Path = ROOT) -> str | None:
    """When the measured version is the default's and its probe head was fitted on claims of
    the measured gold file: a line that says so (those figures overstate the judge)."""
    from judge import version_of
    from judge.config import JudgeConfig
    from judge.decide.probe import head_of
    from judge.evaluation.gold import load_gold

    def ids(path: Path) -> set[str]:
        return {e.item.id for e in load_gold(path).entries}

    config = JudgeConfig.load()
    if config.probe_head is None or data.get("judge_version") != version_of(config):
        return None
    fitted = head_of(config).about.get("fitted_on") or {}
    files = fitted.get("gold") or []
    files = [files] if isinstance(files, str) else list(files)
    gold = root / str((data.get("gold") or {}).get("file") or "")
    if not files or not gold.is_file():
        return None
    seen = set().union(*(ids(root / f) for f in files if (root / f).is_file()))
    measured = ids(gold)
    overlap = len(seen & measured)
    if not overlap:
        return None
    return (f"**In sample:** the default head was fitted on {overlap} of these {len(measured)} "
            f"claims ({', '.join(f'`{f}`' for f in files)}), so these figures overstate it; "
            "the held-back check of the shipped default is in research/README.md "
            "(\"fresh_check reads\").")


def quality_table(data: dict[str, Any]) -> str:
    """The user README's quality block: one line (judge version, gold file, cost per claim)
    and one table, per dataset and overall."""
    cost = data.get("cost") or {}
    line = _measured(data) + "; 95% intervals"
    if cost.get("calls_per_claim") is not None:
        line += (f"; cost per claim: {cost['calls_per_claim']} model calls, "
                 f"{cost.get('seconds_per_claim')} s of model time on {data.get('cpus', '?')} "
                 "CPU cores")
    lines = [
        line + ".",
        "",
        "| dataset | claims | balanced accuracy | contradicted recall | lenient rate | "
        "strict rate | queue recall | queue false alarms | queue load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, figures in sorted((data.get("per_dataset") or {}).items()):
        lines.append(_row(name, figures))
    lines.append(_row("**all**", data))
    note = in_sample_note(data)
    if note:
        lines = [note, "", *lines]
    points = data.get("operating_points") or []
    if points:
        lines += ["", "The queue at its operating point: " + "; ".join(
            f"{p['statement']} ({p['source']})" for p in points) + "."]
    chinese = chinese_table(data)
    if chinese:
        lines += ["", chinese]
    return "\n".join(lines)


#: the Chinese gold sets by their ``dataset`` name (research/make_ocnli.py): one per script
CHINESE = {"ocnli": "Chinese, Simplified", "ocnli_tw": "Chinese, Traditional"}
#: the labels OCNLI has (it has no not_verifiable)
THREE_LABELS = ("supported", "contradicted", "not_in_source")


def three_label_figures(confusion: dict[str, dict[str, int]]) -> tuple[float | None,
                                                                       float | None]:
    """(balanced accuracy over :data:`THREE_LABELS`, contradicted recall) of a confusion
    table (gold label -> judge label -> claims); claims of other gold labels left out, a
    judge label outside the three counts as a miss."""
    recalls = {}
    for label in THREE_LABELS:
        row = confusion.get(label) or {}
        total = sum(row.values())
        if total:
            recalls[label] = row.get(label, 0) / total
    if not recalls:
        return None, None
    return sum(recalls.values()) / len(recalls), recalls.get("contradicted")


def _pooled(per: dict[str, dict[str, Any]], names: Sequence[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for name in names:
        for gold, row in (per[name].get("confusion") or {}).items():
            for judged, count in row.items():
                out.setdefault(gold, {})[judged] = out.get(gold, {}).get(judged, 0) + count
    return out


def chinese_table(data: dict[str, Any]) -> str:
    """Chinese beside English, when the report holds OCNLI's datasets (``ocnli``,
    ``ocnli_tw``): per script, balanced accuracy over OCNLI's three labels and contradicted
    recall (95% intervals), the ROC AUC of support, and the queue; English (the other
    datasets pooled) on the same three labels from its confusion table, without intervals.
    Empty otherwise."""
    per = {**(data.get("per_dataset") or {}), **(data.get("chinese") or {})}
    scripts = [name for name in CHINESE if name in per]
    if not scripts:
        return ""
    lines = [
        *([chinese_source(data), ""] if data.get("chinese_from") else []),
        "Chinese beside English on OCNLI's three labels (English: the other datasets pooled, "
        "no intervals; AUC: how well `support` ranks supported claims first):",
        "",
        "| | claims | balanced accuracy (3 labels) | contradicted recall | ROC AUC of support "
        "| queue recall | queue false alarms | queue load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    english = sorted(name for name in per if name not in CHINESE)
    if english:
        pooled = _pooled(per, english)
        bal, contradicted = three_label_figures(pooled)
        n = sum(sum((pooled.get(label) or {}).values()) for label in THREE_LABELS)
        lines.append(f"| English ({', '.join(english)}) | {n} | {_pct(bal)} | "
                     f"{_pct(contradicted)} | – | – | – | – |")
    for name in scripts:
        f = per[name]
        ba = {"value": f["balanced_accuracy"], **(f.get("balanced_accuracy_ci") or {})}
        recall = ((f.get("per_label") or {}).get("contradicted") or {}).get("recall")
        auc = f.get("roc_auc_support") or {}
        lines.append(
            f"| {CHINESE[name]} (`{name}`) | {f['n']} | {_with_ci(ba, _pct)} | "
            f"{_with_ci(recall, _pct) if isinstance(recall, dict) else '–'} | "
            f"{_with_ci(auc, _auc) if auc.get('value') is not None else '–'} | "
            f"{_with_ci({'value': f['queue_recall'], **(f.get('queue_recall_ci') or {})}, _pct)}"
            f" | {_with_ci(f.get('queue_false_alarm') or {}, _pct)} | "
            f"{_with_ci({'value': f['queue_load'], **(f.get('queue_load_ci') or {})}, _pct)} |")
    if len(scripts) == 2:
        a, b = (per[name]["balanced_accuracy"] for name in scripts)
        if a is not None and b is not None:
            lines += ["", f"Traditional − Simplified: {100 * (b - a):+.1f} points of balanced "
                          "accuracy."]
    return "\n".join(lines)


def with_chinese(data: dict[str, Any], reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``data`` with reports of ``judge eval-gold`` on OCNLI's gold as its Chinese figures
    (``chinese``: under ``ocnli``, or ``ocnli_tw`` for a Traditional copy's ``zh-tw`` file),
    and where they come from; the English table is left as it is."""
    chinese, sources = {}, []
    for report in reports:
        gold = report["gold"]
        name = "ocnli_tw" if "zh-tw" in gold["file"] else "ocnli"
        if name in chinese:
            raise ValueError(f"two Chinese reports for {CHINESE[name]}")
        chinese[name] = report
        sources.append({"judge_version": report["judge_version"], "file": gold["file"],
                        "items": gold["items"], "measured": report.get("generated_at", "?")[:10]})
    return {**data, "chinese": chinese, "chinese_from": sources}


def chinese_source(data: dict[str, Any]) -> str:
    """Which judge version measured the Chinese figures, on which gold files, when."""
    sources = data["chinese_from"]
    versions = sorted({s["judge_version"] for s in sources})
    other = any(v != data.get("judge_version") for v in versions)
    files = " and ".join(f"`{s['file']}` ({s['items']} pairs, {s['measured']})" for s in sources)
    return (f"Chinese: judge {', '.join(f'`{v}`' for v in versions)}"
            f"{' (another version than the English figures)' if other else ''} on {files}.")


def _auc(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def fit_tables(report: dict[str, Any]) -> str:
    """Per dataset, the rule ``judge fit --domain D`` learns from that dataset's tuning items
    against the default on its check items, and the learning curve (balanced accuracy on the
    check items by the number of reviewed tuning claims). Empty when the report holds no
    per-dataset fits yet."""
    per = report.get("per_dataset")
    if not isinstance(per, dict) or not per:
        return ""
    rows: list[str] = []
    curves: dict[str, tuple[dict[int, float], int]] = {}
    sizes: set[int] = set()
    for name, entry in sorted(per.items()):
        fit = entry.get("below_minimum_research_fit") if "refused" in entry else entry
        if not fit:
            continue
        check = fit["check"]
        bal = check["balanced_accuracy"]
        if "refused" in entry:
            verdict = ("refused (its figures: the same fit made without the minimum): "
                       + entry["refused"].split(": ", 1)[-1].split(". ")[0])
        elif fit["recommend_adopt"]:
            verdict = "adopt"
        else:
            verdict = "keep the default: " + "; ".join(
                c["name"].replace("_", " ") for c in fit["checks"] if not c["holds"])
        zero = (fit.get("shrink_zero") or {}).get("check", {}).get("balanced_accuracy", {})
        rows.append(
            f"| {name} | {fit['fit']['n']} | {_with_ci(bal['baseline'], _pct)} | "
            f"{_with_ci(bal['candidate'], _pct)} | {fit['balanced_accuracy_change_points']:+.1f} | "
            f"{_pct((zero.get('candidate') or {}).get('value'))} | "
            f"{_pct(check['queue_recall']['candidate']['value'])} | "
            f"{_pct(check['queue_false_alarm']['candidate']['value'])} | {verdict} |")
        points = {int(p["size"]): p["balanced_accuracy"]["value"] for p in fit.get("curve") or []}
        everything = int(fit["fit"]["n"])
        curves[name] = (points, everything)
        sizes.update(size for size in points if size < everything)
    version = str(report.get("store_version", "?")).rsplit("@", 1)[-1][:12]
    lines = [
        "",
        f"Learned from reviews (`judge fit`, zero model calls, on the stored outputs of judge "
        f"version `{version}`): per dataset, a rule fitted on that dataset's tuning items only "
        "(never on the check items; shrunk toward the default rule, `judge fit`'s default for "
        "a domain), against the default on its check items above; toward 0 = the same fit "
        "shrunk toward 0 (`--shrink zero`); false alarms = gold-supported claims the fitted "
        "rule sends to review. Regenerated by `python research/fit_per_domain.py` and "
        "`make eval`.",
        "",
        "| dataset | tuning claims | default | fitted | change (points) | toward 0 | "
        "queue recall | false alarms | adoption rule |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        *rows,
    ]
    if curves:
        order = sorted(sizes)
        lines += [
            "",
            "Learning curve: balanced accuracy on the check items by the number of reviewed "
            "tuning claims the rule was fitted on (mean of seeded draws; all = every tuning "
            "claim of the dataset):",
            "",
            "| dataset | " + " | ".join(str(size) for size in order) + " | all |",
            "|---|" + "---:|" * (len(order) + 1),
        ]
        for name, (points, everything) in sorted(curves.items()):
            cells = [_pct(points[size]) if size in points else "–" for size in order]
            cells.append(f"{_pct(points[everything])} ({everything})"
                         if everything in points else "–")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def detail_tables(data: dict[str, Any]) -> str:
    """The longer figures of the same report, for the research notes: recall per gold label,
    the queue at other label mixes, reading budgets and thresholds, the validity gate and
    the cost in full."""
    gate = data["validity_gate"]
    cost = data.get("cost") or {}
    lines = [_measured(data) + ".", "",
             *recall_table(data), "", *queue_projection(data)]
    lines += [
        "",
        f"Validity gate (zero tolerance, apart from the rates): "
        f"{'passed' if gate['passed'] else 'failed'}: {gate['schema']['failures']} schema "
        f"failures (`judge_error`), {gate['evidence']['failures']} claims with evidence not "
        f"found in the cited source, of {gate['n']}. Refused answers: "
        f"{data['refused_answers']['count']}; gold items not judged: "
        f"{data['not_judged']['count']}.",
    ]
    if cost:
        lines.append(
            f"Cost per claim: {cost.get('calls_per_claim')} model calls, "
            f"{cost.get('seconds_per_claim')} s of model time "
            f"({cost.get('calls')} calls, {cost.get('model_seconds')} s for "
            f"{cost.get('claims')} claims; wall time of the last run "
            f"{data.get('run', {}).get('wall_seconds', '?')} s on {data.get('cpus', '?')} CPU "
            "cores)."
        )
    return "\n".join(lines)


RECALL_LABELS = LABELS


def _recall_cell(figures: dict[str, Any], label: str) -> str:
    metrics = (figures.get("per_label") or {}).get(label) or {}
    if not metrics.get("support"):
        return "–"
    return f"{_with_ci(metrics['recall'], _pct)} (n={metrics['support']})"


def recall_table(data: dict[str, Any]) -> list[str]:
    """Recall per gold label (the share of each label's claims the judge labelled so),
    per dataset and overall: a gain on one set that costs another stays visible."""
    lines = [
        "Recall per gold label (95% Wilson interval; n = gold claims with that label):",
        "",
        "| dataset | " + " | ".join(RECALL_LABELS) + " |",
        "|---|" + "---:|" * len(RECALL_LABELS),
    ]
    rows = sorted((data.get("per_dataset") or {}).items()) + [("**all**", data)]
    for name, figures in rows:
        cells = " | ".join(_recall_cell(figures, label) for label in RECALL_LABELS)
        lines.append(f"| {name} | {cells} |")
    return lines


def queue_projection(data: dict[str, Any]) -> list[str]:
    """The queue's load at other hallucination rates: recall and false-alarm rate do not
    depend on the label mix, the load does (a label-balanced set inflates it)."""
    recall, alarm = data.get("queue_recall"), (data.get("queue_false_alarm") or {}).get("value")
    if recall is None or alarm is None:
        return []
    confusion = data.get("confusion") or {}
    total = sum(sum(row.values()) for row in confusion.values())
    rejected = total - sum((confusion.get("supported") or {}).values())
    shares = [("a", 0.10), ("a", 0.20)] + ([("this subset's", rejected / total)] if total else [])
    cells = [f"{projected_load(recall, alarm, share):.0%} at {name} {share:.0%} share"
             for name, share in shares]
    limit = max_share_for_load(recall, alarm, 0.5)
    reach = (
        "no share of non-supported claims keeps the load at or below 50%"
        if limit is None
        else f"the load stays at or below 50% up to a {limit:.0%} share of non-supported claims"
    )
    return [
        f"Review queue: recall {_pct(recall)}, false alarms {_pct(alarm)} of gold-supported "
        "claims. The load depends on how many claims are non-supported (recall x share + "
        "false alarms x the rest), so it is " + "; ".join(cells) + " of non-supported claims; "
        f"{reach} (even a queue with no false alarms sends recall x share)."
    ] + budget_line(data, rejected / total if total else None) + points_table(data)


def budget_line(data: dict[str, Any], share: float | None) -> list[str]:
    """What people meet when they read only the first part of the queue (``queue_budget``),
    beside the most any reading order could give at this label mix."""
    budget = data.get("queue_budget") or {}
    if not budget or not share:
        return []
    cells = []
    for key, est in budget.items():
        best = min(1.0, float(key.rstrip("%")) / 100 / share)
        cells.append(f"the first {key} of all claims hold {_with_ci(est, _pct)} of the gold "
                     f"non-supported claims (at most {best:.0%} for any order)")
    return ["", "Read in the queue's order (the claims the judge finds least likely supported "
            "first): " + "; ".join(cells) + "."]


def points_table(data: dict[str, Any]) -> list[str]:
    """The queue at other ``review_support_below`` thresholds (``queue_points``): recall,
    false alarms, and the load here and at a 10% / 20% share of non-supported claims."""
    points = data.get("queue_points") or []
    if not points:
        return []
    configured = data.get("review_support_below")
    lines = [
        "", "The queue at other `review_support_below` thresholds (supported claims below it "
        "go to review; the rest of the queue is unchanged):", "",
        "| review_support_below | queue recall | false alarms | load here | load at a 10% "
        "share | load at a 20% share |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        recall, alarm = p["recall"]["value"], p["false_alarm"]["value"]
        mark = " (configured)" if configured == p["review_support_below"] else ""
        shares = " | ".join(f"{projected_load(recall, alarm, share):.0%}" for share in (0.1, 0.2))
        lines.append(
            f"| {p['review_support_below']}{mark} | {_with_ci(p['recall'], _pct)} | "
            f"{_pct(alarm)} | {_pct(p['load']['value'])} | {shares} |")
    return lines


def readme_block(data: dict[str, Any], fit_report: dict[str, Any] | None = None) -> str:
    """The whole generated block of the user README."""
    body = quality_table(data)
    extra = fit_tables(fit_report) if fit_report else ""
    return body + ("\n" + extra if extra else "")


def update_readme(readme: Path, data: dict[str, Any],
                  fit_report: dict[str, Any] | None = None) -> None:
    """Replace the text between the quality markers; refuse when they are missing."""
    replace_block(readme, QUALITY_START, QUALITY_END, readme_block(data, fit_report))


def update_details(notes: Path, data: dict[str, Any]) -> None:
    """Replace the text between the quality-details markers; refuse when they are missing."""
    replace_block(notes, DETAILS_START, DETAILS_END, detail_tables(data))


def replace_block(readme: Path, start_marker: str, end_marker: str, body: str) -> None:
    """Replace the text between two markers of a generated block; refuse (and change
    nothing) when they are missing."""
    text = readme.read_text(encoding="utf-8")
    new = with_block(readme, text, start_marker, end_marker, body)
    if new != text:
        readme.write_text(new, encoding="utf-8")


def with_block(readme: Path, text: str, start_marker: str, end_marker: str, body: str) -> str:
    """``text`` (the content of ``readme``) with ``body`` between the two markers; raises
    :class:`BlockError` when they are missing."""
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < 0 or end < start:
        raise BlockError(
            f"{readme} has no '{start_marker}' ... '{end_marker}' markers (in that order); "
            "add them where the generated block belongs. Nothing was changed.")
    return text[:start + len(start_marker)] + "\n" + body + "\n" + text[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m research.quality_block",
        description="Regenerate the README quality table (and, with --details, the longer "
                    "figures of the research notes) from `judge eval-gold --output-json`.")
    parser.add_argument("--update-readme", metavar="EVAL_JSON", type=Path, required=True)
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    parser.add_argument("--details", type=Path, default=None, metavar="NOTES",
                        help="also write the longer figures into this file "
                             "(e.g. research/README.md)")
    parser.add_argument("--chinese", type=Path, nargs="+", default=[], metavar="EVAL_JSON",
                        help="reports of judge eval-gold on OCNLI's gold, one per script, "
                             "shown as the Chinese figures beside the English ones")
    parser.add_argument("--fit", type=Path, default=None, metavar="FIT_REPORT",
                        help="add the per-dataset fits and learning curves of "
                             "research/fit_per_domain.py to the README block")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.update_readme.read_text(encoding="utf-8"))
        if args.chinese:
            data = with_chinese(data, [json.loads(path.read_text(encoding="utf-8"))
                                       for path in args.chinese])
        # every block is rendered, and every file's markers found, before anything is
        # written: a bad report or a missing marker changes nothing
        fit_report = (json.loads(args.fit.read_text(encoding="utf-8"))
                      if args.fit is not None else None)
        writes = [(args.readme, QUALITY_START, QUALITY_END, readme_block(data, fit_report))]
        if args.details is not None:
            writes.append((args.details, DETAILS_START, DETAILS_END, detail_tables(data)))
        texts: dict[Path, str] = {}
        for path, start, end, body in writes:
            old = texts.get(path, path.read_text(encoding="utf-8"))
            texts[path] = with_block(path, old, start, end, body)
        for path, text in texts.items():
            if text != path.read_text(encoding="utf-8"):
                path.write_text(text, encoding="utf-8")
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"updated the quality table in {args.readme}"
          + (f" and the detailed figures in {args.details}" if args.details else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
