"""Verdict assembly: a strategy's decision about a claim, plus the deterministic checks, the
program's corrections (signals, abstention check, misattribution, subtypes), the evidence
strength and the review reasons, become one :class:`judge.verdicts.Verdict`.

May import records, verdicts, checks, decide and config; never models.client or store.
"""
