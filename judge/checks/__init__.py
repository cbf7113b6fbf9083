"""Deterministic checks: what can be verified without a model, exactly and cheaply, before
any model is asked.

- :mod:`judge.checks.jsonpath`: JSON-path parsing and resolving;
- :mod:`judge.checks.quantities`: the quantity scanner (numbers, dates, versions, ...);
- :mod:`judge.checks.numerals`: Chinese numerals (一千五, 三點五, 三成, 民國 years);
- :mod:`judge.checks.claims`: the checks of one claim (citations, quotes, numbers, JSON paths);
- :mod:`judge.checks.strength`: evidence strength computed by the program;
- :mod:`judge.checks.overlap`: the claim's lexical overlap with its evidence, opinion wording.

May import records, verdicts and split.citations (answer-text markers); never models (nothing
that calls a model).
"""
