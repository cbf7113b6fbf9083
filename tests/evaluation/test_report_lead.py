"""A calibration page opens with its answer: the operating point, the recall it states and
the recall measured (marked in-sample on the gold the point was set on), the recall watch
with what it still needs, and the load reviewers get, in the parts a queue adds up to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from judge.cli import _register, app
from judge.review.queue import QueueOptions, build_queue
from judge.store import Store
from tests.review.test_triage import cli, judged  # noqa: F401


def html_report(db: str, gold: Path, path: Path) -> str:
    _register()
    result = CliRunner().invoke(app, ["calibrate", "--db", db, "--gold", str(gold), "--html",
                                      str(path)])
    assert result.exit_code == 0, result.output
    return path.read_text(encoding="utf-8")


def test_the_page_opens_with_the_point_its_recall_the_watch_and_the_load_in_parts(
        judged: dict[str, Any], store: Store, tmp_path: Path) -> None:  # noqa: F811
    db, gold = str(judged["db"]), judged["gold"]
    cli("queue", "threshold", "--db", db, "--gold", str(gold), "--json")
    summary = build_queue(store, options=QueueOptions(double_fraction=0.0))
    report = cli("calibrate", "--db", db, "--gold", str(gold), "--json")
    # the load stated is what the queue over the same claims holds, part by part
    strata = summary.strata
    parts = report["queue_load_parts"]
    assert parts["claims"] == 40 == sum(s["stratum_size"] for s in strata.values())
    assert parts["near_threshold"] == strata["near_threshold"]["sample_size"] > 0
    assert parts["sampled"] == strata["passed"]["sample_size"] > 0
    assert parts["flagged"] == sum(s["sample_size"] for name, s in strata.items()
                                   if name not in ("near_threshold", "passed"))
    assert parts["flagged"] == round(report["queue_load"] * 40)
    assert parts["total"] == summary.items > parts["flagged"]
    assert report["in_sample_points"] and report["recall_watch"]["status"] == "not_estimable"
    assert "needs at least one decided claim of each (1 more flagged and 1 more passed" in \
        report["recall_watch"]["message"]

    page = html_report(db, gold, tmp_path / "report.html")
    lead = page[page.index("</h1>"):page.index('<nav class="contents">')]
    assert "<b>Operating point</b>" in lead and "In-sample:" in lead
    stated = lead.split('id="stated-recall"', 1)[1].split("</p>", 1)[0]
    assert "&ge; 90% with 90% confidence" in stated and "in-sample" in stated
    assert f"measured here {report['queue_recall']:.0%}" in stated
    assert "needs at least one decided claim of each" in lead.split('id="recall-watch"')[1]
    load = lead.split('id="load"', 1)[1].split("</p>", 1)[0]
    assert (f"gives reviewers {parts['total']} claims" in load
            and f"{parts['near_threshold']} passed claims nearest the threshold" in load
            and f"{parts['sampled']} sampled passed claims" in load)

    # `judge queue build` states its load in the same parts
    built = CliRunner().invoke(app, ["queue", "build", "--db", db])
    assert built.exit_code == 0, built.output
    assert (f"load: {parts['total']} items ({parts['total'] / 40:.0%} of 40 claims) = "
            f"{parts['flagged']} flagged + {parts['near_threshold']} passed nearest the "
            f"threshold + {parts['sampled']} sampled passed") in " ".join(built.output.split())

    # gold the point was not set on: the same figures, out-of-sample
    lines = gold.read_text(encoding="utf-8").splitlines()
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(lines[:30]) + "\n", encoding="utf-8")
    again = cli("calibrate", "--db", db, "--gold", str(other), "--json")
    assert again["in_sample_points"] == []
    text = html_report(db, other, tmp_path / "outside.html")
    assert "In-sample:" not in text and "out-of-sample: this gold was not used" in text
    assert json.dumps(again["queue_load_parts"])  # stated for the other gold too
