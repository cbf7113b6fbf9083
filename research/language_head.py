"""Write the default probe head v5 (issue 33): head v4's weights unchanged plus the Chinese
language offset learnt from the project's own unlabelled pairs, and its packaged operating
points (v4's, carried over).

    python research/language_head.py [--pairs-db out/lang.db] [--check]

The offset is mean(hidden states of the Chinese pairs) - mean(hidden states of the English
pairs), the pairs of ``research/language_pairs.{zh,en}.jsonl`` (``research/language_pairs.py``:
both languages built alike from the project's own texts, no label, nothing non-commercial) as
the v4 default read them (``judge run research/language_pairs.{zh,en}.jsonl --db out/lang.db``
with ``research/configs/probe_first21_context_all.toml``, version ``…@42706893ca0c``; the
pairs are taken by how they were built, the ``language-zh`` and ``language-en`` domains). The
head applies it to a claim the probe reads as Chinese (``judge.language.read_language``, rule
``han-share-half/v1``, on the claim and its located excerpts), in either script.

The operating points are v4's: v5 gives a claim v4's scores unless the probe reads it as
Chinese, and no claim of the dev gold they were set on (``gold/eval_all.jsonl``,
``research/tuning_subset.jsonl``) is read as Chinese (checked here: the script refuses to
carry them over otherwise; then they are to be set again with ``research/fit_probe.py
--operating``).

Everything is computed from stored vectors (replay: no model call) and written
deterministically: a rerun writes the same bytes (``--check`` verifies the files instead of
writing them; exit 1 when they differ).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge import version_of  # noqa: E402
from judge.config import JudgeConfig  # noqa: E402
from judge.config.probe import PROBE_EXCERPT_CHARS  # noqa: E402
from judge.decide.excerpts import locate_excerpts  # noqa: E402
from judge.decide.probe import ProbeStrategy, head_of, probe_text  # noqa: E402
from judge.decide.probe_head import LanguageShift, ProbeHead  # noqa: E402
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.evaluation.matching import gold_to_records  # noqa: E402
from judge.fitting.items import _score_all, claim_of  # noqa: E402
from judge.language import LANGUAGE_RULE, read_language  # noqa: E402
from judge.models.client import ModelClient  # noqa: E402
from judge.models.prompts import prompts_dir  # noqa: E402
from judge.records import AnswerRecord  # noqa: E402
from judge.runs.loop import run_sync  # noqa: E402
from judge.store import Store  # noqa: E402

REPO = ROOT.parent
V4_CONFIG = ROOT / "configs" / "probe_first21_context_all.toml"
NAME = "qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v5"
HEAD = REPO / "judge" / "config" / "heads" / f"{NAME}.json"
OPERATING = REPO / "judge" / "config" / "operating" / f"{NAME}.json"
V4_OPERATING = REPO / "judge" / "config" / "operating" / \
    "qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v4.json"
PAIRS = {"zh": ROOT / "language_pairs.zh.jsonl", "en": ROOT / "language_pairs.en.jsonl"}
DEV_GOLD = (REPO / "gold" / "eval_all.jsonl", ROOT / "tuning_subset.jsonl")


def run_vectors(db: Path, config: JudgeConfig, version: str
                ) -> dict[str, list[tuple[str, np.ndarray, str]]]:
    """(claim id, stored vector, what the probe read) of every claim ``version`` judged in
    ``db``, by the answer's domain, in claim id order (replay: a missing call is left out)."""
    store = Store.open(db)
    try:
        client = ModelClient(config, store, replay=True)
        strategy = ProbeStrategy(config, client, prompts_dir())
        pairs, domains = [], []
        rows = sorted(store.verdict_rows(judge_version=version), key=lambda r: r["claim_id"])
        for row in rows:
            record = store.answer_record(row["answer_id"])
            if record is None or row["label"] == "judge_error":
                continue
            pairs.append((record, claim_of(row)))
            domains.append(record.domain or "")
        scored = run_sync(_score_all(strategy, pairs))
        assert client.stats.made == 0
    finally:
        store.close()
    out: dict[str, list[tuple[str, np.ndarray, str]]] = {}
    for (_, claim), domain, result in zip(pairs, domains, scored, strict=True):
        if result is not None:
            located, vector, _ = result
            out.setdefault(domain, []).append(
                (claim.id, np.asarray(vector, dtype=np.float64), probe_text(claim.text, located)))
    return out


