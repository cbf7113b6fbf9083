"""``judge queue``: build, list, export and import the review queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from judge.cli import app
from judge.cli.common import (
    EXISTING_DB_OPTION,
    console,
    fail,
    open_store,
    out,
    output_path,
    print_json,
    print_table,
    report_import,
    terminal_width,
    usage_error,
    write_stdout,
    write_text,
)
from judge.review.queue import (
    CATEGORY_HELP,
    DEFAULT_DOUBLE_FRACTION,
    DEFAULT_MIN_SAMPLE,
    DEFAULT_PRIORITY,
    DEFAULT_SAMPLE_RATE,
    DEFAULT_SEED,
    ORDERS,
    STRATA,
    QueueError,
    QueueOptions,
    QueueSummary,
    build_queue,
    get_queue,
    priority_order,
    queue_items,
    queues,
    state_counts,
)
from judge.review.reviews import DEFAULT_GUIDELINE_VERSION, STATES, ReviewError

queue_app = typer.Typer(
    help="The review queue: what people should read, in which order, and what each item "
    "stands for (strata and weights).",
    no_args_is_help=True,
)
app.add_typer(queue_app, name="queue")

QUEUE_OPTION = typer.Option(None, "--queue", "-q", help="Queue id (default: the latest queue).")


@queue_app.command("build")
def build(
    db: Path = EXISTING_DB_OPTION,
    run: list[str] = typer.Option(
        None, "--run", help="Run id; repeat for several runs (default: the latest run)."
    ),
    all_runs: bool = typer.Option(False, "--all-runs", help="Build across every run."),
    sample_rate: float = typer.Option(
        DEFAULT_SAMPLE_RATE, "--sample-rate", min=0.0, max=1.0,
        help="Share of the passed claims to sample.",
    ),
    min_sample: int = typer.Option(
        DEFAULT_MIN_SAMPLE, "--min-sample", min=0,
        help="Sample at least this many passed claims (all of them if there are fewer).",
    ),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Sampling seed (recorded)."),
    double_fraction: float = typer.Option(
        DEFAULT_DOUBLE_FRACTION, "--double-fraction", min=0.0, max=1.0,
        help="Share of items that get a second, independent review.",
    ),
    priority: str | None = typer.Option(
        None, "--priority",
        help="Comma-separated categories, most urgent first; unnamed ones follow in the "
        f"default order: {', '.join(DEFAULT_PRIORITY)}.",
    ),
    order: str = typer.Option(
        ORDERS[0], "--order",
        help="Reading order: 'risk' reads the claims the judge thinks least likely supported "
        "first (categories break ties; what it cannot rate and what a check proved wrong come "
        "first), 'priority' reads by category alone.",
    ),
    recall: float | None = typer.Option(
        None, "--recall", min=0.01, max=0.999,
        help="Target recall: the share of problem claims (people reject them) the queue must "
        "catch; the threshold comes from the operating point set from human gold for it "
        "(default: review.target_recall of the config, 0.9).",
    ),
    confidence: float | None = typer.Option(
        None, "--confidence", min=0.01, max=0.999,
        help="Confidence of the stated recall (default: review.confidence, 0.9).",
    ),
    informative_share: float | None = typer.Option(
        None, "--informative-share", min=0.0, max=0.99,
        help="Share of the queue given to passed claims nearest the threshold, the reviews "
        "that teach the most (default: review.informative_share, 0.1).",
    ),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Judge config whose review table gives the defaults "
        "(default ./judge.toml if present)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Build a review queue: the claims the operating point flags plus seeded samples.

    Every claim whose support is below the threshold set from human gold for the target
    recall (docs/review.md#triage), every claim a check failed or the judge could not
    label, every refused answer; the passed claims nearest the threshold
    (--informative-share); and a seeded random sample of the other passed claims (each
    weighs stratum size / sample size). Without an operating point for the judge version
    the queue flags by labels and review reasons and says it states no recall.
    """
    from judge.cli.common import load_config

    store = open_store(db, must_exist=True)
    review = load_config(config).review
    try:
        run_ids = [r["id"] for r in store.runs()] if all_runs else run
        options = QueueOptions(
            sample_rate=sample_rate, min_sample=min_sample, seed=seed,
            double_fraction=review.double_fraction(double_fraction),
            priority=priority_order(priority), order=order,
            target_recall=review.target_recall if recall is None else recall,
            confidence=review.confidence if confidence is None else confidence,
            informative_share=(review.informative_share if informative_share is None
                               else informative_share),
        )
        summary = build_queue(store, run_ids, options)
    except QueueError as exc:
        fail(str(exc))
    if as_json:
        print_json(summary.as_dict())
    else:
        print_summary(summary)


