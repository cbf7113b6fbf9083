"""Judge the training pool through the product from the collected vectors, with no model
(issue 49): a store whose verdicts ``research/fit_probe.py`` fits the shipped head on and
sets its packaged operating points from.

    python research/replay_vectors.py --db out/pool.db [--reader last] [--layers 21]
        [--gold FILE ...] [--vectors research/vectors]

``research/collect_readers.py`` keeps each pool claim's readers as float16 shards, with the
sha256 of the probe prompt read. This script runs ``judge eval-gold`` on each pool file
(``judge.api.eval_gold``: the product's own pipeline, the deterministic checks, the store)
under the embedded default with ``probe_reader = READER`` and the bootstrap head
``builtin:uniform`` (the vectors do not depend on the head), with one change: the embedded
provider's vector answer is looked up in the shards by the sha256 of the prompt it is asked to
read, instead of being computed by the model. Only the collected claims are judged; a prompt whose
sha256 is not in the shards (the prompt changed since the collection) is a failed call that
stops the run, never another vector. So the stored calls hold the
collected vectors, float16-rounded (the product computes float32: each number within 2^-11 of
its value relative, far below the spread the head standardises away). The store is a research
artefact (``out/``), never a product store: its calls were not made by the model as stored.

Nothing is fitted here; 0 model calls.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
sys.path.insert(0, str(REPO))

from judge.config import JudgeConfig  # noqa: E402
from judge.evaluation.gold import load_gold  # noqa: E402
from judge.models.control_tokens import defuse  # noqa: E402
from judge.models.readers import parse_readers  # noqa: E402
from research.collect_readers import CONFIG, POOL, done_ids  # noqa: E402


def shard_vectors(folder: Path, readers: list[str]) -> dict[str, np.ndarray]:
    """The vector of ``readers`` (joined in their order) of every collected prompt, by the
    sha256 of the prompt's text."""
    out: dict[str, np.ndarray] = {}
    shards = sorted(folder.glob("shard-*.npz"))
    if not shards:
        raise SystemExit(f"no shards in {folder}: run research/collect_readers.py first")
    for shard in shards:
        with np.load(shard) as data:
            parts = [data[r].astype(np.float32) for r in readers]
            joined = np.concatenate(parts, axis=1)
            for sha, vector in zip(data["prompt_sha256"], joined, strict=True):
                out[str(sha)] = vector
    return out


def serve_from(vectors: dict[str, np.ndarray]) -> dict[str, int]:
    """Make the embedded provider answer vector requests from ``vectors`` (by prompt sha256),
    never from the model; returns the counts of found and missing prompts as it goes."""
    from judge.models import embedded_provider as provider

    seen = {"found": 0, "missing": 0}

    def embed(self: Any, model: str, inputs: list[Any], optional_params: dict[str, Any]
              ) -> Any:
        data = []
        for index, raw in enumerate(inputs):
            text = defuse(raw)
            vector = vectors.get(hashlib.sha256(text.encode()).hexdigest())
            if vector is None:
                seen["missing"] += 1
                raise provider.CustomLLMError(
                    404, "this prompt was not collected (research/vectors)")
            seen["found"] += 1
            data.append({"object": "embedding", "index": index,
                         "embedding": vector.tolist()})
        return provider._embedding_response(model, data, 0, None)

    provider.EmbeddedProvider._embed = embed  # type: ignore[method-assign]
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--reader", default="last")
    parser.add_argument("--layers", type=int, default=21)
    parser.add_argument("--gold", type=Path, nargs="+", default=POOL)
    parser.add_argument("--vectors", type=Path, default=ROOT / "vectors")
    parser.add_argument("--limit", type=int, default=None, help="the first N items a file")
    args = parser.parse_args(argv)

    from judge.api import eval_gold

    readers = parse_readers(args.reader)
    base = JudgeConfig.load(CONFIG).model_dump(exclude_unset=True)
    uniform = REPO / "judge" / "config" / "heads" / "uniform.json"
    head = {"file": "builtin:uniform", "sha256": hashlib.sha256(uniform.read_bytes()).hexdigest()}
    config = JudgeConfig(**{**base, "probe_head": head, "probe_layers": args.layers,
                            "probe_reader": "+".join(readers)})
    vectors = shard_vectors(args.vectors / f"L{args.layers}", readers)
    seen = serve_from(vectors)
    print(f"{len(vectors)} collected vectors of {'+'.join(readers)} at layer {args.layers}",
          flush=True)
    version = None
    collected = done_ids(args.vectors / f"L{args.layers}")
    for gold in args.gold:
        read = load_gold(gold)  # only the collected claims: a missing vector stops the run
        entries = [e for e in read.entries if e.item.id in collected][:args.limit]
        if not entries:
            print(f"{gold.name}: none collected yet", flush=True)
            continue
        result = eval_gold(replace(read, entries=entries), config=config, db=args.db)
        version = result.summary.judge_version
        for rejected in result.summary.rejected_lines:  # e.g. a gold text holding a NUL
            print(f"{gold.name}: record {rejected['line']} not judged: {rejected['error']}",
                  flush=True)
        print(f"{gold.name}: {result.summary.as_dict().get('claims')} claims; "
              f"{seen['found']} vectors served, {seen['missing']} not collected", flush=True)
    print(f"judge version {version}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
