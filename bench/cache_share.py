"""How much of each strategy's prompt tokens a provider's prompt cache would serve (issue 50),
on the 20 peer answers against the mock (``make bench``, section ``cache``; or alone:
``python bench/cache_share.py``).

The mock logs every request whole (``bench/peermock.py``); each request is read back as the
token sequence a provider caches, in the order the mock received it: the JSON schema sent in
``response_format`` first (OpenAI puts a structured output's schema before the system
message), then every message (its framing, role and content), counted with cl100k_base as the
mock counts them (the sums are checked against the mock's own counts). The provider is modelled
on OpenAI's documented rule: a request is served from the cache up to the longest beginning it
shares with an earlier request of the run, in blocks of 128 tokens, and only when at least
1,024 tokens match (below that, nothing). The runs go one answer at a time, so every earlier
request is in the cache when the next is sent (a provider's cache also expires and is spread
over machines: the figures are what the layout allows, an upper bound). Beside it, the share
of tokens that repeat an earlier request's beginning with no minimum: what the layout shares,
whether or not a provider would serve it.

Prints, per strategy: calls and prompt tokens per answer (and the ratio to RAGAS's recorded
2,236), the tokens every call of the strategy begins with (the fixed prefix: schema and
instructions), the share a 1,024-token-minimum cache would serve, the share shared with no
minimum, and what the prompt tokens would cost at gpt-4.1-mini's prices with that cache
against without it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

from peermock import Mock, tiktoken_cache  # noqa: E402

import bench  # noqa: E402

#: OpenAI's rule: no cache hit below this many matching tokens, then hits in blocks of this
MINIMUM = 1024
BLOCK = 128
#: RAGAS 0.4.3's recorded prompt tokens per answer on the same inputs and mock
RAGAS_PROMPT = bench.PEERS["RAGAS 0.4.3"]["prompt"]
#: priced with this model's input and cache-read prices (litellm's cost map)
PRICED = "gpt-4.1-mini"


def strategies() -> dict[str, tuple[str, dict[str, Any]]]:
    """Name -> (inputs: "free" or "given", the config settings)."""
    from judge.config import HOSTED_PROFILE

    hosted = dict(HOSTED_PROFILE)
    return {
        "split + verify (library default, v2)": ("free", {}),
        "split + verify v3": ("free", {"prompts": {"split_claims": "v2",
                                                  "verify_claims": "v3"}}),
        "one call, judge_answer v1": ("free", {"one_call": True}),
        "hosted default (one call v2, verify v3)": ("free", hosted),
        "given claims, verify v2": ("given", {}),
        "given claims, hosted default (verify v3)": ("given", hosted),
        "per_claim, label_claim v2": ("free", {"strategy": "per_claim", "prompts": {
            "split_claims": "v2", "label_claim": "v2"}}),
    }


def encoder() -> Any:
    cache = tiktoken_cache()
    if cache and "TIKTOKEN_CACHE_DIR" not in os.environ:
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


#: stand-ins for a message's framing tokens (never a cl100k id), as the mock counts them
FRAME, PRIME = -1, -2


def sequence(request: dict[str, Any], enc: Any) -> list[int]:
    """A logged request as the tokens a provider caches: the schema, then each message."""
    def tokens(text: str) -> list[int]:
        return list(enc.encode(text, disallowed_special=()))

    seq: list[int] = []
    fmt = request.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        seq += tokens(json.dumps(fmt.get("json_schema", {})))
    if request.get("tools"):
        seq += tokens(json.dumps(request["tools"]))
    for message in request.get("messages") or []:
        seq += [FRAME] * 3
        for key, value in message.items():
            if value is not None:
                seq += tokens(_text(value) if key == "content" else
                              value if isinstance(value, str) else json.dumps(value))
    return seq + [PRIME] * 3


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def simulate(requests: list[dict[str, Any]], enc: Any) -> dict[str, Any]:
    """Prompt tokens, tokens a 1,024-minimum cache serves, tokens shared with no minimum, and
    the fixed prefix (tokens every request of one schema begins with), over ``requests``."""
    seqs = [sequence(r, enc) for r in requests]
    prompt = cached = shared = 0
    for i, seq in enumerate(seqs):
        match = max((common_prefix(seq, earlier) for earlier in seqs[:i]), default=0)
        prompt += len(seq)
        shared += match
        if match >= MINIMUM:
            cached += match // BLOCK * BLOCK
    by_schema: dict[str, list[list[int]]] = {}
    for request, seq in zip(requests, seqs, strict=True):
        fmt = request.get("response_format") or {}
        by_schema.setdefault(str((fmt.get("json_schema") or {}).get("name")), []).append(seq)
    fixed = {name: min(common_prefix(s[0], other) for other in s[1:])
             for name, s in by_schema.items() if len(s) > 1}
    counted = sum(r["usage"]["prompt_tokens"] for r in requests)
    return {"prompt": prompt, "cached": cached, "shared": shared, "counted": counted,
            "fixed": fixed}


def read_log(log: Path, label: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in rows if r.get("label") == label and r.get("endpoint") ==
            "chat.completions"]


def prices() -> tuple[float, float] | None:
    """(input, cache-read) price per token of :data:`PRICED`, from litellm's cost map."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    info = litellm.model_cost.get(PRICED) or {}
    if "input_cost_per_token" not in info or "cache_read_input_token_cost" not in info:
        return None
    return float(info["input_cost_per_token"]), float(info["cache_read_input_token_cost"])