def print_summary(s: QueueSummary) -> None:
    from rich.markup import escape

    out.print(f"queue [bold]{s.queue_id}[/] over {', '.join(s.run_ids)}: {s.items} items, "
              f"seed {s.seed}, {s.double_review} marked for a second review, read in "
              f"{s.order} order")
    table = Table("stratum", "claims", "in queue", "weight", title="strata", title_justify="left")
    for name, st in s.strata.items():
        weight = "-" if st["weight"] is None else f"{st['weight']:.4g}"
        table.add_row(name, str(st["stratum_size"]), str(st["sample_size"]), weight)
    print_table(table)
    out.print(escape(load_line(s.strata)))
    table = Table("category", "items", "why", title="by priority", title_justify="left")
    for name in s.priority:
        if s.categories.get(name):
            table.add_row(name, str(s.categories[name]), CATEGORY_HELP[name])
    print_table(table)
    print_points(s.operating_points)
    for p in s.proposals:
        out.print(f"domain {escape(p['domain'])}: {p['new']} reviewed claims since its rule "
                  f"was fitted ({p['decided']} in all); propose a domain head with "
                  f"`{escape(p['command'])}` (the adoption rule decides), then set its "
                  f"threshold with `judge queue threshold --domain {escape(p['domain'])}`")


def load_line(strata: dict[str, dict[str, Any]]) -> str:
    """What reviewers get from a queue, in parts: the claims taken whole (flagged), the
    passed claims nearest the threshold and the sampled passed claims."""
    claims = sum(st["stratum_size"] for st in strata.values())
    near = strata.get("near_threshold", {}).get("sample_size", 0)
    sampled = strata.get("passed", {}).get("sample_size", 0)
    flagged = sum(st["sample_size"] for name, st in strata.items()
                  if name not in ("near_threshold", "passed"))
    total = flagged + near + sampled
    share = f" ({total / claims:.0%} of {claims} claims)" if claims else ""
    return (f"load: {total} items{share} = {flagged} flagged + {near} passed nearest the "
            f"threshold + {sampled} sampled passed")


def print_points(points: list[dict[str, Any]]) -> None:
    """The operating points that decided a queue, one line each."""
    from rich.markup import escape

    for p in points:
        where = f" domain {p['domain']}" if p["domain"] else ""
        source = {"gold": "set from gold", "default": "packaged default",
                  "configured": "no operating point"}[p["source"]]
        out.print(f"operating point of {escape(p['judge_version'])}{escape(where)} "
                  f"({source}): {escape(p['statement'])}")


