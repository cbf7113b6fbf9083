"""Reusing the embedded runtime's KV cache for the prefix that the claims of one answer share,
without making a claim's scores depend on what ran before.

llama.cpp evaluates a prompt from the longest prefix its cache holds; where that split falls
changes the numbers slightly (up to about 0.09 in log-probability), so a plain prompt cache
makes a claim's scores depend on the requests before it. Here the split points are fixed by
the prompt alone. A request flagged ``shared_prefix`` (the claims of one answer asked about
the same excerpts, ``excerpts = "answer"``) is evaluated in three levels:

1. ``common``: the rendered text before the first data frame (the instructions, the same for
   every answer): evaluated from an empty cache the first time, then kept;
2. ``shared``: the text through the opening line of the last data frame (the excerpts, the
   same for every claim of the answer): evaluated on top of ``common``;
3. the rest (the claim and the question): evaluated on top of ``shared``.

Before each level the cache is cut back to exactly the level below by sending that level's
text again, which makes llama.cpp evaluate its last token once more; this is done every time,
the first time included, so the cache holds the same numbers whatever came before. A claim's
scores are then a function of its prompt only (asserted by a test that asks in two orders).

A request flagged ``shared_prefix = "instructions"`` (any generation call, the split above
all, with ``reuse_prefix`` on) has one level only: the fixed instructions, the system message
up to the line that names the request's frame token (or the whole system message when it
names none). The slot is cut back to exactly that text before each such request, so the
instructions are evaluated once per process and a request's output is still a function of
its prompt alone. Their state is also kept on disk for the next process
(:mod:`judge.models.prefix_files`): restored instead of evaluated, then cut back the same way.

The text of a level is the model's chat template applied by hand (ChatML, Qwen2.5's); a
request with other roles, or a cut that does not line up with the runtime's tokens (checked
on every cut), is evaluated whole from an empty cache instead, as unflagged requests are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judge.models.prefix_files import PrefixFiles
from judge.models.prompts import BOUNDARY_PREFIX

#: How a data frame opens in the templates.
FRAME_OPEN = "<<" + BOUNDARY_PREFIX

#: ``call(method, request)``: one request to the runtime (``"handle_chat_completions"`` or
#: ``"handle_completions"``), its answer as a dict.
RuntimeCall = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Levels:
    common: str
    shared: str


def levels(messages: list[dict[str, Any]]) -> Levels | None:
    """The two prefix levels of a system + user request, in ChatML, or ``None`` when the
    request does not have that shape or its user message holds no data frame."""
    if len(messages) != 2 or [m.get("role") for m in messages] != ["system", "user"]:
        return None
    system, user = (m.get("content") for m in messages)
    if not isinstance(system, str) or not isinstance(user, str):
        return None
    first, last = user.find(FRAME_OPEN), user.rfind(FRAME_OPEN)
    end = user.find("\n", last) if last >= 0 else -1
    if first <= 0 or end < 0:
        return None
    head = f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n"
    return Levels(common=head + user[:first], shared=head + user[: end + 1])


def instructions(messages: list[dict[str, Any]]) -> str | None:
    """The fixed instructions of a system + user request in ChatML: the system message up to
    the line holding its frame token (which changes with every request), else the whole
    system message and the user turn's opening; ``None`` when the request does not have that
    shape or nothing would be left before the cut."""
    if len(messages) != 2 or [m.get("role") for m in messages] != ["system", "user"]:
        return None
    system = messages[0].get("content")
    if not isinstance(system, str) or not isinstance(messages[1].get("content"), str):
        return None
    head = f"<|im_start|>system\n{system}"
    at = system.find(BOUNDARY_PREFIX)
    if at < 0:
        return head + "<|im_end|>\n<|im_start|>user\n"
    cut = system.rfind("\n", 0, at) + 1
    return head[: len(head) - len(system) + cut] if cut > 0 else None


class PrefixCache:
    """The state of one of the runtime's slots, as far as the shared-prefix levels go. Used by
    the request holding that slot only (:class:`judge.models.slots.SlotPool`), whose calls
    name the slot."""

    def __init__(self, call: RuntimeCall, files: PrefixFiles | None = None, slot: int = 0
                 ) -> None:
        self._call = call
        self._common: str | None = None
        self._shared: str | None = None
        #: the instructions' states kept on disk (judge.models.prefix_files), and this slot
        self._files = files
        self._slot = slot

    def forget(self) -> None:
        """The slot now holds something else (an unflagged request ran)."""
        self._common = self._shared = None

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run a flagged chat request with fixed split points; see the module docstring."""
        found = levels(request.get("messages") or [])
        if found is None or not self._prepare(found):
            self.forget()
            return self._call("handle_chat_completions", {**request, "cache_prompt": False})
        result = self._call("handle_chat_completions", {**request, "cache_prompt": True})
        if "error" in result:
            self.forget()
        return result

    def instructions(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run a request flagged ``"instructions"`` on top of its fixed instructions, the slot
        cut back to exactly them first (see the module docstring)."""
        common = instructions(request.get("messages") or [])
        if common is None or not self._cut_to(common):
            self.forget()
            return self._call("handle_chat_completions", {**request, "cache_prompt": False})
        self._shared = None  # the slot now holds this request after the instructions
        result = self._call("handle_chat_completions", {**request, "cache_prompt": True})
        if "error" in result:
            self.forget()
        return result

    def _cut_to(self, common: str) -> bool:
        """Leave the slot holding exactly ``common`` with its last token evaluated once more
        (evaluated from an empty cache first when the slot holds other instructions)."""
        restored = False
        if self._common != common:
            self._shared = None
            restored = self._files is not None and self._files.restore(self._slot, common)
            if not restored and self._evaluate(common, cached=False) is None:
                return False
            if not restored and self._files is not None:
                self._files.save(self._slot, common)
            self._common = common
        lined_up = self._evaluate(common) == 1
        if restored and not lined_up and self._files is not None:
            self._files.discard(common)
        return lined_up

    def _prepare(self, found: Levels) -> bool:
        """Leave the slot holding exactly ``found.shared`` with its last token evaluated once
        more; ``False`` if a cut did not line up (then the slot state is unknown)."""
        if self._shared != found.shared:
            if not self._cut_to(found.common) or self._evaluate(found.shared) is None:
                return False
            self._shared = found.shared
        return self._evaluate(found.shared) == 1

    def _evaluate(self, text: str, cached: bool = True) -> int | None:
        """Evaluate ``text`` (no token generated); the number of tokens it evaluated, or
        ``None`` when the runtime refused."""
        result = self._call("handle_completions",
                            {"prompt": text, "n_predict": 0, "cache_prompt": cached})
        if "error" in result:
            self.forget()
            return None
        timings = result.get("timings") or {}
        count = timings.get("prompt_n")
        return int(count) if isinstance(count, int) else None

