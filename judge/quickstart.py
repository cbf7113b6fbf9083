"""A working folder from nothing (``judge init``): a ``judge.toml`` that pins a judge model and
a sample file of answer records written by models of *other* families, so the first ``judge
run`` judges something and no sample is refused as self-grading.

May import config and models.identity (the self-grading rule); never the store or a model call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.config import CONFIG_FILE, DEFAULT_MODEL
from judge.models.identity import self_grading_reason

#: the quickstart's judge model (any litellm model string works)
QUICKSTART_MODEL = "openai/gpt-4.1-mini"
SAMPLE_FILE = "answers.jsonl"

#: generators the samples are attributed to, in order of preference; each sample takes the
#: next one whose family is not the judge model's
GENERATORS = ("anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash",
              "mistral/mistral-small-latest", "ollama/qwen2.5:7b", "openai/gpt-4o-mini",
              "deepseek/deepseek-chat")

#: the samples: a supported answer, one with a contradicted claim, one adding what the source
#: does not say, and one pre-split answer with a claim per citation
SAMPLES: tuple[dict[str, Any], ...] = (
    {"id": "http-401-403",
     "question": "What is the difference between HTTP 401 and 403?",
     "answer": "401 means the client is not authenticated [S1]. 403 means the client is "
               "authenticated but not allowed [S1].",
     "sources": [{"id": "S1", "title": "HTTP status codes",
                  "text": "401 means the client is not authenticated. 403 means the client "
                          "is authenticated but not allowed."}]},
    {"id": "retry-budget",
     "question": "How often does the client retry?",
     "answer": "The client retries a failed request five times [S1].",
     "sources": [{"id": "S1", "title": "Client settings",
                  "text": "The client retries a failed request twice, with a backoff of "
                          "one second."}]},
    {"id": "cache-ttl",
     "question": "How long are responses cached?",
     "answer": "Responses are cached for ten minutes [S1]. The cache is shared by all "
               "regions [S1].",
     "sources": [{"id": "S1", "title": "Caching",
                  "text": "Responses are cached for ten minutes."}]},
    {"id": "release-notes",
     "question": "What changed in version 2.0?",
     "answer": "Version 2.0 drops Python 3.9. It adds a streaming API.",
     "claims": [{"text": "Version 2.0 drops Python 3.9.", "citations": [{"source": "R1"}]},
                {"text": "Version 2.0 adds a streaming API.",
                 "citations": [{"source": "R1"}]}],
     "sources": [{"id": "R1", "title": "Release notes 2.0",
                  "text": "Version 2.0 drops Python 3.9. It adds a streaming API."}]},
)


def sample_records(judge_model: str) -> list[dict[str, Any]]:
    """The samples, each attributed to a generator the judge model may grade (never its own
    family), the generators taken in turn so the file shows several."""
    allowed = [g for g in GENERATORS if self_grading_reason(g, judge_model) is None]
    return [{**sample, "generator": allowed[i % len(allowed)]}
            for i, sample in enumerate(SAMPLES)]


def config_text(model: str, api_base: str | None = None) -> str:
    """The ``judge.toml`` ``judge init`` writes (the embedded default: no model line)."""
    lines = ["# The judge, pinned: change a line and the judge version changes.",
             "# Every setting: docs/configuration.md", "[judge]"]
    if model != DEFAULT_MODEL:
        lines.append(f"model = {json.dumps(model)}")
    else:
        lines.append("# model: the embedded default (pip install 'claim-judge[embedded]')")
    base = json.dumps(api_base) if api_base else '"http://127.0.0.1:8080/v1"'
    lines.append(("" if api_base else "# ") + f"api_base = {base}"
                 + ("" if api_base else "   # an OpenAI-compatible server (vLLM, llama.cpp)"))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class InitResult:
    written: list[Path]
    kept: list[Path]
    model: str


def init(folder: Path, model: str = QUICKSTART_MODEL, api_base: str | None = None,
         force: bool = False) -> InitResult:
    """Write ``judge.toml`` and ``answers.jsonl`` into ``folder``; existing files are kept
    unless ``force``."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        folder / CONFIG_FILE: config_text(model, api_base),
        folder / SAMPLE_FILE: "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                      for r in sample_records(model)),
    }
    written, kept = [], []
    for path, text in files.items():
        if path.exists() and not force:
            kept.append(path)
            continue
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return InitResult(written, kept, model)
