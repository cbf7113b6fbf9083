"""How a run reads an answer that cites nothing: no citation marker in its text and no
citation on any given claim (the ``uncited`` setting, ``judge run --uncited``).

``"all_sources"`` (the default): the answer cites every source, as a RAG answer without markers
means its retrieved contexts. The choice is written into the record the run stores
(``uncited = "all_sources"``, and each given claim cites every source), so the judge version
stays what it was and a stored answer replays as it was read. ``"missing_citation"``: the
record is read as it is, and each of its claims is flagged ``missing_citation`` (the
behaviour before the setting). An answer that cites some sources is read by its citations
either way: its uncited sentences keep ``missing_citation``.
"""

from __future__ import annotations

from judge.records import AnswerRecord, Citation
from judge.split.citations import segment_answer


def cites_nothing(record: AnswerRecord) -> bool:
    """Whether the answer has no citation at all: none on its given claims, or, without given
    claims, no marker in its text."""
    if record.claims is not None:
        return not any(c.citations for c in record.claims)
    return not any(s.citations for s in segment_answer(record.answer, record.sources) or [])


def read_uncited(record: AnswerRecord, uncited: str) -> AnswerRecord:
    """``record`` as a run reads it under the ``uncited`` setting: an answer that cites nothing
    and does not say what it cites (``uncited`` unset in the record) cites every source
    under ``"all_sources"``; any other record is read as it is. The record keeps its id (a
    content-hash id stays the hash of the line as given)."""
    if uncited != "all_sources" or record.uncited is not None or not cites_nothing(record):
        return record
    update: dict[str, object] = {"uncited": "all_sources"}
    if record.claims is not None:
        every = [Citation(source=source.id) for source in record.sources]
        update["claims"] = [c.model_copy(update={"citations": every}) for c in record.claims]
    return record.model_copy(update=update)