def bench_cache(mock: Mock, peer: Path, tmp: Path, figures: dict[str, Any]) -> None:
    free = bench.write_jsonl(bench.peer_records(peer), tmp, "cache-free.jsonl")
    given = bench.write_jsonl(bench.peer_records(peer, given=True), tmp, "cache-given.jsonl")
    enc = encoder()
    price = prices()
    print("\n== prompt caches: 20 peer answers, one at a time; a provider that serves a "
          f"shared beginning of >= {MINIMUM} tokens in blocks of {BLOCK} ==")
    print(f"{'strategy':<44}{'calls/ans':>10}{'prompt/ans':>11}{'x RAGAS':>8}"
          f"{'fixed prefix':>14}{'cached':>8}{'shared':>8}{'price':>7}")
    out: dict[str, Any] = {}
    for k, (name, (inputs, settings)) in enumerate(strategies().items()):
        label = f"cache{k}"
        r = bench.run(mock, free if inputs == "free" else given, tmp / f"{label}.db", label,
                      **settings)
        requests = read_log(mock.log, label)
        sim = simulate(requests, enc)
        if sim["counted"] != sim["prompt"]:
            print(f"  (warning: {name}: {sim['prompt']} tokens read back, the mock counted "
                  f"{sim['counted']})")
        n = r["answers"]
        share = sim["cached"] / sim["prompt"] if sim["prompt"] else 0.0
        shared = sim["shared"] / sim["prompt"] if sim["prompt"] else 0.0
        fixed = "/".join(str(v) for v in sim["fixed"].values()) or "-"
        cost = "-" if price is None else f"{1 - share * (1 - price[1] / price[0]):.2f}"
        print(f"{name:<44}{bench.per(len(requests), n):>10.2f}"
              f"{bench.per(sim['prompt'], n):>11.0f}"
              f"{bench.per(sim['prompt'], n) / RAGAS_PROMPT:>8.2f}{fixed:>14}"
              f"{share:>8.0%}{shared:>8.0%}{cost:>7}")
        out[name] = {**sim, "answers": n, "calls": len(requests), "cached_share": share,
                     "shared_share": shared}
    print("fixed prefix: the tokens every call of one schema begins with (split/verify: each; "
          "a schema called once, e.g. the one long answer's fallback, left out); cached: the "
          f"share a >= {MINIMUM}-token cache serves; shared: the share that repeats an earlier "
          f"call's beginning, with no minimum; price: the prompt tokens' cost with the cache over "
          f"without it, at {PRICED}'s input and cache-read prices")
    figures["cache"] = out


def main() -> None:
    shared = bench.shared_bench()
    if shared is None:
        raise SystemExit("shared/bench not found (set CLAIM_JUDGE_BENCH)")
    sys.path.append(str(shared / "peers"))
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        with Mock(shared / "peers", tmp / "mock.jsonl") as mock:
            bench_cache(mock, shared / "peer_inputs.jsonl", tmp, figures)


if __name__ == "__main__":
    main()
