"""The root of the errors the library raises on purpose: ``except judge.JudgeError`` catches
every refusal and every request it cannot serve (invalid records, a stopped run, gold that is
not human, a calibration or fit it refuses, a queue or review it cannot make, an unknown
answer), and nothing else. Each error also keeps its older base (``ValueError`` for bad
input, ``RuntimeError`` for a stopped run), so existing ``except`` clauses still catch it.

A leaf module: it imports nothing, and every package may import it.
"""

from __future__ import annotations


class JudgeError(Exception):
    """An error claim-judge raises on purpose, with the reason in its message."""


class NotFound(JudgeError, LookupError):
    """What was asked for (an answer, a claim) is not in the store."""
