"""Splitting one answer into claims.

Given claims (``claims`` in the answer record) are used as given, never re-split (more than
``max_claims_per_answer`` of them is a ``judge_error``). Otherwise the answer is segmented into
sentences by the program (citations inside the text attach to the sentences they cover), and
the model splits the numbered sentences into claims. A split that fails, finds no claim in a
non-empty answer, or gives more claims than the bound, gives one ``unsplit`` claim holding the
whole answer, which becomes a ``judge_error`` verdict (fail closed). With ``split_atomic``, an
answer whose sentences are all atomic (:mod:`judge.split.atomic`) is not sent to the model:
each sentence is a claim as it stands (origin ``sentence``). From ``split_claims`` v3 on, an
answer that opens or ends with atomic sentences sends only the run of sentences between them
to the model (each under its number in the answer; the atomic ones before it come along as
context, not to split), and those atomic sentences are claims as they stand: the model
generates only what could change.

The split is checked for coverage: from ``split_claims`` v2 on every sentence must give a
claim or be skipped with a reason (greeting, question, advice, filler). The program accepts a
skip only when the sentence fits it (a question has a question mark; nothing with a digit is
skipped; advice, greetings and filler state nothing checkable — no citation, number, name or
statement, :mod:`judge.split.checkable` —; greetings and filler are short); a sentence neither
claimed nor accepted as skipped becomes an ``uncovered`` claim judged as it stands, and is
flagged for review. ``split_claims`` v1 names no skipped sentence (its outputs are read as
they always were): there a sentence without a claim is accepted as skipped only when it states
nothing checkable. Accepted skips are recorded with their reasons.

A claim the model wrote in its own words must be grounded in the sentence it names (enough
of its content words occur there, :func:`judge.split.checkable.grounding`) and say what it
says (its names, quantities and negation come from it, and the claims of a sentence keep
its content: :mod:`judge.split.faithful`); a claim that fails is not judged but becomes a
``judge_error`` for review (``Split.ungrounded``), and its sentence is judged as it stands
(an ``uncovered`` claim).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from judge.config import JudgeConfig
from judge.hashing import content_hash
from judge.models.client import CallFailed, ModelClient
from judge.models.prompts import render
from judge.models.schemas import SplitOutput, SplitOutputV2
from judge.records import AnswerRecord, Citation
from judge.split.abstention import looks_like_abstention
from judge.split.atomic import atomic_reason
from judge.split.checkable import GROUNDED_SHARE, checkable_reason, grounding
from judge.split.citations import Sentence, segment_answer
from judge.split.faithful import uncovered_content, unfaithful
from judge.verdicts import AnswerStatus, Claim

#: The longest answer text an ``unsplit`` claim keeps.
UNSPLIT_CHARS = 4000
#: The longest sentence the program lets the model skip as a greeting or filler.
SHORT_SKIP_CHARS = 80
_DIGIT = re.compile(r"\d")


def claim_id(answer_id: str, text: str, occurrence: int = 0) -> str:
    """A claim's id: its answer, its text (NFKC) and which occurrence of that text it is."""
    norm = unicodedata.normalize("NFKC", text).strip()
    return "c-" + content_hash([answer_id, norm, occurrence])[:16]


def claim_ids(answer_id: str, texts: list[str]) -> list[str]:
    """The ids :func:`make_claims` gives claims with these texts, in order."""
    seen: dict[str, int] = {}
    out = []
    for text in texts:
        key = unicodedata.normalize("NFKC", text).strip()
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        out.append(claim_id(answer_id, text, occurrence))
    return out


def make_claims(
    answer_id: str, specs: list[tuple[str, list[Citation], bool]], origin: str
) -> list[Claim]:
    """Claims from (text, citations, is_abstention) triples, numbered in order."""
    ids = claim_ids(answer_id, [text for text, _, _ in specs])
    return [
        Claim(
            id=cid,
            answer_id=answer_id,
            index=index,
            text=text.strip(),
            citations=list(cites),
            origin=origin,  # type: ignore[arg-type]
            is_abstention=abstention,
        )
        for index, (cid, (text, cites, abstention)) in enumerate(zip(ids, specs, strict=True))
    ]


