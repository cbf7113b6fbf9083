"""Generator names that try to slip past the self-grading ban, against the judge model they must be
refused for, and names of other families that must still be judged. Used by
``tests/faults/test_selfgrade_names.py`` and counted by ``python -m tests.faults.report``."""

from __future__ import annotations

#: (generator, judge model): the same model or family spelled another way: refused.
REFUSED: tuple[tuple[str, str], ...] = (
    ("ft:gpt-4o-mini-2024-07-18:acme::x", "openai/gpt-4o-mini"),
    ("openai/ft:gpt-4o-mini-2024-07-18:acme:custom:abc123", "openai/gpt-4o-mini"),
    ("openai/ gpt-4o-mini", "openai/gpt-4o-mini"),
    ("openai /gpt-4o-mini", "openai/gpt-4o-mini"),
    (" gpt-4o-mini\t", "openai/gpt-4o-mini"),
    ("ｇｐｔ－４ｏ－ｍｉｎｉ", "openai/gpt-4o-mini"),
    ("ＯｐｅｎＡＩ／gpt-4o", "openai/gpt-4o-mini"),
    ("gpt\u200b-4o-mini", "openai/gpt-4o-mini"),
    ("g\u200dp\u200ct-4o-mini\ufeff", "openai/gpt-4o-mini"),
    ("gpt\u00ad-4o-mini", "openai/gpt-4o-mini"),
    ("gрt-4o-mini", "openai/gpt-4o-mini"),  # Cyrillic р
    ("GPT‐4O‐MINI", "openai/gpt-4o-mini"),  # U+2010 hyphens
    ("GPT-4o-Mini", "openai/gpt-4o-mini"),
    ("gpt_4o_mini", "openai/gpt-4o-mini"),
    ("openai/gpt-4o-2024-08-06", "openai/gpt-4o"),
    ("azure/gpt-4o", "openai/gpt-4o"),
    ("azure_ai/gpt-4o-mini", "openai/gpt-4o-mini"),
    ("openrouter/openai/gpt-4o", "openai/gpt-4o"),
    ("chatgpt-4o-latest", "openai/gpt-4o"),
    ("o3-mini", "openai/gpt-4o"),
    ("bedrock/openai.gpt-oss-120b-1:0", "openai/gpt-4o"),
    ("bedrock/openai.gpt-oss-20b-1:0", "openai/gpt-oss-20b"),
    ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic/claude-3-5-sonnet-20240620"),
    ("bedrock/us.anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic/claude-3-5-sonnet"),
    ("bedrock/anthropic.claude-3-haiku-20240307-v1:0", "anthropic/claude-3-5-sonnet"),
    ("vertex_ai/claude-3-5-sonnet@20240620", "anthropic/claude-3-5-sonnet"),
    ("anthropic/claude-3-5-sonnet-latest", "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"),
    ("vertex_ai/gemini-1.5-pro", "gemini/gemini-1.5-flash"),
    ("google/gemini-2.0-flash-001", "vertex_ai/gemini-1.5-pro"),
    ("alibaba/tongyi-qianwen", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("dashscope/qwen-max", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("Qwen/Qwen2.5-72B-Instruct", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("ollama/qwen3.5:9b", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("qwq-32b", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("bedrock/qwen.qwen3-32b-v1:0", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("ｑｗｅｎ２．５－７ｂ", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("bedrock/meta.llama3-70b-instruct-v1:0", "ollama/llama3.1:8b"),
    ("meta-llama/Llama-3.3-70B-Instruct", "groq/llama-3.1-8b-instant"),
    ("together_ai/meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", "ollama/llama3.1"),
    ("bedrock/mistral.mistral-large-2402-v1:0", "mistral/mistral-small-latest"),
    ("mixtral-8x7b", "mistral/mistral-large-latest"),
    ("curie:ft-acme-2022-02-01-01-01-01", "openai/curie"),
    *((name, "openai/gpt-4o-mini") for name in (
        # provider separators other than "/"
        "openai:gpt-4o-mini", "openai\\gpt-4o-mini", "openai∕gpt-4o-mini",  # U+2215
        "openai⁄gpt-4o-mini", "openai⧸gpt-4o-mini",  # U+2044, U+29F8
        # suffixes after a slash
        "gpt-4o-mini/latest", "openai/gpt-4o-mini/2024-07-18",
        # quoted names
        '"gpt-4o-mini"', "'openai/gpt-4o-mini'", "“gpt-4o-mini”",
        # natural-language names
        "OpenAI GPT-4o mini", "GPT 4o Mini",
        # look-alike letters NFKC keeps apart (a confusables skeleton folds them)
        "ɡpt-4o-mini", "gpt-4o-mını", "gpt-40-mini",  # U+0261 script g, U+0131 dotless i, zero
        # short aliases
        "4o-mini", "gpt4o-mini",
        # a path suffix after the name, the vendor's model inside a deployment name
        "openai/gpt-4o-mini/ft-acme-support", "azure/prod-4o-mini-eastus",
        "databricks/databricks-gpt-4o-mini", "azure/eastus-prod-gpt-4o-mini-2024",
        # a combining mark (decomposed and stripped), a Cyrillic komi sje (U+050D), letters
        # spaced one by one
        "g\u0301pt-4o-mini", "\u050dpt-4o-mini", "g p t - 4 o - m i n i", "G P T 4o mini",
    )),
)

#: (generator, judge model): another family: judged (the ban must not refuse everything).
ALLOWED: tuple[tuple[str, str], ...] = (
    ("openai/gpt-4o-mini", "anthropic/claude-3-5-sonnet"),
    ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "openai/gpt-4o"),
    ("alibaba/tongyi-qianwen", "openai/gpt-4o"),
    ("vertex_ai/gemini-1.5-pro", "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ("ollama/llama3.1:8b", "openai/gpt-4o-mini"),
    ("mistral/mistral-large-latest", "openai/gpt-4o"),
    ("bedrock/openai.gpt-oss-120b-1:0", "anthropic/claude-3-5-sonnet"),
    # a family is its vendor's: EleutherAI's GPT-J shares a prefix with OpenAI's GPT, no more
    ("EleutherAI/gpt-j-6b", "openai/gpt-4o-mini"),
    ("EleutherAI/gpt-neox-20b", "openai/gpt-4o"),
    ("gpt-j-6b", "openai/gpt-4o-mini"),
    ("AI-Sweden-Models/gpt-sw3-126m", "openai/gpt-4o-mini"),
    ("ollama/qwen:7b", "openai/gpt-4o-mini"),
    # deployment names and paths that hold other vendors' models, or none
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "openai/gpt-4o-mini"),
    ("azure/prod-claude-eastus", "openai/gpt-4o-mini"),
    ("azure/my-deployment", "openai/gpt-4o-mini"),
    ("databricks/databricks-dbrx-instruct", "openai/gpt-4o-mini"),
    ("databricks/databricks-meta-llama-3-70b-instruct", "openai/gpt-4o-mini"),
    ("hf/acme/support-bot-v2", "openai/gpt-4o-mini"),
    ("together_ai/Qwen/Qwen2.5-7B-Instruct", "openai/gpt-4o-mini"),
    ("microsoft/Phi-3-mini-4k-instruct", "openai/gpt-4o-mini"),
    ("google/gemma-2-9b-it", "openai/gpt-4o-mini"),
    ("01-ai/Yi-34B", "openai/gpt-4o-mini"),
    ("meta-llama/Llama-4-Maverick", "openai/o3-mini"),
    ("openai-community/gpt2", "anthropic/claude-3-haiku"),
    ("bedrock/cohere.command-r-v1:0", "openai/o1"),
    ("é-commerce-assistant", "openai/gpt-4o-mini"),
    ("a b c d", "openai/gpt-4o-mini"),
)
