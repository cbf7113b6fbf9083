"""Runs: judging a batch into the store (resumable, idempotent), the run summary, and replay
(re-deriving stored verdicts from stored model outputs with no model call).

May import everything below it: pipeline, version, store, fingerprint, models, config and
records; never api, cli or service (the public functions in :mod:`judge.api` are its callers).
"""