def unsplit_claim(record: AnswerRecord) -> Claim:
    """The whole answer as one claim: what a failed split leaves to review."""
    text = record.answer
    if len(text) > UNSPLIT_CHARS:
        text = text[:UNSPLIT_CHARS] + "…"
    return Claim(
        id=claim_id(record.answer_id, text, -1),
        answer_id=record.answer_id,
        index=0,
        text=text,
        origin="unsplit",
    )


def answer_status(claims: list[Claim]) -> AnswerStatus:
    """``answered`` / ``partial`` / ``insufficient`` by the share of abstention claims."""
    abstentions = sum(c.is_abstention for c in claims)
    if abstentions == 0:
        return "answered"
    return "insufficient" if abstentions == len(claims) else "partial"


#: a claim to make: (sentence number, (text, citations, is_abstention), origin, index of the
#: model's claim or None)
Spec = tuple[int, tuple[str, list[Citation], bool], str, int | None]


class ModelClaim(Protocol):
    """A claim as a model gives it (``split_claims``, ``judge_answer``)."""

    @property
    def sentence(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def kind(self) -> str: ...


@dataclass
class Split:
    """The claims of one answer; ``error`` when the split failed (then one unsplit claim).
    ``skipped``: the sentences that hold no claim, with the reason (``sentence``, ``text``,
    ``reason``)."""

    claims: list[Claim]
    error: str | None = None
    call_id: str | None = None
    skipped: list[dict[str, Any]] = field(default_factory=list)
    #: for each claim, the index of the model's claim it is (None: a sentence the model left
    #: uncovered, judged as it stands)
    made_from: list[int | None] = field(default_factory=list)
    #: claim position -> why it is not grounded in its sentence: a ``judge_error``, not judged
    ungrounded: dict[int, str] = field(default_factory=dict)


def own_citations(sentence: Sentence) -> bool:
    """Whether the sentence has citation markers of its own (not a later sentence's)."""
    return bool(sentence.citations and not sentence.inherited)


def skip_accepted(text: str, reason: str, cites: bool = False) -> bool:
    """Whether the program accepts the model's reason for leaving a sentence out: never for
    a sentence with a digit; a question needs a question mark; greetings, filler and advice
    must state nothing checkable (:func:`judge.split.checkable.checkable_reason`: a citation,
    a number, a name, a statement); greetings and filler are short."""
    if _DIGIT.search(text):
        return False
    if reason == "question":
        return "?" in text or "？" in text
    if checkable_reason(text, cites) is not None:
        return False
    if reason in ("greeting", "filler"):
        return len(text.strip()) <= SHORT_SKIP_CHARS
    return reason == "advice"


def ungrounded_error(claim: str, sentence: int, text: str, share: float) -> str:
    return (f"the claim {claim!r} is not grounded in sentence {sentence} ({text!r}): only "
            f"{share:.0%} of its content words occur there (at least {GROUNDED_SHARE:.0%} "
            "needed); the split may have rewritten it, a person should look")


def unfaithful_error(claim: str, sentence: int, text: str, why: str | None) -> str | None:
    if why is None:
        return None
    return (f"the claim {claim!r} does not say what sentence {sentence} ({text!r}) says: "
            f"{why}; the split may have rewritten it, the sentence is judged as it stands "
            "and a person should look")


def uncovered_error(sentence: int, text: str, lost: str) -> str:
    return (f"the claims of sentence {sentence} ({text!r}) leave out what it states: {lost}; "
            "the split may have rewritten it, the sentence is judged as it stands and a "
            "person should look")


def uses_coverage(version: str) -> bool:
    """``split_claims`` v2 and later account for every sentence (v1 is kept as it was)."""
    return int(version.removeprefix("v")) >= 2


def splits_per_sentence(version: str) -> bool:
    """``split_claims`` v3 and later take context: with an atomic rule, only the run of
    sentences from the first that is not atomic to the last is split."""
    return int(version.removeprefix("v")) >= 3


def to_split(atomic: list[bool], count: int, version: str) -> list[int]:
    """The numbers of the ``count`` sentences the model is given to split: from
    ``split_claims`` v3 on, with the sentences' ``atomic`` flags, the run from the first
    sentence that is not atomic to the last (the atomic ones before and after it are claims as
    they stand, those before it given to the model as context); else every sentence."""
    every = list(range(1, count + 1))
    if not atomic or not splits_per_sentence(version):
        return every
    split = [n for n, is_atomic in enumerate(atomic, start=1) if not is_atomic]
    # one run of sentences, with no gap: a small model numbers the frames it reads in turn
    return list(range(split[0], split[-1] + 1)) if split else every


def split_context(texts: list[str], framed: list[int]) -> str:
    """What the model reads beside the sentences it splits: the sentences before them (a
    later sentence is seldom what an earlier one refers to)."""
    return " ".join(text.strip() for text in texts[: min(framed) - 1])


class Splitter:
    """Splits answers with the config's ``split_claims`` prompt."""

    def __init__(self, config: JudgeConfig, client: ModelClient, root: Path) -> None:
        self.config = config
        self.client = client
        self.root = root

    async def split(self, record: AnswerRecord, run_id: str | None) -> Split:
        answer_id = record.answer_id
        bound = self.config.max_claims_per_answer
        if record.claims is not None:  # pre-split: used as given, never re-split
            if len(record.claims) > bound:
                return Split([unsplit_claim(record)],
                             f"the answer gives {len(record.claims)} claims; the bound "
                             f"(max_claims_per_answer) is {bound}")
            given = [(c.text, c.citations, looks_like_abstention(c.text)) for c in record.claims]
            return Split(make_claims(answer_id, given, origin="given"))
        texts, kept = self.sentences(record)
        atomic = self.atomic(texts, kept)
        if atomic and all(atomic) and len(kept) <= bound:
            specs = [(s.text.strip(), s.citations, looks_like_abstention(s.text)) for s in kept]
            return Split(make_claims(answer_id, specs, origin="sentence"))
        version = self.config.prompts["split_claims"]
        coverage = uses_coverage(version)
        framed = to_split(atomic, len(texts), version)
        extra: dict[str, Any] = {}
        if len(framed) < len(texts):  # the answer's numbers; what the model reads beside
            extra["numbers"] = framed
            if context := split_context(texts, framed):
                extra["context"] = context
        prompt = render(
            "split_claims", version, self.root, question=record.question,
            sentences=[texts[n - 1] for n in framed], max_claims=bound, **extra,
        )
        schema: type[SplitOutput] | type[SplitOutputV2] = (
            SplitOutputV2 if coverage else SplitOutput)
        try:
            out, call = await self.client.structured(prompt, schema, "split", run_id)
        except CallFailed as exc:
            return Split([unsplit_claim(record)], f"split failed: {exc}", exc.call_id)
        skips = out.skipped if isinstance(out, SplitOutputV2) else []
        return self.interpret(record, out.claims, skips, texts, kept, call, coverage, framed)

    def atomic(self, texts: list[str], kept: list[Sentence]) -> list[bool]:
        """Whether each sentence is atomic under the config's rule (:mod:`judge.split.atomic`);
        empty without a rule, or when the program found no sentence."""
        rule = self.config.atomic_rule
        if not rule or not kept:
            return []
        return [atomic_reason(text, own_citations(sentence), rule) is None
                for text, sentence in zip(texts, kept, strict=True)]

    @staticmethod
    def sentences(record: AnswerRecord) -> tuple[list[str], list[Sentence]]:
        """The answer's sentences as the model is given them (the whole answer as one when
        the program finds none), and the segmented sentences with their citations. A record
        whose answer has no citation marker and says ``uncited = "all_sources"`` (RAGAS and
        DeepEval rows) has every sentence cite every source."""
        sentences = segment_answer(record.answer, record.sources) or []
        kept = [s for s in sentences if s.text.strip()]
        if record.uncited == "all_sources" and not any(s.citations for s in kept):
            # cited by the record, not by markers of their own: a greeting stays a greeting
            every = [Citation(source=source.id) for source in record.sources]
            kept = ([s.model_copy(update={"citations": every, "inherited": True}) for s in kept]
                    or [Sentence(text=record.answer, start=0, end=len(record.answer),
                                 citations=every)])
        if not kept:
            return [record.answer], []
        return [s.text for s in kept], kept

    def interpret(
        self, record: AnswerRecord, found: Sequence[ModelClaim], skips: Sequence[Any],
        texts: list[str], kept: list[Sentence], call: str, coverage: bool = True,
        framed: list[int] | None = None,
    ) -> Split:
        """The claims the model ``found`` (each naming its sentence; an empty text stands for
        the whole sentence) and the sentences it ``skips``, checked: sentence numbers exist,
        a non-empty answer has a claim, every sentence is covered (``coverage``), the bound
        holds. ``framed``: the numbers of the sentences the model was given to split
        (``None``: all of them); any other sentence is a claim as it stands (origin
        ``sentence``): a model's claim naming it is an error, a skip naming it is ignored.
        ``Split.made_from`` tells which of ``found`` each claim is."""
        bound = self.config.max_claims_per_answer
        framed = framed or list(range(1, len(texts) + 1))
        error = None
        numbers = [c.sentence for c in found] + [k.sentence for k in skips]
        bad = sorted({n for n in numbers if not 1 <= n <= len(texts)})
        unasked = sorted({c.sentence for c in found if c.sentence not in framed} - set(bad))
        # a skip naming a context sentence says nothing: that sentence is a claim as it stands
        skips = [k for k in skips if k.sentence in framed or k.sentence in bad]
        if bad:
            error = f"split referred to sentence numbers that do not exist: {bad[:5]}"
        elif unasked:
            error = (f"split referred to sentences it was given as context only: {unasked[:5]} "
                     f"(given to split: {framed[:10]}); a person should look")
        elif not found and len(framed) == len(texts):
            reasons = ", ".join(f"sentence {k.sentence}: {k.reason}" for k in skips) or "none"
            error = (f"the split found no claim in a non-empty answer of {len(texts)} "
                     f"sentence(s) (reasons given: {reasons}); a person should look")
        if error:
            return Split([unsplit_claim(record)], error, call)
        specs: list[Spec] = []
        for index, c in enumerate(found):
            text = c.text.strip() or texts[c.sentence - 1].strip()
            cites = kept[c.sentence - 1].citations if kept else []
            abstention = c.kind == "abstention" or looks_like_abstention(text)
            specs.append((c.sentence, (text, cites, abstention), "split", index))
        for n in sorted(set(range(1, len(texts) + 1)) - set(framed)):
            text = texts[n - 1].strip()
            specs.append((n, (text, kept[n - 1].citations, looks_like_abstention(text)),
                          "sentence", None))
        specs, skipped = self._cover(specs, skips, texts, kept, reasons_given=coverage)
        specs, errors = self._faithful(specs, found, texts, kept, record)
        if len(specs) > bound:
            return Split([unsplit_claim(record)],
                         f"split produced {len(specs)} claims; the bound "
                         f"(max_claims_per_answer) is {bound}", call)
        claims = make_claims(record.answer_id, [spec for _, spec, _, _ in specs], origin="split")
        for claim, (_, _, origin, _) in zip(claims, specs, strict=True):
            claim.origin = origin  # type: ignore[assignment]
        return Split(claims, None, call, skipped, [index for _, _, _, index in specs], errors)

    @staticmethod
    def _faithful(
        specs: list[Spec], found: Sequence[ModelClaim], texts: list[str],
        kept: list[Sentence], record: AnswerRecord,
    ) -> tuple[list[Spec], dict[int, str]]:
        """The claims the model wrote in its own words checked against their sentences:
        grounded (:func:`grounding`), saying nothing the sentence does not
        (:func:`unfaithful`), and together keeping its checkable content
        (:func:`uncovered_content`). A sentence whose claims fail has those claims made
        ``judge_error`` (position → why) and is itself added as an ``uncovered`` claim,
        judged as it stands. Returns the specs in sentence order and the errors."""
        why: list[str | None] = [None] * len(specs)
        by_sentence: dict[int, list[int]] = {}
        for i, (n, (text, _, _), _, made) in enumerate(specs):
            by_sentence.setdefault(n, []).append(i)
            if made is None or not found[made].text.strip():  # the sentence as it stands
                continue
            sentence = texts[n - 1]
            share = grounding(text, sentence, record.answer)
            context = "\n".join([record.question or "", *texts[: n - 1]])
            why[i] = (ungrounded_error(text, n, sentence, share) if share < GROUNDED_SHARE
                      else unfaithful_error(text, n, sentence,
                                            unfaithful(text, sentence, context)))
        for n, members in by_sentence.items():
            if any(why[i] for i in members) or all(specs[i][3] is None for i in members):
                continue
            lost = uncovered_content(texts[n - 1], [specs[i][1][0] for i in members])
            if lost is not None:
                for i in members:
                    why[i] = uncovered_error(n, texts[n - 1], lost)
        failed = sorted({specs[i][0] for i in range(len(specs)) if why[i]})
        for n in failed:
            cites = kept[n - 1].citations if kept else []
            text = texts[n - 1].strip()
            specs = [*specs, (n, (text, cites, looks_like_abstention(text)), "uncovered", None)]
            why.append(None)
        order = sorted(range(len(specs)), key=lambda i: specs[i][0])  # stable
        return ([specs[i] for i in order],
                {position: w for position, i in enumerate(order) if (w := why[i]) is not None})

    @staticmethod
    def _cover(
        specs: list[Spec], skips: Sequence[Any], texts: list[str], kept: list[Sentence],
        reasons_given: bool = True,
    ) -> tuple[list[Spec], list[dict[str, Any]]]:
        """Every sentence covered: claims in sentence order, each sentence neither claimed nor
        skipped for an accepted reason added as an ``uncovered`` claim at its place.
        ``reasons_given`` false (``split_claims`` v1, whose output names no skipped sentence):
        a sentence without a claim counts as skipped when it states nothing checkable."""
        claimed = {n for n, _, _, _ in specs}
        skipped: dict[int, str] = {}

        def own_cites(n: int) -> bool:
            return bool(kept) and own_citations(kept[n - 1])

        for k in skips:
            if k.sentence not in claimed and skip_accepted(texts[k.sentence - 1], k.reason,
                                                           own_cites(k.sentence)):
                skipped.setdefault(k.sentence, k.reason)
        if not reasons_given:
            for n, text in enumerate(texts, start=1):
                if n not in claimed and checkable_reason(text, own_cites(n)) is None:
                    skipped[n] = "nothing checkable (split_claims v1 gives no reason)"
        for n, text in enumerate(texts, start=1):
            if n not in claimed and n not in skipped:
                cites = kept[n - 1].citations if kept else []
                specs.append(
                    (n, (text.strip(), cites, looks_like_abstention(text)), "uncovered", None))
        specs.sort(key=lambda spec: spec[0])  # stable: the model's order within a sentence
        notes = [{"sentence": n, "text": texts[n - 1], "reason": reason}
                 for n, reason in sorted(skipped.items())]
        return specs, notes
