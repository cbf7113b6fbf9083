"""Abstention statements ("the sources do not say …", 候選筆記未提及 …) and the check of them.

An answer that says the sources do not cover something is honest, not a
hallucination, and is checked like any claim: *is it true that the sources are silent?*
Asking a small model whether the excerpts "state" such a claim gets the question backwards
(they never state their own silence), so with ``abstention_check`` on, the program decides:
it removes the abstention wording and the words that name the sources, and looks for the
remaining topic in every sentence of every source (silence is a property of the whole source,
not of a located excerpt):

* a sentence covering at least ``abstention_covered_min`` of the topic's words → the sources
  do speak about it: ``contradicted``, with that sentence as evidence;
* no sentence covering more than ``abstention_silent_max`` of them → ``supported``: the
  sources are silent, and the verdict says so with the best overlap found;
* in between → the model's label stands and the claim goes to review (``abstention_unsettled``).
"""

from __future__ import annotations

from dataclasses import dataclass

from judge.records import AnswerRecord
from judge.split.abstention import abstention_topic
from judge.text import lexical_overlap, passage_sentences, tokens
from judge.verdicts import Evidence, Label


def _stem_overlap(topic: str, sentence: str) -> float:
    """Share of the topic's word stems (first five letters of a latin word) in the sentence."""
    def stems(text: str) -> set[str]:
        return {t[:5] if t.isalpha() and t.isascii() else t for t in tokens(text)}

    wanted = stems(topic)
    return len(wanted & stems(sentence)) / len(wanted) if wanted else 0.0


@dataclass(frozen=True)
class AbstentionFinding:
    label: str | None  # None: unsettled, the model's label stands
    coverage: float
    evidence: Evidence | None
    note: str


def check_abstention(
    text: str, record: AnswerRecord, covered_min: float, silent_max: float
) -> AbstentionFinding:
    topic = abstention_topic(text)
    if not tokens(topic):
        return AbstentionFinding(None, 0.0, None, "abstention with no topic left to look for")
    best: tuple[float, float, float, Evidence | None] = (0.0, 0.0, 0.0, None)
    for source in record.sources:
        content = source.content
        for start, end in passage_sentences(content) or [(0, len(content))]:
            sentence = content[start:end]
            # share of the topic in the sentence; ties go to the sentence sharing more word
            # stems ("include" / "includes"), then to the one most about the topic
            score = (lexical_overlap(topic, sentence), _stem_overlap(topic, sentence),
                     lexical_overlap(sentence, topic))
            if score > best[:3]:
                ev = Evidence(source_id=source.id, quote=sentence, found=True,
                              start=start, end=end)
                best = (*score, ev)
    coverage, _, _, evidence = best
    if coverage >= covered_min:
        return AbstentionFinding(
            Label.CONTRADICTED.value, coverage, evidence,
            f"the claim says the sources are silent on '{topic}', but {evidence.source_id} "  # type: ignore[union-attr]
            f"covers {coverage:.2f} of it",
        )
    if coverage <= silent_max:
        return AbstentionFinding(
            Label.SUPPORTED.value, coverage, None,
            f"the sources are silent on '{topic}' (no sentence covers more than "
            f"{coverage:.2f} of it)",
        )
    return AbstentionFinding(
        None, coverage, evidence,
        f"a sentence covers {coverage:.2f} of '{topic}': unsettled, for review",
    )
