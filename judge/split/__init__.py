"""Splitting: an answer's text into claims.

- :mod:`~judge.split.citations`: citation markers inside answer text and the sentences they
  cover;
- :mod:`~judge.split.abstention`: recognising abstention statements;
- :mod:`~judge.split.checkable`: whether a skipped sentence states something checkable and a
  claim is grounded in its sentence;
- :mod:`~judge.split.faithful`: whether a claim says what its sentence says (names,
  quantities, negation) and the claims of a sentence keep its content;
- :mod:`~judge.split.claims`: claim ids, given claims, and the model split;
- :mod:`~judge.split.uncited`: how a run reads an answer that cites nothing.

May import records, verdicts, config, models (the split call) and checks.quantities (the
quantity scanner); never store.
"""
