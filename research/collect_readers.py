"""Collect every probe reader's vector for the training pool, one forward pass a claim, into
compressed float16 shards that a commit can carry (issue 49).

    python research/collect_readers.py [--layers 21] [--out research/vectors] [--limit N]
        [--gold FILE ...] [--threads 2] [--shard 100] [--measure] [--no-evidence]

For each human-labelled claim of the pool (the 1,650 dev claims of the four first sets,
``gold/eval_all.jsonl`` and ``research/tuning_subset.jsonl``, and the 3,773 of the training
pool in ``../shared/gold/external/``: ExpertQA, FEVER-Symmetric, SummEdits, FaithDial audit)
the script renders the probe prompt exactly as the product does (``research/configs/
probe_v6.toml``: ``probe_claim`` v2, 1,500 characters of located evidence; the control-token
spellings broken as the embedded provider breaks them), reads every token's hidden state after
block ``--layers`` of the packaged model (:meth:`judge.models.runtime.Runtime.token_states`),
and keeps each reader of :mod:`judge.models.readers` (``last``, ``claim_mean``, ``claim_max``,
``evidence_mean``, ``evidence_max``) as float16.

Claims go in a fixed random order (sha256 of the gold id), so that whatever has been
collected when a session stops is a random sample of the whole pool. Each shard
(``<out>/L<layers>/shard-NNNN.npz``) is written whole and atomically; a run skips the ids its
shards hold with the same prompt, so it resumes where it stopped (an id whose prompt changed
since, e.g. a gold text repaired, is read again into a later shard, which then holds it).
The shards hold no text: the gold id, the sha256
of the prompt read (a refit checks its prompts against it), the number of tokens, and the
vectors. Nothing here is fitted; 0 calls through litellm (the runtime is driven directly).

``--no-evidence`` reads the same prompt with nothing under its evidence heading (the
question's last turn and the claim kept) into ``<out>/L<layers>-noevidence``: what the model
makes of the claim alone, in the same frame (research/README.md, session 8 of issue 49).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
sys.path.insert(0, str(REPO))

from judge.config import JudgeConfig  # noqa: E402
from judge.decide.probe import probe_prompt  # noqa: E402
from judge.evaluation.gold import read_gold  # noqa: E402
from judge.evaluation.matching import gold_to_records  # noqa: E402
from judge.models.control_tokens import defuse  # noqa: E402
from judge.models.prompts import prompts_dir  # noqa: E402
from judge.models.readers import READERS, pool, prompt_spans, token_offsets  # noqa: E402
from judge.records import AnswerRecord  # noqa: E402
from judge.verdicts import Claim  # noqa: E402

SHARED = REPO.parent / "shared" / "gold" / "external"
FIRST_SETS = [REPO / "gold" / "eval_all.jsonl", ROOT / "tuning_subset.jsonl"]
TRAINING_POOL = [SHARED / f"{name}.dev.jsonl"
                 for name in ("expertqa", "fever_symmetric", "summedits", "faithdial_audit")]
POOL = FIRST_SETS + TRAINING_POOL
CONFIG = ROOT / "configs" / "probe_v6.toml"
HELD_BACK = ("fresh_check", "ocnli")


def order_key(gold_id: str) -> str:
    return hashlib.sha256(f"collect-readers:{gold_id}".encode()).hexdigest()


def pool_prompts(paths: list[Path], config: JudgeConfig, measure: bool = False,
                 no_evidence: bool = False) -> list[dict[str, Any]]:
    """Every valid gold item of ``paths`` with the text of its probe prompt as the model
    reads it and the claim as it stands there, in the collection order. ``measure``: the
    files are read to be measured on (fresh_check, OCNLI), never fitted on: allowed, and
    only then. ``no_evidence``: the same prompt with no excerpt under its evidence heading
    (what the model makes of the claim alone, in the same frame)."""
    root = prompts_dir()
    out = []
    for path in paths:
        held = any(name in path.name for name in HELD_BACK)
        if held and not measure:
            raise SystemExit(f"{path} is measure-only or held back: never collected for a fit "
                             f"(--measure collects it apart, to be measured on)")
        gold = read_gold(path)
        if gold.errors or gold.refused:
            raise SystemExit(f"{path}: {len(gold.errors)} invalid and {len(gold.refused)} "
                             f"refused lines, e.g. {(gold.errors + gold.refused)[0]}")
        conv = gold_to_records(gold.entries)
        records = {r["id"]: AnswerRecord.model_validate(r) for r in conv.records}
        for entry in gold.entries:
            ref = conv.refs.get(entry.item.id)
            if ref is None:
                continue
            record = records[ref.answer_id]
            text = entry.item.claim.strip()
            claim = Claim(id=ref.claim_id, answer_id=record.id, index=0, text=text,
                          origin="given")
            if no_evidence:  # the product's prompt for the record without its sources
                record = record.model_copy(update={"sources": []})
            _, prompt = probe_prompt(config, root, record, claim)
            out.append({"id": entry.item.id, "text": defuse(prompt.as_text()),
                        "claim": defuse(text)})
    out.sort(key=lambda p: order_key(p["id"]))
    return out


def done_ids(folder: Path) -> dict[str, str]:
    """The sha256 of the prompt each collected id was read with (the latest shard's, when an
    id was collected again)."""
    done: dict[str, str] = {}
    for shard in sorted(folder.glob("shard-*.npz")):
        with np.load(shard) as data:
            done.update((str(i), str(h)) for i, h in zip(data["ids"], data["prompt_sha256"],
                                                         strict=True))
    return done


def write_shard(folder: Path, rows: list[dict[str, Any]]) -> Path:
    index = len(list(folder.glob("shard-*.npz")))
    path = folder / f"shard-{index:04d}.npz"
    tmp = folder / f".shard-{index:04d}.{os.getpid()}.tmp.npz"
    arrays: dict[str, Any] = {
        "ids": np.array([r["id"] for r in rows]),
        "prompt_sha256": np.array([r["sha"] for r in rows]),
        "n_tokens": np.array([r["n_tokens"] for r in rows], dtype=np.int32),
        "claim_tokens": np.array([r["claim_tokens"] for r in rows], dtype=np.int32),
    }
    for reader in READERS:
        arrays[reader] = np.stack([r[reader] for r in rows]).astype(np.float16)
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=21)
    parser.add_argument("--out", type=Path, default=ROOT / "vectors")
    parser.add_argument("--gold", type=Path, nargs="+", default=POOL)
    parser.add_argument("--limit", type=int, default=None, help="stop after N new claims")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--shard", type=int, default=100, help="claims a shard")
    parser.add_argument("--no-evidence", action="store_true",
                        help="read the probe prompt with no excerpt under its evidence "
                             "heading (the claim alone, in the same frame) into "
                             "<out>/L<layers>-noevidence")
    parser.add_argument("--measure", action="store_true",
                        help="collect held-back or measure-only files (fresh_check, OCNLI) "
                             "into <out>/measure/L<layers>, apart from the pool's shards; "
                             "research/replay_vectors.py --vectors <out>/measure measures a "
                             "head on them (labels are never read here)")
    args = parser.parse_args(argv)
    if args.measure and args.gold == POOL:
        parser.error("--measure takes the files to measure on (--gold)")

    from judge.models import embedded
    from judge.models.readers import tokens_in
    from judge.models.runtime import Runtime

    config = JudgeConfig.load(CONFIG)
    folder = ((args.out / "measure" if args.measure else args.out)
              / f"L{args.layers}{'-noevidence' if args.no_evidence else ''}")
    folder.mkdir(parents=True, exist_ok=True)
    prompts = pool_prompts(args.gold, config, args.measure, args.no_evidence)
    done = done_ids(folder)
    # an id whose prompt changed since (a gold text repaired) is read again; the later shard
    # holds it, and readers of the shards take the latest (research/readers_transfer.py)
    todo = [p for p in prompts
            if done.get(p["id"]) != hashlib.sha256(p["text"].encode()).hexdigest()]
    if args.limit is not None:
        todo = todo[:args.limit]
    print(f"{len(prompts)} claims in the pool, {len(done)} collected, {len(todo)} to go "
          f"(layer {args.layers})", flush=True)
    if not todo:
        return 0
    path = embedded.layered_file(args.layers)
    runtime = Runtime(path, f"first{args.layers}", 4096, args.threads, False, 1, None,
                      token_states=True)
    rows: list[dict[str, Any]] = []
    started, tokens = time.perf_counter(), 0
    for n, item in enumerate(todo, start=1):
        text = item["text"]
        try:
            states, pieces = runtime.token_states(text)
            offsets = token_offsets(pieces, text)
            spans = prompt_spans(text, item["claim"])
            vector = pool(states, offsets, spans, READERS)
        except Exception as exc:  # one claim never stops the collection: said, skipped
            print(f"{item['id']}: {type(exc).__name__}: {exc}", flush=True)
            continue
        dim = states.shape[1]
        row: dict[str, Any] = {
            "id": item["id"], "sha": hashlib.sha256(text.encode()).hexdigest(),
            "n_tokens": states.shape[0],
            "claim_tokens": int(tokens_in(offsets, spans.claim).size)}
        for k, reader in enumerate(READERS):
            row[reader] = vector[k * dim:(k + 1) * dim]
        rows.append(row)
        tokens += states.shape[0]
        if len(rows) >= args.shard or n == len(todo):
            shard = write_shard(folder, rows)
            rows = []
            spent = time.perf_counter() - started
            print(f"{n}/{len(todo)} claims, {shard.name}, {spent / n:.2f} s a claim, "
                  f"{tokens / spent:.0f} tokens/s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