@queue_app.command("list")
def list_cmd(
    db: Path = EXISTING_DB_OPTION,
    queue: str | None = QUEUE_OPTION,
    status: str | None = typer.Option(None, "--status", help=f"One of: {', '.join(STATES)}."),
    stratum: str | None = typer.Option(None, "--stratum", help=f"One of: {', '.join(STRATA)}."),
    limit: int = typer.Option(50, "--limit", min=0, help="Show at most this many (0 = all)."),
    reveal: bool = typer.Option(
        False, "--reveal", help="Show the judge's reasons unredacted and its support (the "
        "probability that the claim is supported); not for blind reviewers."
    ),
    all_queues: bool = typer.Option(False, "--queues", help="List the queues instead."),
    as_json: bool = typer.Option(False, "--json", help="Print the items as JSON."),
) -> None:
    """List a queue's items: claim text, review state, and with --reveal why each is there.

    Blind (the default) the items come in the queue's shuffled export order, numbered in
    that order, without stratum, reasons or anything else of the judge (the rule of the
    review pages and exports, docs/review.md); --reveal lists them in reading order with
    their position, stratum, reasons and the judge's support. The item id is never cut (copy
    it into `judge review add`); the claim text is shortened to fit the terminal (100
    columns in a pipe).
    """
    from judge.review.blind import allowed_filter, visible_items, visible_queue

    store = open_store(db, must_exist=True)
    if all_queues:
        rows = [visible_queue(q, reveal) for q in queues(store)]
        if as_json:
            print_json(rows)
            return
        table = Table("queue", "created", "runs", "seed", "items",
                      *(("strata",) if reveal else ()))
        for q in rows:
            cells = [q["id"], q["created_at"][:19], ", ".join(q["run_ids"]), str(q["seed"]),
                     str(q["items"])]
            if reveal:
                cells.append(", ".join(f"{k} {v['sample_size']}/{v['stratum_size']}"
                                       for k, v in q["strata"].items()))
            table.add_row(*cells)
        print_table(table)
        return
    try:
        allowed_filter(stratum, reveal)
        q = get_queue(store, queue)
        everything = queue_items(store, q["id"])
        wanted = {i["id"] for i in queue_items(store, q["id"], status=status, stratum=stratum)}
    except QueueError as exc:
        fail(str(exc))
    items = [i for i in visible_items(store, q["id"], everything, reveal=reveal)
             if i["id"] in wanted]
    texts = store.queue_item_texts(q["id"])
    for item in items:
        found = texts.get(item["id"], {})
        item["claim"] = found.get("text")
        if reveal:
            item["support"] = found.get("support")
            item["judge_label"] = found.get("label")
    shown = items if limit == 0 else items[:limit]
    if as_json:
        print_json({"queue_id": q["id"], "total": len(items), "items": shown})
        return
    counts = state_counts(items)
    write_stdout([f"queue {q['id']}: {len(items)} items; "
                  + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()) + "\n"])
    write_stdout(item_lines(shown, reveal, terminal_width()))
    if len(shown) < len(items):
        console.print(f"{len(items) - len(shown)} more; use --limit 0 to show all")


def _fit(text: str, width: int) -> str:
    """``text`` on one line in at most ``width`` terminal cells (CJK counts two)."""
    from rich.cells import cell_len, set_cell_size

    text = " ".join(text.split())
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, max(width - 1, 0)) + "…"


