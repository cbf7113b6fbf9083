"""Untrusted text must not spell the model's control tokens.

llama.cpp tokenizes a chat prompt (and an embedding input) with special-token parsing on, so
a source or an answer that contains ``<|im_end|>`` or ``<|im_start|>system`` would end the
user turn and open a turn of its own: the judge's instructions could be rewritten by the data.
Before text reaches the in-process runtime, every control-token spelling it holds is broken
with a WORD JOINER (U+2060) after its first character: the text reads the same, and the
tokenizer sees ordinary characters. Hosted providers escape these themselves; the templates
never contain them, so only untrusted text is ever changed.
"""

from __future__ import annotations

import re
from typing import Any

JOINER = "\u2060"

#: ChatML / Qwen / Llama 3 style ``<|name|>``, and the other chat formats' markers
#: (Llama 2 / Mistral ``[INST]``, ``<s>``; Gemma ``<start_of_turn>``; ``<bos>`` / ``<eos>``).
CONTROL_TOKEN = re.compile(
    r"<\|[^|<>\s]{1,64}\|>|\[/?INST\]|</?s>|<(?:start|end)_of_turn>|<(?:bos|eos|pad|unk)>",
    re.IGNORECASE,
)


def defuse(text: str) -> str:
    """``text`` with every control-token spelling broken (unchanged when it holds none)."""
    return CONTROL_TOKEN.sub(lambda m: m.group(0)[0] + JOINER + m.group(0)[1:], text)


def defuse_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages (plain JSON) with every text content defused."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            message = {**message, "content": defuse(content)}
        elif isinstance(content, list):
            message = {**message, "content": [
                {**part, "text": defuse(part["text"])}
                if isinstance(part, dict) and isinstance(part.get("text"), str) else part
                for part in content]}
        out.append(message)
    return out
