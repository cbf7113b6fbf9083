"""Splitting: an answer's text into claims.

- :mod:`~judge.split.citations`: citation markers inside answer text and the sentences they
  cover;
- :mod:`~judge.split.abstention`: recognising abstention statements;
- :mod:`~judge.split.claims`: claim ids, given claims, and the model split.

May import records, verdicts, config and models (the split call); never store.
"""
