"""The names of the formats claim-judge reads and writes: one list, read by the readers
(:mod:`judge.records.peers`, :mod:`judge.review.annotation_tools`), :func:`judge.export`,
:func:`judge.read_dataset`, :func:`judge.import_reviews` and the CLI's ``--format``.

A leaf module: it imports nothing, and every package may import it.
"""

from __future__ import annotations

#: Peers' evaluation datasets, read as answer records and written from a run's records.
DATASET_FORMATS = ("ragas", "deepeval")
#: Labelling tools: a review queue out as tasks, people's labels back in as reviews.
REVIEW_FORMATS = ("label-studio", "argilla")
#: A run's verdicts, one row per claim.
VERDICT_FORMATS = ("jsonl", "csv", "parquet")
#: What ``judge import`` reads.
IMPORT_FORMATS = DATASET_FORMATS + REVIEW_FORMATS
#: What :func:`judge.export` writes (``datasette-metadata``: titles and links for Datasette).
EXPORT_FORMATS = VERDICT_FORMATS + REVIEW_FORMATS + DATASET_FORMATS + ("datasette-metadata",)
