"""A probe prompt in the reader's language (issue 33, the second candidate): does reading a
Chinese claim with the probe prompt's fixed wording in Chinese rank and label it better than
the English wording with the language offset (head v5), on OCNLI's *tuning* draw?

    python research/chinese_prompt.py [--items 200] [--seed 0]
        [--output research/reports/chinese_prompt_tuning.json]

For each sampled tuning item (both scripts) the prompt the default renders
(``probe_claim`` v2) has its fixed wording replaced by the same sentences in Chinese, in the
claim's script (the claim, evidence and question untouched), and the model reads it (block
21, as the default). The offset that goes with the Chinese wording is learnt as v5's was,
with no label and nothing non-commercial: the mean hidden state of the project's own Chinese
pairs read with the Chinese wording minus the mean of the English pairs read with the
English one (``research/language_pairs.*.jsonl``). Both are decided by head v5's weights
(the head sees an offset-free vector either way), and compared on the same items: balanced
accuracy over the three labels, contradicted recall, ROC AUC of the support score, and the
queue at the packaged 0.9 / 90% threshold, with a paired bootstrap interval by premise.

The English-wording vectors are read from the stores the earlier runs wrote (``out/ocnli.db``,
``out/lang.db``; replay, 0 calls), and one of them is recomputed here and compared to the bit,
so that the two sides differ only by the wording.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from judge.config import JudgeConfig  # noqa: E402
from judge.decide.probe import probe_prompt  # noqa: E402
from judge.language import script_lang  # noqa: E402
from judge.models import embedded  # noqa: E402
from judge.models.control_tokens import defuse  # noqa: E402
from judge.models.prompts import prompts_dir  # noqa: E402
from judge.records import AnswerRecord  # noqa: E402
from judge.verdicts import LABELS, Claim  # noqa: E402
from research.chinese_review_loop import load, premise  # noqa: E402
from research.language_head import PAIRS, V4_CONFIG, run_vectors  # noqa: E402
from research.language_shift import figures  # noqa: E402

#: probe_claim v2's fixed wording -> (Traditional, Simplified)
WORDING = {
    "Does the evidence state the claim, state something that makes it false, not mention it, "
    "or is the claim an opinion or small talk?":
        ("證據是陳述了這個說法、陳述了使它不成立的內容、沒有提到它，還是這個說法只是意見或閒聊？",
         "证据是陈述了这个说法、陈述了使它不成立的内容、没有提到它，还是这个说法只是意见或闲聊？"),
    "Said just before: ": ("剛才說的：", "刚才说的："),
    "Evidence:\n": ("證據：\n", "证据：\n"),
    "\n\nClaim: ": ("\n\n說法：", "\n\n说法："),
    "Judged only by the evidence, the claim is": ("只根據證據判斷，這個說法是",
                                                  "只根据证据判断，这个说法是"),
}


def chinese(text: str) -> str:
    """``text`` (a rendered v2 prompt) with its fixed wording in Chinese, in the script of
    the claim and its evidence (Traditional unless they lean Simplified); every piece must
    be found once (else the template is not v2's)."""
    side = 1 if script_lang(text) == "zh-Hans" else 0
    for english, both in WORDING.items():
        if english == "Said just before: " and english not in text:
            continue
        assert text.count(english) == 1, (english, text[:300])
        text = text.replace(english, both[side])
    return text


def read(text: str) -> np.ndarray:
    """The hidden state after block 21 of ``text``, as the embedded provider reads it."""
    result, _ = embedded.embed(defuse(text), 21)
    return np.asarray(result["data"][0]["embedding"], dtype=np.float64)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ocnli-db", type=Path, default=ROOT.parent / "out" / "ocnli.db")
    parser.add_argument("--pairs-db", type=Path, default=ROOT.parent / "out" / "lang.db")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "reports" / "chinese_prompt_tuning.json")
    args = parser.parse_args(argv)
    v4 = JudgeConfig.load(V4_CONFIG)
    data, raw, head, plain, threshold, about = load(args.ocnli_db)
    assert head.shift is not None
    root = prompts_dir()
    embedded.load(layers=21)

    # the pairs: English wording (stored) and Chinese wording (read here)
    stored = run_vectors(args.pairs_db, v4, about["vectors_from"])
    en_mean = np.vstack([v for _, v, _ in stored["language-en"]]).mean(0)
    zh_rows: list[np.ndarray] = []
    for line in PAIRS["zh"].read_text(encoding="utf-8").splitlines():
        record = AnswerRecord.model_validate(json.loads(line))
        for n, given in enumerate(record.claims or []):
            claim = Claim(id=f"{record.id}:{n}", answer_id=record.id or "", index=n,
                          text=given.text, origin="given")
            _, prompt = probe_prompt(v4, root, record, claim)
            zh_rows.append(read(chinese(prompt.as_text())))
    offset = np.vstack(zh_rows).mean(0) - en_mean
    print(f"pairs: {len(zh_rows)} Chinese read with the Chinese wording", flush=True)

    rng = random.Random(args.seed)
    picked = sorted(rng.sample(range(len(data.items)), min(args.items, len(data.items))))
    old_x, new_x, texts = [], [], []
    for n, k in enumerate(picked):
        item = data.items[k]
        _, prompt = probe_prompt(v4, root, item.record, item.claim)
        if n == 0:  # the stored English-wording vector is what this path reads, to the bit
            again = read(prompt.as_text())
            assert np.array_equal(again.astype(np.float16), raw[k].astype(np.float16)), \
                "the stored vector differs from a fresh read"
        new_x.append(read(chinese(prompt.as_text())) - offset)
        old_x.append(data.x[k])  # raw minus v5's offset
        texts.append(item.read)
        if (n + 1) % 25 == 0:
            print(f"{n + 1} of {len(picked)} items read", flush=True)
    y = data.y[picked]
    groups = np.array([premise(data.items[k]) for k in picked])
    out: dict[str, Any] = {"items": len(picked), "seed": args.seed, "threshold": threshold,
                           "pairs": len(zh_rows)}
    results = {}
    for name, x in (("english wording + v5 offset", np.vstack(old_x)),
                    ("chinese wording + its offset", np.vstack(new_x))):
        p = plain.probabilities(x)
        pred, s = p.argmax(1), p[:, LABELS.index("supported")]
        results[name] = (pred, s)
        out[name] = figures(pred, s, y, threshold)
    # paired bootstrap by premise: balanced accuracy (3 labels) and AUC, new minus old
    keep = np.isin(y, [0, 1, 2])
    unique = np.unique(groups)
    rng_np = np.random.default_rng(args.seed)
    diffs: dict[str, list[float]] = {"balanced_accuracy_3": [], "roc_auc_support": []}
    for _ in range(2000):
        chosen = rng_np.choice(unique, len(unique))
        idx = np.concatenate([np.flatnonzero(groups == g) for g in chosen])
        idx = idx[keep[idx]]
        if len(set(y[idx])) < 3:
            continue
        a = figures(results["english wording + v5 offset"][0][idx],
                    results["english wording + v5 offset"][1][idx], y[idx], threshold)
        b = figures(results["chinese wording + its offset"][0][idx],
                    results["chinese wording + its offset"][1][idx], y[idx], threshold)
        for key in diffs:
            diffs[key].append(b[key] - a[key])
    out["paired_difference_95"] = {k: [round(float(np.percentile(v, 2.5)), 4),
                                       round(float(np.percentile(v, 97.5)), 4)]
                                   for k, v in diffs.items()}
    args.output.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    for name in results:
        f = out[name]
        print(f"{name}: BA3 {f['balanced_accuracy_3']:.3f}, contradicted recall "
              f"{f['recall']['contradicted']:.2f}, AUC {f['roc_auc_support']:.3f}, queue FA "
              f"{f['queue']['false_alarm']:.2f} load {f['queue']['load']:.2f}")
    print("paired (chinese - english) 95%:", out["paired_difference_95"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
