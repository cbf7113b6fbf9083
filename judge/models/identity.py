"""The self-grading ban: a model never grades answers it (or its family) generated.

There is deliberately no override. Used by the pipeline (answers are refused and
recorded), by calibration (the report is refused) and by the model client (a provider that
answers as another model than the pinned one is flagged).

Names are compared after :func:`normalize_model`, which undoes the spellings that would
otherwise let a generator name slip past the ban: Unicode compatibility forms (full-width
letters), look-alike letters from other scripts, zero-width and whitespace characters, provider
routes and deployment paths, fine-tune ids (``ft:gpt-4o-mini-2024-07-18:acme::x``), vendor
prefixes of model gardens (``bedrock/anthropic.claude-…``, ``bedrock/us.meta.llama3-…``),
tags, dates, versions and quantisation suffixes; and a table of vendor names for one family
(``tongyi-qianwen`` is Qwen).
"""

from __future__ import annotations

import re
import unicodedata

# Names that belong to one model family although they are spelled differently.
_FAMILY_ALIASES = {
    "chatgpt": "gpt",
    "o1": "gpt",
    "o3": "gpt",
    "o4": "gpt",
    "davinci": "gpt",
    "text-davinci": "gpt",
    "codellama": "llama",
    "meta-llama": "llama",
    "llama3": "llama",
    "qwq": "qwen",
    "qvq": "qwen",
    "tongyi": "qwen",
    "qianwen": "qwen",
    "tongyi-qianwen": "qwen",
    "codeqwen": "qwen",
    "codegemma": "gemma",
    "codestral": "mistral",
    "mixtral": "mistral",
    "ministral": "mistral",
    "pixtral": "mistral",
    "magistral": "mistral",
    "devstral": "mistral",
    "bard": "gemini",
    "chatglm": "glm",
    "codegeex": "glm",
    "wenxin": "ernie",
    "yi": "yi",
}
#: Vendor prefixes of model gardens (Bedrock ``anthropic.claude-…``, cross-region inference
#: profiles ``us.``/``eu.``/``apac.``): dropped before the name is compared.
_VENDOR_PREFIX = re.compile(r"^(?:(?:[a-z]+|ai21)\.)+(?=[a-z])")
#: Letters of other scripts that look like Latin ones (a generator name spelled with a Cyrillic
#: "а" is the same name).
_CONFUSABLES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i",
    "ј": "j", "ѕ": "s", "һ": "h", "ԛ": "q", "ԝ": "w", "к": "k", "м": "m", "т": "t",
    "в": "b", "н": "h", "ο": "o", "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-", "﹣": "-",
})
_VERSION_SUFFIX = re.compile(
    r"(-(latest|preview|\d{4}-?\d{2}-?\d{2}|\d{8}|\d{4}|v\d+(\.\d+)*|q\d+(-[a-z0-9]{1,2})*|"
    r"f16|fp16|bf16|gguf|instruct|chat|it))+$"
)


def canonical_text(model: str) -> str:
    """NFKC, casefolded, look-alike letters folded, every whitespace, zero-width, format and
    control character removed."""
    text = unicodedata.normalize("NFKC", model).casefold().translate(_CONFUSABLES)
    return "".join(
        ch for ch in text
        if not ch.isspace() and unicodedata.category(ch) not in ("Cf", "Cc", "Zs", "Mn")
    )


def model_route(model: str) -> tuple[list[str], str]:
    """(provider path, bare model name) of a model string, after :func:`canonical_text`;
    fine-tune ids are reduced to their base model."""
    parts = [p for p in canonical_text(model).split("/") if p]
    name = parts[-1] if parts else ""
    route = parts[:-1]
    name = name.removeprefix("ft:")  # ft:<base>:<org>::<id>
    name = re.sub(r":ft-.*$", "", name)  # legacy fine-tunes: curie:ft-acme-2022-…
    name = re.sub(r"-v?\d+:\d+$", "", name)  # Bedrock revisions: …-v1:0, …-1:0
    name = _VENDOR_PREFIX.sub("", name)
    return route, name


def normalize_model(model: str) -> str:
    """Strip provider routes, vendor prefixes, fine-tune ids, tags and version/quantisation
    suffixes: ``ollama/qwen3.5:9b`` -> ``qwen3.5``; ``openai/gpt-4o-2024-08-06`` ->
    ``gpt-4o``; ``ft:gpt-4o-mini-2024-07-18:acme::x`` -> ``gpt-4o-mini``;
    ``bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0`` -> ``claude-3-5-sonnet``."""
    _, name = model_route(model)
    name = name.split(":", 1)[0].split("@", 1)[0]
    name = re.sub(r"[_]+", "-", name).strip("-.")
    previous = None
    while previous != name:
        previous, name = name, _VERSION_SUFFIX.sub("", name)
    return name


def model_family(model: str) -> str:
    """The vendor family: the leading alphabetic run of the normalised name, through the
    table of vendor names (``tongyi-qianwen`` → ``qwen``)."""
    route, _ = model_route(model)
    name = normalize_model(model)
    for alias, family in sorted(_FAMILY_ALIASES.items(), key=lambda kv: -len(kv[0])):
        if name == alias or name.startswith(alias + "-") or alias in route:
            return family
    match = re.match(r"[a-z]+", name)
    family = match.group(0) if match else name
    return _FAMILY_ALIASES.get(family, family)


def self_grading_reason(generator: str | None, judge_model: str) -> str | None:
    """Why judging this generator's answers with this judge model is refused, or None."""
    if not generator or not canonical_text(generator):
        return None
    if normalize_model(generator) == normalize_model(judge_model):
        return (
            f"self-grading refused: the answer was generated by {generator!r}, which is the judge "
            f"model {judge_model!r}; judge it with a model of another family"
        )
    if model_family(generator) == model_family(judge_model):
        return (
            f"self-grading refused: the answer was generated by {generator!r}, of the same model "
            f"family ({model_family(judge_model)}) as the judge model {judge_model!r}; judge it "
            "with a model of another family"
        )
    return None


def same_model(answered: str, pinned: str) -> bool:
    """Whether a provider's reported model is the pinned one (dates and routes aside)."""
    return normalize_model(answered) == normalize_model(pinned)