def item_lines(items: list[dict[str, Any]], reveal: bool, width: int) -> list[str]:
    """One line per item: its number, item id (whole), [stratum, support,] state, [reasons,]
    and the claim text in the columns that are left (blind: no stratum, support or reasons,
    :mod:`judge.review.blind`)."""
    from rich.cells import cell_len

    if not items:
        return ["(no items)\n"]

    def number(item: dict[str, Any]) -> int:
        return int(item.get("number") or item["position"])

    id_w = max(len(i["id"]) for i in items)
    pos_w = max(len(str(number(i))) for i in items)
    fixed = pos_w + id_w + 12 + (11 + 7 + 2 * 2 if reveal else 0) + 2 * 4
    why_w = max(8, min(26, (width - fixed) // 3))  # the reasons give way before the claim
    head = [f"{'#':>{pos_w}}", f"{'item':<{id_w}}"]
    if reveal:
        head += [f"{'stratum':<11}", f"{'support':>7}"]
    head += [f"{'state':<12}"] + ([f"{'why':<{why_w}}"] if reveal else []) + ["claim"]
    lines = ["  ".join(head)]
    for item in items:
        cells = [f"{number(item):>{pos_w}}", f"{item['id']:<{id_w}}"]
        if reveal:
            support = item.get("support")
            cells += [f"{item['stratum']:<11}",
                      f"{'—' if support is None else format(support, '.2f'):>7}"]
        cells.append(_fit(item["state"].replace("_", " "), 12))
        if reveal:
            cells.append(_fit(", ".join(item["reasons"]) or "-", why_w))
        used = cell_len("  ".join(cells)) + 2
        cells.append(_fit(item.get("claim") or "", max(width - used, 8)).rstrip())
        lines.append("  ".join(cells))
    return [line.rstrip() + "\n" for line in lines]


@queue_app.command("export")
def export_cmd(
    db: Path = EXISTING_DB_OPTION,
    queue: str | None = QUEUE_OPTION,
    fmt: str = typer.Option("jsonl", "--format", help="jsonl or csv."),
    reveal: bool = typer.Option(
        False, "--reveal", help="Include the judge's label, subtype and rationale (adjudication)."
    ),
    status: str | None = typer.Option(None, "--status", help=f"One of: {', '.join(STATES)}."),
    output: Path | None = typer.Option(None, "--output", "-o", help="File (default: stdout)."),
) -> None:
    """Export the queue for labelling in a spreadsheet or another tool (JSONL or CSV).

    Columns: item_id, queue_id, claim_id, answer_id, kind, claim, question, answer,
    citations, sources, reviews_required, state. --reveal adds the judge's opinion and the
    queue's design (for adjudication): reasons, priority, stratum, stratum_size, sample_size,
    weight, judge_label, judge_subtype, judge_rationale, judge_version, category. CSV files
    (UTF-8 with BOM) get empty label, subtype and note columns to fill in. Label Studio and Argilla
    take `judge export --format label-studio|argilla`.
    """
    from judge.review.exchange import export_lines, queue_to_csv
    from judge.review.export import to_jsonl

    if fmt not in ("jsonl", "csv"):
        usage_error("--format must be jsonl or csv")
    if output is not None:
        output_path(output, db)
    store = open_store(db, must_exist=True)
    try:
        lines = export_lines(store, queue, reveal=reveal, status=status)
        chunks = to_jsonl(lines) if fmt == "jsonl" else queue_to_csv(lines, reveal=reveal)
        if output is None:
            write_stdout(chunks)
        else:
            write_text(output, chunks, db, newline="")
    except QueueError as exc:
        fail(str(exc))


@queue_app.command("import")
def import_cmd(
    path: Path = typer.Argument(..., help="Labelled JSONL or CSV (e.g. an edited export)."),
    annotator: str = typer.Option(..., "--annotator", "-a", help="Who labelled: a person's id."),
    db: Path = EXISTING_DB_OPTION,
    queue: str | None = QUEUE_OPTION,
    fmt: str = typer.Option("auto", "--format", help="jsonl, csv or auto (by file suffix)."),
    guideline_version: str = typer.Option(
        DEFAULT_GUIDELINE_VERSION, "--guideline-version", help="Guideline the labels follow."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate only; store nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the import result as JSON."),
) -> None:
    """Import one annotator's labels (JSONL or CSV) as their reviews.

    Reads label, subtype and note per item_id or claim_id. Every line is validated first;
    any error stores nothing (exit code 2).
    """
    from judge.review.exchange import import_labels

    if fmt not in ("auto", "jsonl", "csv"):
        usage_error("--format must be jsonl, csv or auto")
    if not path.exists():
        fail(f"file {path} does not exist")
    store = open_store(db, must_exist=True)
    try:
        result = import_labels(store, path, annotator, queue, fmt, guideline_version, dry_run)
    except (QueueError, ReviewError, UnicodeDecodeError) as exc:
        fail(str(exc))
    report_import(result, as_json, dry_run, "label(s)", "line(s) without a label")


@queue_app.command("threshold")
def threshold(
    db: Path = EXISTING_DB_OPTION,
    gold: Path | None = typer.Option(
        None, "--gold", help="Gold file (JSONL) judged in this store; default: the reviews "
        "people decided in the store."),
    judge_version: str | None = typer.Option(
        None, "--judge-version", help="Judge version (id or unique prefix); default: the one "
        "that judged the gold."),
    domain: list[str] = typer.Option(
        None, "--domain", help="Set the point of this domain only (repeatable); default: the "
        "version-wide point and every domain whose own gold is enough."),
    recall: float | None = typer.Option(
        None, "--recall", min=0.01, max=0.999,
        help="Target recall (default: review.target_recall, 0.9)."),
    confidence: float | None = typer.Option(
        None, "--confidence", min=0.01, max=0.999,
        help="Confidence of the stated recall (default: review.confidence, 0.9)."),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Judge config whose review table gives the defaults."),
    as_json: bool = typer.Option(False, "--json", help="Print the points as JSON."),
) -> None:
    """Set the queue's operating point from human gold: the threshold on the flag score
    (support, or the stacked score the version's packaged point names) that catches the
    target recall of problem claims with the stated confidence (exact binomial bound,
    docs/review.md#triage). Stored with the gold's hash, size and bound; the next `judge
    queue build` uses it. Zero model calls.

    Exit codes: 0 a threshold was set; 3 none was (too little gold for every point: the
    output says how many problem claims are needed); 64 usage error; 1 any other error."""
    from judge.cli.common import load_config
    from judge.evaluation import EvaluationError
    from judge.evaluation.gold import GoldRejected, read_gold
    from judge.evaluation.operating import NoSupportScore, gold_scores, set_point
    from judge.fitting import FitRefused
    from judge.fitting.items import gold_from_store
    from judge.review.triage import TriageError, version_spec

    review = load_config(config).review
    target = review.target_recall if recall is None else recall
    conf = review.confidence if confidence is None else confidence
    store = open_store(db, must_exist=True)
    try:
        if gold is not None:
            if not gold.exists():
                fail(f"{gold} does not exist")
            gold_file = read_gold(gold)
            if not gold_file.ok:
                raise GoldRejected(gold_file)
        else:
            gold_file = gold_from_store(store)
        data = gold_scores(store, gold_file, judge_version)
        spec = version_spec(store, data.judge_version)
        if spec is not None:  # the packaged point's score form; the threshold set here
            data = gold_scores(store, gold_file, data.judge_version, spec=spec)
        wanted = list(domain or [])
        automatic = not wanted
        if automatic:
            counts: dict[str, int] = {}
            for d, problem in zip(data.domains, data.problems, strict=True):
                counts[d] = counts.get(d, 0) + int(problem)
            wanted = [""] + sorted(d for d in counts if d)
        results = []
        for d in wanted:
            point, row = set_point(store, data, domain=d, target_recall=target,
                                   confidence=conf, created_by="cli",
                                   gold_source=str(gold) if gold else "reviews in the store")
            results.append({"domain": d, "id": row["id"], "sufficient": point.sufficient,
                            "statement": point.statement(),
                            **point.model_dump(mode="json")})
    except NoSupportScore as exc:  # no point can be set: the same exit as too little gold
        fail(str(exc), NO_THRESHOLD_EXIT)
    except (EvaluationError, FitRefused, TriageError, GoldRejected) as exc:
        fail(str(exc))
    if as_json:
        print_json({"judge_version": data.judge_version, "gold": data.gold,
                    "unscored": data.unscored, "points": results})
    else:
        _print_points(data, results)
    if not any(r["sufficient"] for r in results):
        console.print("[bold red]no threshold set:[/] too little gold for every point (see "
                      "above); the queue keeps flagging by labels and checks")
        raise typer.Exit(NO_THRESHOLD_EXIT)


#: ``judge queue threshold`` set no threshold (too little gold): as a gate not met elsewhere.
NO_THRESHOLD_EXIT = 3


def _print_points(data: Any, results: list[dict[str, Any]]) -> None:
    from rich.markup import escape

    out.print(f"judge version {escape(data.judge_version)}, gold {escape(str(data.gold['file']))}"
              f" ({data.gold['matched']} matched claims)")
    for r in results:
        where = f"domain {r['domain']}" if r["domain"] else "version-wide"
        mark = "" if r["sufficient"] else " [not used: too little gold]"
        out.print(f"  {escape(where)}: {escape(r['statement'])}{escape(mark)}")
    if data.unscored:
        out.print(f"  {data.unscored} gold claim(s) have no support score (a judge that "
                  "answers with labels): the queue flags them by label")
