"""Review: what people read and what they say.

- :mod:`~judge.review.queue`: review queues (strata, seeded samples, reading order);
- :mod:`~judge.review.triage`: which claims a queue takes (the operating point set from gold,
  the recall watch, refit proposals); :mod:`~judge.review.design`: the queue's strata and
  samples;
- :mod:`~judge.review.reviews`: blind reviews with provenance, double review, adjudication;
- :mod:`~judge.review.gold_export`: reviewed claims as gold (human labels only);
- :mod:`~judge.review.exchange`: queues out to other labelling tools and labels back in;
- :mod:`~judge.review.export`: claim-level verdict exports (JSONL / CSV).

May import store, records, verdicts, config (the review settings) and models (identity);
never models.client.
"""
