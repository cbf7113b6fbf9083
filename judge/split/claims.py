"""Splitting one answer into claims.

Given claims (``claims`` in the answer record) are used as given, never re-split. Otherwise
the answer is segmented into sentences by the program (citations inside the text attach to
the sentences they cover), and the model splits the numbered sentences into claims. A split
that fails gives one ``unsplit`` claim holding the whole answer, which becomes a
``judge_error`` verdict (fail closed).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

from judge.config import JudgeConfig
from judge.hashing import content_hash
from judge.models.client import CallFailed, ModelClient
from judge.models.prompts import render
from judge.models.schemas import SplitOutput
from judge.records import AnswerRecord, Citation
from judge.split.abstention import looks_like_abstention
from judge.split.citations import segment_answer
from judge.verdicts import AnswerStatus, Claim

#: The longest answer text an ``unsplit`` claim keeps.
UNSPLIT_CHARS = 4000


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


@dataclass
class Split:
    """The claims of one answer; ``error`` when the split failed (then one unsplit claim)."""

    claims: list[Claim]
    error: str | None = None
    call_id: str | None = None


class Splitter:
    """Splits answers with the config's ``split_claims`` prompt."""

    def __init__(self, config: JudgeConfig, client: ModelClient, root: Path) -> None:
        self.config = config
        self.client = client
        self.root = root

    async def split(self, record: AnswerRecord, run_id: str | None) -> Split:
        answer_id = record.answer_id
        if record.claims is not None:  # pre-split: used as given, never re-split
            specs = [(c.text, c.citations, looks_like_abstention(c.text)) for c in record.claims]
            return Split(make_claims(answer_id, specs, origin="given"))
        sentences = segment_answer(record.answer, record.sources) or []
        kept = [s for s in sentences if s.text.strip()]
        texts = [s.text for s in kept]
        if not texts:
            texts, kept = [record.answer], []
        prompt = render(
            "split_claims",
            self.config.prompts["split_claims"],
            self.root,
            question=record.question,
            sentences=texts,
            max_claims=self.config.max_claims_per_answer,
        )
        try:
            out, call = await self.client.structured(prompt, SplitOutput, "split", run_id)
        except CallFailed as exc:
            return Split([unsplit_claim(record)], f"split failed: {exc}", exc.call_id)
        error = None
        if len(out.claims) > self.config.max_claims_per_answer:
            error = (
                f"split produced {len(out.claims)} claims; the bound is "
                f"{self.config.max_claims_per_answer}"
            )
        bad = [c.sentence for c in out.claims if not 1 <= c.sentence <= len(texts)]
        if bad:
            error = f"split referred to sentence numbers that do not exist: {bad[:5]}"
        if error:
            return Split([unsplit_claim(record)], error, call)
        specs = []
        for c in out.claims:
            cites = kept[c.sentence - 1].citations if kept else []
            specs.append((c.text, cites, c.kind == "abstention" or looks_like_abstention(c.text)))
        return Split(make_claims(answer_id, specs, origin="split"), None, call)
