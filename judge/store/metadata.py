"""Datasette metadata for a store: titles, descriptions, the column that names each row (so
a foreign key shows a claim's text, not its id), facets and sort orders. Written by
``judge export --format datasette-metadata``; used as ``datasette judge.db -m metadata.json``.
"""

from __future__ import annotations

from typing import Any

_TABLES: dict[str, dict[str, Any]] = {
    "answers": {"description": "Answer records as judged: question, answer text, generator.",
                "label_column": "question"},
    "claims": {"description": "Claims split from answers (or given pre-split), with their "
                              "citations.", "label_column": "text"},
    "sources": {"description": "The sources of each answer.", "label_column": "title"},
    "verdicts": {"description": "One verdict per claim and judge version. support: the "
                                "judge's probability that the claim is supported; strength: "
                                "how much of the claim the evidence covers (computed).",
                 "facets": ["label", "subtype", "judge_version"]},
    "checks": {"description": "Deterministic checks of each verdict.",
               "facets": ["name", "outcome"]},
    "runs": {"description": "Runs: input file, judge version, status; purpose run (judge "
                            "run), eval (judge eval-gold, named 'eval-gold <gold file>') or "
                            "api (the HTTP service).",
             "label_column": "input_path", "facets": ["purpose", "status", "judge_version"]},
    # by version id: two versions of one model (other prompts or settings) must not look alike
    "judge_versions": {"description": "Pinned judges by version id: model, prompt templates, "
                                      "parameters.",
                       "label_column": "id"},
    "calls": {"description": "Every model call, stored whole (prompt, raw output, tokens)."},
    "queues": {"description": "Review queues: seed, strata and weights."},
    "queue_items": {"description": "Queue items in reading order with stratum and weight.",
                    "sort": "position", "facets": ["stratum", "category"]},
    "reviews": {"description": "Human reviews (append-only; a revision names the review it "
                               "supersedes).", "facets": ["annotator", "label"]},
    "adjudications": {"description": "Decisions between disagreeing reviewers, with the "
                                     "reason.", "facets": ["adjudicator", "label"]},
    "claim_verdicts": {"title": "Claims and verdicts",
                       "description": "Each verdict beside its claim's text: label, subtype, "
                                      "support, review reasons, judge version.",
                       "facets": ["label", "subtype", "judge_version", "review"],
                       "sort_desc": "review"},
    "review_queue": {"title": "Review queue",
                     "description": "Queue items in reading order with the claim text, why "
                                    "each is there and how many people reviewed it.",
                     "sort": "position", "facets": ["queue_id", "stratum", "category"]},
    "calibration_errors": {"title": "Where the judge and people disagree",
                           "description": "Claims people decided (an adjudication, or "
                                          "reviewers who all agree) whose judge label differs: "
                                          "lenient = the judge passed a claim people rejected; "
                                          "strict = the judge flagged a claim people accepted.",
                           "facets": ["direction", "judge_version", "human_label"]},
}


def datasette_metadata(database: str = "judge") -> dict[str, Any]:
    """Datasette metadata for a store file named ``<database>.db``."""
    return {
        "title": "claim-judge store",
        "description": "Verdicts claim by claim, the review queue, human reviews and where the "
                       "judge and people disagree. Start with the views claim_verdicts, "
                       "review_queue and calibration_errors.",
        "databases": {database: {"tables": _TABLES}},
    }
