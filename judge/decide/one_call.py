"""``one_call`` (strategy ``batch``): a free-text answer is split into claims and every claim
judged in one call (prompt ``judge_answer``), instead of a split call and a verify call.

The answer's sentences are segmented by the program and given one per line, each line opened
by its number (the program joins a sentence's lines, so no text can open a line of its own).
The model's claims go through the same checks as a separate split (:meth:`Splitter.interpret`:
sentence numbers exist, every sentence is claimed or skipped for an accepted reason, the
bound); each claim's judgement is read as a compact verify judgement (its quotes extended to
their sentences). A sentence the call left uncovered becomes a claim that the batch strategy
verifies in a second call. One claim judged twice with different labels (or subtypes) is a
``judge_error``, both times, as conflicting judgements of a verify call are; so is a claim not
grounded in its sentence (:mod:`judge.split.checkable`). A call that fails leaves the answer as
one ``judge_error`` claim, as a failed split does.

An answer whose prompt does not fit the model's context, or whose claims might not fit
``max_tokens``, is split and verified in separate calls as without ``one_call``.

From ``judge_answer`` v2 on, a sentence that cites sources is given with their ids (``[N]
cites ["S1"]: ...``), as a verify call gives a claim's. With ``label_logprobs`` the call asks
for log-probabilities and each claim's support is read from the tokens that spell its label
(:mod:`judge.models.label_tokens`), as for a verify call.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judge.config import JudgeConfig
from judge.decide import Decision
from judge.decide.batch import BatchStrategy, expand, prompt_version, source_data
from judge.decide.packing import fits_whole, prompt_tokens, schema_tokens
from judge.models.client import CallFailed, ModelClient
from judge.models.prompts import render
from judge.models.schemas import JointClaim, JointOutput
from judge.records import AnswerRecord
from judge.split.claims import Split, Splitter, unsplit_claim

#: completion tokens a claim is given: its judgement (as verify_claims v2 counts one) and the
#: claim's own text when it is not its whole sentence
TOKENS_PER_JOINT_CLAIM = 110


def one_line(text: str) -> str:
    """A sentence on one line: every line break (any of those ``str.splitlines`` knows) and
    the spaces around it become one space, so the text cannot open a line of the prompt."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def conflicting(claims: Sequence[JointClaim], texts: list[str]) -> dict[int, str]:
    """The model's claims judged more than once with different judgements: the same claim
    (its sentence and its text, the whole sentence when left out, compared after NFKC,
    case and spacing) given two labels or subtypes. Index → why it is a ``judge_error``,
    as a verify call's conflicting judgements are (:func:`judged_twice`)."""
    groups: dict[tuple[int, str], list[int]] = {}
    for index, c in enumerate(claims):
        text = c.text.strip() or (texts[c.sentence - 1] if 1 <= c.sentence <= len(texts) else "")
        key = " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(".。")
        groups.setdefault((c.sentence, key), []).append(index)
    out: dict[int, str] = {}
    for (sentence, _), members in groups.items():
        if len({(claims[i].label, claims[i].subtype) for i in members}) > 1:
            for i in members:
                out[i] = (f"the model judged one claim of sentence {sentence} "
                          f"{len(members)} times with different labels: fail closed")
    return out


class OneCall:
    """Splits and judges a free-text answer in one ``judge_answer`` call."""

    def __init__(self, config: JudgeConfig, client: ModelClient, root: Path,
                 splitter: Splitter) -> None:
        self.config = config
        self.client = client
        self.root = root
        self.splitter = splitter
        self.version = config.prompts["judge_answer"]

    async def judge(
        self, record: AnswerRecord, strategy: BatchStrategy, run_id: str | None
    ) -> tuple[Split, list[Decision]] | None:
        """The answer's split and decisions; None when it does not fit one call (then the
        caller splits and verifies in separate calls)."""
        texts, kept = self.splitter.sentences(record)
        extra: dict[str, Any] = {}
        if prompt_version(self.version) >= 2:  # v1 names no citation (its prompts unchanged)
            extra["cites"] = [sorted({c.source for c in s.citations}) for s in kept] \
                or [[] for _ in texts]
        prompt = render(
            "judge_answer", self.version, self.root,
            sources=source_data(record),
            sentences=[one_line(t) for t in texts],
            question=one_line(record.question) if record.question else None,
            max_claims=self.config.max_claims_per_answer, **extra,
        )
        # about one claim a sentence
        if not fits_whole(prompt_tokens(prompt) + schema_tokens(JointOutput), len(texts),
                          self.config, TOKENS_PER_JOINT_CLAIM):
            return None
        try:
            out, call = await self.client.structured(prompt, JointOutput, "judge", run_id,
                                                     logprobs=strategy.logprobs)
        except CallFailed as exc:
            return Split([unsplit_claim(record)], f"split and verify failed: {exc}",
                         exc.call_id), []
        split = self.splitter.interpret(record, out.claims, out.skipped, texts, kept, call)
        if split.error is not None:
            return split, []
        decisions: dict[int, Decision] = {}
        twice = conflicting(out.claims, texts)
        supports = dict(enumerate(strategy.label_supports(call, len(out.claims))))
        for position, (claim, index) in enumerate(zip(split.claims, split.made_from,
                                                      strict=True)):
            if position in split.ungrounded:  # not the sentence's claim: not judged
                decisions[position] = Decision(claim, None, split.ungrounded[position])
            elif index in twice:  # judged twice, differently: neither judgement is trusted
                decisions[position] = Decision(claim, None, twice[index])
            elif index is not None:  # the split call's id is the verdict's first call already
                judged = out.claims[index]
                decisions[position] = Decision(claim, expand(judged, record, position + 1),
                                               support=supports.get(index))
        uncovered = [p for p in range(len(split.claims)) if p not in decisions]
        if uncovered:
            verified = await strategy.decide(record, [split.claims[p] for p in uncovered],
                                             run_id)
            decisions.update(zip(uncovered, verified, strict=True))
        return split, [decisions[p] for p in range(len(split.claims))]
