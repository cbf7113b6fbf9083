"""Verdict assembly: a strategy's decision about a claim, plus the deterministic checks, the
program's corrections of the label and the review reasons, become one
:class:`judge.verdicts.Verdict`.

- :mod:`judge.assembly.steps`: the named steps, in the order the assembly applies them
  (:data:`~judge.assembly.steps.STEPS`): the corrections (quotes verified, signals, abstention
  check, subtypes, misattribution), then the review reasons (the last: ``model_mismatch``);
- :mod:`judge.assembly.signals`: the deterministic signals that override a label;
- :mod:`judge.assembly.abstention`: whether the sources really are silent;
- :mod:`judge.assembly.subtypes`: hallucination subtypes by program rules;
- :mod:`judge.assembly.verdict`: the :class:`~judge.assembly.verdict.Assembler`.

May import records, verdicts, checks, split.abstention, decide and config; never models.client
or store.
"""
