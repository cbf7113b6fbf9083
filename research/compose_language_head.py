"""Compose a head that gives the claims read as a language another head (issue 49, session 6):
``--outer``'s head decides every claim but those the language rule reads as ``--language``,
which ``--inner``'s head decides (:class:`judge.decide.probe_head.LanguageHeads`); and the
queue's packaged points for it, each the outer head's point with the inner head's point for
the language folded in (:meth:`judge.review.score.ScoreSpec.weighing`).

    python research/compose_language_head.py \\
        --outer judge/config/heads/…-ctx-probe-v6.json \\
        --inner judge/config/heads/…-ctx-probe-v7.json \\
        --language zh --name qwen2.5-coder-1.5b-q4km-first21-ctx-probe-v8 \\
        --head judge/config/heads/…-v8.json --operating judge/config/operating/…-v8.json

Nothing is fitted here. Each packaged point keeps the outer point's threshold ``T``, flag score
and figures (set on the outer head's gold, none of which the rule reads as the language: the
script checks that the outer point's gold files hold no claim the rule reads as it). For a claim
read as the language, the inner point's stacked score ``sigmoid(a + b logit(s) + c h)`` (``h``:
the strength it holds for the language) is flagged below its threshold ``T'``; the composed
point gives that language the inner weights with the intercept moved by the outer head's held
strength and ``logit(T) - logit(T')``, so that the outer threshold ``T`` flags exactly the
claims ``T'`` flagged. So the composed head flags each claim as its own head's point did, at
each packaged recall and confidence.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.decide.probe_head import LanguageHeads, ProbeHead, canonical, from_dict  # noqa: E402
from judge.language import LANGUAGE_RULE, LANGUAGE_RULES  # noqa: E402
from judge.review.score import logit, parse_spec  # noqa: E402


def compose_head(outer: ProbeHead, inner: ProbeHead, language: str, name: str,
                 rule: str = LANGUAGE_RULE) -> tuple[ProbeHead, str]:
    """The outer head with ``inner`` for ``language`` (and its file's sha256)."""
    if outer.languages is not None or inner.languages is not None:
        raise SystemExit("compose plain heads (neither may hold heads per language already)")
    about = dict(outer.about, name=name, languages={
        language: {"head": inner.about.get("name"), "rule": rule}})
    composed = replace(outer, about=about, languages=LanguageHeads(rule, {language: inner}))
    return canonical(from_dict(composed.as_dict()))  # read back: checked as any head file


def fold_point(outer: dict[str, Any], inner: dict[str, Any], language: str,
               rule: str = LANGUAGE_RULE) -> dict[str, Any]:
    """The outer point with the inner point's flag rule for claims read as ``language``."""
    if (outer["target_recall"], outer["confidence"]) != (inner["target_recall"],
                                                         inner["confidence"]):
        raise SystemExit("the two heads' points do not pair up (recall and confidence)")
    spec_o, spec_i = parse_spec(outer.get("score")), parse_spec(inner.get("score"))
    if spec_o is None or spec_i is None:
        raise SystemExit("both heads' points must be on the stacked score (stacked-v1)")
    held_o = dict(spec_o.held).get(language)
    held_i = dict(spec_i.held).get(language)
    if held_o is None or held_i is None:
        raise SystemExit(f"both heads' points must hold the strength of claims read as "
                         f"{language!r}")
    shift = logit(outer["threshold"]) - logit(inner["threshold"])
    weights = (spec_i.intercept + spec_i.strength * (held_i - held_o) + shift,
               spec_i.support_logit, spec_i.strength)
    spec = spec_o.weighing(rule, {language: weights})
    statement = (f"{outer['statement']}; claims read as {language!r}: their own head's point, "
                 f"stacked score < {inner['threshold']:g} (set on {inner['n']} gold claims)")
    return dict(outer, score=spec.as_dict(), statement=statement)


def gold_reads(files: list[str], language: str, rule: str = LANGUAGE_RULE) -> int:
    """How many claims of the gold files the rule reads as ``language``, on the claim alone
    or on the claim and its sources' whole text (the probe reads the claim and excerpts of
    them)."""
    read = LANGUAGE_RULES[rule]
    count = 0
    for name in files:
        path = (ROOT / name).resolve()
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            claim = str(item.get("claim") or "")
            sources = [str(s.get("text") or "") for s in item.get("sources") or []]
            count += language in (read(claim), read("\n".join([claim, *sources])))
    return count


def compose_points(outer: dict[str, Any], inner: dict[str, Any], language: str,
                   head_file: str, sha256: str) -> dict[str, Any]:
    pairs = {(p["target_recall"], p["confidence"]): p for p in inner["points"]}
    points = [fold_point(p, pairs[(p["target_recall"], p["confidence"])], language)
              for p in outer["points"]]
    out = {k: v for k, v in outer.items() if k not in ("support_only_points", "file")}
    out.update(head=head_file, head_sha256=sha256, points=points,
               written_at=datetime.now(UTC).isoformat(timespec="seconds"),
               composed={"outer": outer["head"], "outer_sha256": outer["head_sha256"],
                         "inner": inner["head"], "inner_sha256": inner["head_sha256"],
                         "language": language, "rule": LANGUAGE_RULE,
                         "command": "research/compose_language_head.py " + " ".join(sys.argv[1:])})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outer", type=Path, required=True)
    parser.add_argument("--inner", type=Path, required=True)
    parser.add_argument("--language", default="zh")
    parser.add_argument("--name", required=True)
    parser.add_argument("--head", type=Path, required=True, help="the head file to write")
    parser.add_argument("--operating", type=Path, required=True,
                        help="the packaged points to write")
    args = parser.parse_args(argv)
    outer = from_dict(json.loads(args.outer.read_text(encoding="utf-8")))
    inner = from_dict(json.loads(args.inner.read_text(encoding="utf-8")))
    head, sha256 = compose_head(outer, inner, args.language, args.name)
    points = {}
    for which in (args.outer, args.inner):
        path = ROOT / "judge" / "config" / "operating" / which.name
        points[which] = json.loads(path.read_text(encoding="utf-8"))
    read_as = gold_reads(points[args.outer]["gold"]["file"], args.language)
    if read_as:
        raise SystemExit(f"{read_as} claims of the outer point's gold read as "
                         f"{args.language!r}: its figures would not be the outer head's alone")
    args.head.write_text(head.dumps(), encoding="utf-8")
    composed = compose_points(points[args.outer], points[args.inner], args.language,
                              f"builtin:{args.name}", sha256)
    args.operating.write_text(json.dumps(composed, indent=2, ensure_ascii=False) + "\n",
                              encoding="utf-8")
    print(f"wrote {args.head} (sha256 {sha256}) and {args.operating}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

