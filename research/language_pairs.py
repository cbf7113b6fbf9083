"""Unlabelled claim/evidence pairs built the same way in Chinese and in English, for measuring
how the probe's hidden states shift with the language read (issue 33) without any label and
without any non-commercial text.

    python research/language_pairs.py [--seeds ../shared/seeds] [--per-language 160]

Both languages come from this project's own texts: Chinese from the design documents the
project was distilled from (``../shared/seeds/*.txt``, Traditional script), English from the
project's own English documentation (``../shared/docs/design.md``, ``docs/*.md``). Each text
is cut into paragraphs; a paragraph of 2 to 6 sentences and at most 500 characters is the
evidence, and it is asked about twice: one of its own sentences (taken verbatim) and a
sentence of another document. The two languages get the same construction, so whatever the
mean hidden state of the pairs carries beside the language (the mix of "in the evidence" and
"not in it") is the same on both sides, and their difference is the language's.

No pair has a label: a pair's kind (``own`` / ``other``) is how it was built, never used as
gold. The files are answer records with given claims (``judge run`` reads them; the split is
not called): ``research/language_pairs.zh.jsonl`` and ``research/language_pairs.en.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.text import has_cjk, split_sentences  # noqa: E402

SEED = 20261203
MAX_EVIDENCE = 500
OUT = {"zh": ROOT / "language_pairs.zh.jsonl", "en": ROOT / "language_pairs.en.jsonl"}


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, markdown code and tables left out."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln.strip() for ln in block.splitlines() if ln.strip()
                 and not ln.lstrip().startswith(("|", "#", "<!--", "    "))]
        para = " ".join(lines) if not has_cjk(block) else "".join(lines)
        if para:
            out.append(para)
    return out


def sentences(text: str) -> list[str]:
    return [text[s:e].strip() for s, e in split_sentences(text) if len(text[s:e].strip()) >= 8]


def pairs(docs: dict[str, str], lang: str, per_language: int, rng: random.Random
          ) -> list[dict[str, Any]]:
    """Records: a paragraph as the evidence, asked about one of its own sentences and one
    sentence of another document."""
    evidence: list[tuple[str, str, list[str]]] = []
    pool: dict[str, list[str]] = {}
    for name, text in docs.items():
        pool[name] = []
        for para in paragraphs(text):
            sent = sentences(para)
            pool[name] += sent
            if 2 <= len(sent) <= 6 and len(para) <= MAX_EVIDENCE:
                evidence.append((name, para, sent))
    rng.shuffle(evidence)
    records: list[dict[str, Any]] = []
    for k, (name, para, sent) in enumerate(evidence[: per_language // 2]):
        others = [s for n, ss in pool.items() if n != name for s in ss]
        for kind, claim in (("own", rng.choice(sent)), ("other", rng.choice(others))):
            records.append({
                "id": f"lang-{lang}-{k:03d}-{kind}", "answer": claim,
                "sources": [{"id": "E1", "text": para}],
                "claims": [{"text": claim, "citations": ["E1"]}],
                "domain": f"language-{lang}",
            })
    return records


def read_docs(seeds: Path) -> dict[str, dict[str, str]]:
    zh = {p.name: p.read_text(encoding="utf-8") for p in sorted(seeds.glob("*.txt"))}
    en_paths = [seeds.parent / "docs" / "design.md", *sorted((ROOT.parent / "docs").glob("*.md"))]
    en = {p.name: p.read_text(encoding="utf-8") for p in en_paths if p.is_file()}
    if not zh or not en:
        raise SystemExit(f"no texts found (Chinese under {seeds}, English docs)")
    return {"zh": zh, "en": en}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=Path, default=ROOT.parent.parent / "shared" / "seeds")
    parser.add_argument("--per-language", type=int, default=160)
    args = parser.parse_args(argv)
    docs = read_docs(args.seeds)
    for lang, texts in docs.items():
        records = pairs(texts, lang, args.per_language, random.Random(f"{SEED}:{lang}"))
        OUT[lang].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                     for r in records), encoding="utf-8")
        print(f"{lang}: {len(records)} records from {len(texts)} texts -> "
              f"{OUT[lang].relative_to(ROOT.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
