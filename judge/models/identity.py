"""The self-grading ban: a model never grades answers it (or its family) generated.

There is deliberately no override. Used by the pipeline (answers are refused and
recorded), by calibration (the report is refused) and by the model client (a provider that
answers as another model than the pinned one is flagged).

Names are compared after :func:`normalize_model`, which undoes the spellings that would
otherwise let a generator name slip past the ban: Unicode compatibility forms (full-width
letters), look-alike letters from other scripts, zero-width and whitespace characters, provider
routes and deployment paths, fine-tune ids (``ft:gpt-4o-mini-2024-07-18:acme::x``), vendor
prefixes of model gardens (``bedrock/anthropic.claude-…``, ``bedrock/us.meta.llama3-…``),
tags, dates, versions and quantisation suffixes; provider separators other than ``/``
(``openai:gpt-4o-mini``, backslashes, Unicode slashes), version segments after a slash
(``gpt-4o-mini/latest``), quote marks, natural-language names (``OpenAI GPT-4o mini``), short
aliases (``4o-mini``); and a table of vendor names for one family (``tongyi-qianwen`` is Qwen).
Two names are the same model when their skeletons (digits that pass for letters folded) are
equal. A family is the vendor's family, not a shared prefix: ``EleutherAI/gpt-j-6b`` is not
OpenAI's. The rule and its limits: ``docs/self-grading.md``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

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
    # Latin letters NFKC keeps apart from the ASCII ones they look like (Unicode's
    # confusables.txt, the letters that occur in model names)
    "ɡ": "g", "ı": "i", "ɪ": "i", "ȷ": "j", "ɑ": "a", "ɒ": "a", "ʏ": "y", "ɴ": "n", "ʀ": "r",
    "ᴀ": "a", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ᴊ": "j", "ᴋ": "k", "ᴍ": "m", "ᴏ": "o", "ᴘ": "p",
    "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ᴢ": "z", "ℓ": "l", "ꞵ": "b", "ǀ": "l",
    "ԁ": "d", "ԃ": "d", "ɢ": "g", "ʜ": "h", "ʟ": "l", "ꜱ": "s", "ƅ": "b", "ɩ": "i",
    "օ": "o", "ո": "n", "ս": "u", "ց": "g", "ւ": "w", "հ": "h", "ք": "p", "Ꭵ": "i",
    "η": "n", "μ": "u", "ω": "w", "β": "b", "γ": "y", "ϲ": "c", "ӏ": "l",
    "ɜ": "e", "ɛ": "e", "ǝ": "e", "ʋ": "u",
    "ԍ": "g", "ь": "b", "ҽ": "e", "℮": "e", "ϳ": "j", "ʝ": "j", "ĸ": "k", "п": "n",
    "ռ": "n", "σ": "o", "ϱ": "p", "⍴": "p", "г": "r", "ᴦ": "r", "ƽ": "s", "ѵ": "v",
    "ѡ": "w", "ɯ": "w", "ү": "y", "ყ": "y", "ꮯ": "c", "ꮃ": "w", "ꮪ": "s",
    "ꮓ": "z", "ꮇ": "m", "ꮲ": "p", "ꭇ": "r", "ꭎ": "u", "ɋ": "q", "գ": "q",
    "ɦ": "h", "ƙ": "k", "ɱ": "m", "ɲ": "n", "ƞ": "n", "ʂ": "s", "ƭ": "t", "ʈ": "t",
    # slashes and colons that look like the separators
    "∕": "/", "⁄": "/", "⧸": "/", "╱": "/", "\\": "/", "⼃": "/", "丿": "/",
    "∶": ":", "ː": ":", "꞉": ":", "˸": ":",
})
#: Quote marks around or inside a name: dropped.
_QUOTE_MARKS = "\"'`´‘’‚‛“”„‟«»‹›「」『』〝〞＂＇"
#: The skeleton used to compare two names as the same model: digits that pass for letters
#: ("gpt-40-mini" is "gpt-4o-mini" to a reader).
_SKELETON = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})
#: Providers and gateways a name may be routed through with another separator than "/"
#: ("openai:gpt-4o-mini", "OpenAI GPT-4o mini"). Not model family names: "qwen:7b" is an
#: Ollama tag.
_PROVIDERS = frozenset({
    "openai", "anthropic", "azure", "azure_ai", "google", "vertex_ai", "bedrock", "openrouter",
    "together_ai", "together", "groq", "fireworks_ai", "deepinfra", "ollama", "ollama_chat",
    "huggingface", "hf", "dashscope", "alibaba", "meta", "meta-llama", "mistralai",
    "embedded", "hosted_vllm", "vllm", "replicate", "sagemaker", "perplexity", "xai",
    "cohere", "deepseek-ai", "microsoft", "nvidia", "litellm_proxy", "cloudflare",
})
#: Segments after the name that only pick a version of it (``gpt-4o-mini/latest``).
_ROUTE_SUFFIX = re.compile(
    r"^(latest|stable|default|preview|current|main|v?\d+([.-]\d+)*|\d{4}-\d{2}-\d{2}|"
    r"chat|instruct|base)$")
#: Short names that stand for one family's model (``4o-mini`` is OpenAI's GPT-4o mini).
_SHORT_ALIASES = (
    (re.compile(r"^(?:(\d(?:\.\d)?)-)?(sonnet|haiku|opus)(?=$|-)"), r"claude-\2"),
    (re.compile(r"^(?:gpt)?-?(4o|4\.1|4\.5|4|3\.5)(?=$|-)"), r"gpt-\1"),
)
#: Families that share a prefix with another vendor's family but are not it (a family is the
#: vendor's family, not a shared prefix): EleutherAI's GPT-J / GPT-Neo / GPT-NeoX, AI Sweden's
#: GPT-SW3, Nomic's GPT4All.
_OTHER_VENDOR_FAMILIES = {
    "gpt-j": "gpt-j", "gptj": "gpt-j", "gpt-neo": "gpt-neo", "gpt-neox": "gpt-neo",
    "gpt-sw3": "gpt-sw3", "gpt4all": "gpt4all",
}
#: Publishers (the organisation part of a ``org/name`` route) whose names start like another
#: vendor's family: the name is theirs.
_PUBLISHER_FAMILY = {
    "eleutherai": "gpt-neo", "ai-sweden-models": "gpt-sw3", "ai-sweden": "gpt-sw3",
    "nomic-ai": "gpt4all", "cerebras": "cerebras", "bigscience": "bloom",
}
_VERSION_SUFFIX = re.compile(
    r"(-(latest|preview|\d{4}-?\d{2}-?\d{2}|\d{8}|\d{4}|v\d+(\.\d+)*|q\d+(-[a-z0-9]{1,2})*|"
    r"f16|fp16|bf16|gguf|instruct|chat|it))+$"
)


def _spaced_letters(text: str) -> str:
    """Letters written one by one (``g p t - 4 o``): runs of three or more one-character
    words joined (``gpt-4o``); other words are left as they are."""
    words = text.split()
    out: list[str] = []
    run: list[str] = []
    for word in [*words, ""]:
        if len(word) == 1:
            run.append(word)
            continue
        out.extend(["".join(run)] if len(run) >= 3 else run)
        run = []
        if word:
            out.append(word)
    return " ".join(out)


def canonical_text(model: str) -> str:
    """Decomposed with combining marks stripped (``ǵ`` → ``g``), NFKC, casefolded, look-alike
    letters, slashes and colons folded, quote marks, zero-width, format and control characters
    removed; letters spaced one by one joined; whitespace next to a separator or at the ends
    removed, whitespace inside a name a hyphen (``GPT 4o mini`` → ``gpt-4o-mini``)."""
    text = "".join(ch for ch in unicodedata.normalize("NFKD", model)
                   if unicodedata.category(ch) != "Mn")
    text = unicodedata.normalize("NFKC", text).casefold().translate(_CONFUSABLES)
    text = "".join(
        ch for ch in text
        if ch not in _QUOTE_MARKS and (ch.isspace() or unicodedata.category(ch)
                                       not in ("Cf", "Cc", "Mn"))
    )
    text = _spaced_letters(text)
    text = re.sub(r"\s*([/:@])\s*", r"\1", text.strip())
    text = re.sub(r"\s*-\s*", "-", text)
    text = re.sub(r"\s+", "-", text)
    # a provider named before the name with another separator: "openai:…", "openai-gpt…"
    head, sep, rest = text.partition(":")
    if sep and head in _PROVIDERS and rest:
        text = f"{head}/{rest}"
    for provider in sorted(_PROVIDERS, key=len, reverse=True):
        if text.startswith(provider + "-") and not text.startswith(provider + "-/"):
            text = provider + "/" + text[len(provider) + 1:]
            break
    return text


def model_route(model: str) -> tuple[list[str], str]:
    """(provider path, bare model name) of a model string, after :func:`canonical_text`;
    fine-tune ids are reduced to their base model."""
    parts = [p for p in canonical_text(model).split("/") if p]
    while len(parts) > 1 and _ROUTE_SUFFIX.match(parts[-1]):  # gpt-4o-mini/latest
        parts.pop()
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
    name = re.sub(r"^gpt(?=\d)", "gpt-", name)  # gpt4o → gpt-4o
    for pattern, full in _SHORT_ALIASES:
        name = pattern.sub(full, name, count=1)
    return name


def skeleton(model: str) -> str:
    """The normalised name with digits that pass for letters folded (``0`` → ``o``, ``1`` and
    ``i`` → ``l``): two names with one skeleton read as one model."""
    return normalize_model(model).translate(_SKELETON)


def model_family(model: str) -> str:
    """The vendor family: the leading alphabetic run of the normalised name, through the
    table of vendor names (``tongyi-qianwen`` → ``qwen``)."""
    route, _ = model_route(model)
    name = normalize_model(model)
    for publisher in route:
        if publisher in _PUBLISHER_FAMILY:
            return _PUBLISHER_FAMILY[publisher]
    for prefix, family in sorted(_OTHER_VENDOR_FAMILIES.items(), key=lambda kv: -len(kv[0])):
        if name == prefix or name.startswith(prefix + "-") or (
                name.startswith(prefix) and name[len(prefix):][:1].isdigit()
                and prefix.endswith(("j", "all"))):
            return family
    for alias, family in sorted(_FAMILY_ALIASES.items(), key=lambda kv: -len(kv[0])):
        if name == alias or name.startswith(alias + "-") or alias in route:
            return family
    match = re.match(r"[a-z]+", name)
    family = match.group(0) if match else name
    return _FAMILY_ALIASES.get(family, family)


def inner_families(model: str) -> set[str]:
    """The families named *inside* a model string: by every segment of its path after the
    providers (``openai/gpt-4o-mini/ft-acme-support``), and by the tail of a deployment name
    from any word that opens with a letter (``azure/prod-4o-mini-eastus``,
    ``databricks/databricks-gpt-4o-mini``). A publisher's own family
    (``EleutherAI/gpt-j-6b``) is the only one its names have."""
    route, name = model_route(model)
    if any(publisher in _PUBLISHER_FAMILY for publisher in route):
        return {model_family(model)}
    names = [segment for segment in route if segment not in _PROVIDERS] + [name]
    found = set()
    for segment in names:
        words = re.split(r"[-_.]", segment.split(":", 1)[0])
        for i, word in enumerate(words):
            if word[:1].isalpha() or word.startswith("4o"):
                found.add(model_family("-".join(words[i:])))
    return found


def self_grading_reason(generator: str | None, judge_model: str) -> str | None:
    """Why judging this generator's answers with this judge model is refused, or None."""
    if not generator or not canonical_text(generator):
        return None
    if skeleton(generator) == skeleton(judge_model):
        return (
            f"self-grading refused: the answer was generated by {generator!r}, which is the judge "
            f"model {judge_model!r}; judge it with a model of another family"
        )
    if model_family(judge_model) in {model_family(generator), *inner_families(generator)}:
        return (
            f"self-grading refused: the answer was generated by {generator!r}, of the same model "
            f"family ({model_family(judge_model)}) as the judge model {judge_model!r}; judge it "
            "with a model of another family"
        )
    return None


@lru_cache(maxsize=1024)
def same_model(answered: str, pinned: str) -> bool:
    """Whether a provider's reported model is the pinned one (dates and routes aside); asked
    for every call a run makes, of the few names it meets (cached)."""
    return normalize_model(answered) == normalize_model(pinned)
