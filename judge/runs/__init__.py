"""Runs: judging a batch into the store (resumable, idempotent), the run summary, and replay
(re-deriving stored verdicts from stored model outputs with no model call).

May import everything below it (pipeline, store, models, config, records); the public
functions in :mod:`judge.api` are its callers.
"""
