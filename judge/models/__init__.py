"""Models: everything that talks to a judge model or describes one.

- :mod:`~judge.models.client`: every call through litellm (structured output through
  instructor, option log-probabilities for choice questions), stored whole and served from
  the store when it repeats; it composes :mod:`~judge.models.flow` (calls in flight,
  budgets, rate limits, retries, the breaker), :mod:`~judge.models.accounting` (what the calls
  used, who answered them) and :mod:`~judge.models.structured` (instructor), and builds on
  :mod:`~judge.models.calls` (what every kind of call shares) with
  :mod:`~judge.models.embedding` (the probe's vectors; a served model's checked by
  :mod:`~judge.models.served`);
- :mod:`~judge.models.embedded`: the packaged offline default model behind a litellm provider;
  :mod:`~judge.models.runtime`: its llama.cpp runtime, whose requests take
  :mod:`~judge.models.slots` (parallel slots, turns on the CPU) and reuse cached prefixes
  through :mod:`~judge.models.shared_prefix`;
  :mod:`~judge.models.model_bytes`: model files hashed once per process, their markers;
  :mod:`~judge.models.preflight`: a model that cannot load refused before anything is stored;
- :mod:`~judge.models.prompts`: versioned Jinja templates, sandboxed rendering, the manifest;
- :mod:`~judge.models.schemas`: the structured outputs asked of a model;
- :mod:`~judge.models.identity`: model names normalised, and the self-grading ban;
- :mod:`~judge.models.lazy_litellm`: litellm imported when first needed, kept from printing.

May import config, records and store (calls are stored); never split, decide, pipeline or
runs (nothing above them).
"""