def pair_offset(db: Path) -> tuple[np.ndarray, dict[str, Any]]:
    """The offset of the Chinese pairs from the English ones, and where it comes from."""
    config = JudgeConfig.load(V4_CONFIG)
    version = version_of(config)
    vectors = run_vectors(db, config, version)
    zh = np.vstack([v for _, v, _ in vectors.get("language-zh", [])])
    en = np.vstack([v for _, v, _ in vectors.get("language-en", [])])
    about = {
        "offset": "mean hidden state of the Chinese pairs minus that of the English pairs "
                  "(unlabelled claim/evidence pairs built alike from the project's own texts)",
        "pairs": {lang: {"file": str(path.relative_to(REPO)), "n": n,
                         "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
                  for (lang, path), n in zip(PAIRS.items(), (len(zh), len(en)), strict=True)},
        "built_by": "research/language_pairs.py",
        "vectors_from": version,
        "written_by": "research/language_head.py",
    }
    return zh.mean(0) - en.mean(0), about


def chinese_dev_claims() -> int:
    """How many claims of the dev gold the probe reads as Chinese (the claim and the excerpts
    the program locates for it, as the pipeline does)."""
    n = 0
    for path in DEV_GOLD:
        for raw in gold_to_records(load_gold(path).entries).records:
            record = AnswerRecord.model_validate(raw)
            for claim in record.claims or []:
                located = locate_excerpts(claim.text, record, budget=PROBE_EXCERPT_CHARS)
                n += read_language(probe_text(claim.text, located)) == "zh"
    return n


def render(db: Path) -> dict[Path, str]:
    config = JudgeConfig.load(V4_CONFIG)
    assert config.probe_head is not None
    v4 = head_of(config)
    offset, about = pair_offset(db)
    v5 = ProbeHead(v4.labels, v4.mean, v4.scale, v4.coef, v4.intercept,
                   {**v4.about, "name": NAME,
                    "from_head": {"name": v4.about["name"], "sha256": config.probe_head.sha256,
                                  "kept": "weights, standardisation and intercepts unchanged; "
                                          "a Chinese language offset added (shift)"}},
                   LanguageShift(LANGUAGE_RULE, {"zh": offset}, about))
    head_text = v5.dumps()
    sha256 = hashlib.sha256(head_text.encode("utf-8")).hexdigest()
    chinese = chinese_dev_claims()
    if chinese:
        raise SystemExit(f"{chinese} dev gold claims are read as Chinese: v4's operating points "
                         "do not carry over; set them with research/fit_probe.py --operating")
    points = json.loads(V4_OPERATING.read_text(encoding="utf-8"))
    points.update({
        "head": f"builtin:{NAME}", "head_sha256": sha256,
        "carried_over": {
            "from": f"judge/config/operating/{V4_OPERATING.name}",
            "why": "head v5 is v4 with a Chinese language offset, and no claim of the dev gold "
                   "the points were set on is read as Chinese (rule "
                   f"{LANGUAGE_RULE}): v5 gives each of them v4's score, so the points are "
                   "v4's (research/language_head.py checks it)",
        },
    })
    return {HEAD: head_text,
            OPERATING: json.dumps(points, indent=2, ensure_ascii=False) + "\n"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs-db", type=Path, default=REPO / "out" / "lang.db",
                        help="store holding the pairs as the v4 default judged them")
    parser.add_argument("--check", action="store_true",
                        help="verify the head and its points instead of writing them")
    args = parser.parse_args(argv)
    outputs = render(args.pairs_db)
    if args.check:
        stale = [str(p.relative_to(REPO)) for p, text in outputs.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != text]
        if stale:
            print("out of date: " + ", ".join(stale), file=sys.stderr)
            return 1
        print("head v5 and its operating points are up to date")
        return 0
    for path, text in outputs.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)}")
    sha256 = hashlib.sha256(outputs[HEAD].encode("utf-8")).hexdigest()
    print(f'probe_head = {{ file = "builtin:{NAME}", sha256 = "{sha256}" }}')
    return 0


if __name__ == "__main__":
    sys.exit(main())
