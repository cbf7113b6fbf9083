"""The real embedded model, end to end, on one short answer (slow: ~1 minute)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from judge.api import judge_answers, judge_file
from judge.config import DEFAULT_MODEL, JudgeConfig
from judge.store import Store
from judge.verdicts import JUDGE_ERROR, LABELS
from tests.conftest import skip_or_fail, write_jsonl

pytestmark = [
    pytest.mark.embedded,
    skip_or_fail(importlib.util.find_spec("xllamacpp") is None,
                 "the 'embedded' extra is not installed", "CLAIM_JUDGE_REQUIRE_EMBEDDED"),
]


def test_embedded_model_judges_a_short_answer(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [{
        "id": "e2e",
        # two facts joined: not atomic, so the model splits it (split_atomic)
        "answer": "HTTP 401 means the client is not authenticated, and 403 means it lacks "
                  "permission [S1].",
        "sources": [{"id": "S1", "text": "HTTP 401 Unauthorized means the request lacks valid "
                                         "authentication credentials. 403 Forbidden means the "
                                         "server refuses to authorize it."}],
        "generator": "openai/gpt-4o-mini",
    }])
    store = Store.open(tmp_path / "e2e.db")
    summary = judge_file(path, config=JudgeConfig.load(), db=store).summary
    assert summary.answers == 1 and summary.claims >= 1
    assert summary.model_calls >= 2  # split + verify, really made
    rows = list(store.verdict_rows())
    assert all(r["label"] in (*LABELS, JUDGE_ERROR) for r in rows)
    # a model that fails on every claim is no judge: at least one real label
    assert any(r["label"] != JUDGE_ERROR for r in rows), [r["error"] for r in rows]
    calls = list(store.db["calls"].rows)
    second_step = {"per_claim": "label", "scores": "score", "probe": "probe"}.get(
        JudgeConfig.load().strategy, "verify")
    assert {c["purpose"] for c in calls} == {"split", second_step}
    assert all(c["model_sent"] == DEFAULT_MODEL for c in calls)
    assert all(c["raw_output"] for c in calls if c["error"] is None)
    again = judge_file(path, config=JudgeConfig.load(), db=store).summary
    assert again.model_calls == 0 and again.claims == summary.claims


def _two_answers() -> list[dict[str, object]]:
    return [
        {"id": "film", "answer": "x", "sources": [
            {"id": "S1", "text": "The film was released in 1999 and directed by Sam Mendes. "
                                 "It won five Oscars, including Best Picture."}],
         "claims": [{"text": "The film was released in 1999."},
                    {"text": "Sam Mendes directed the film."},
                    {"text": "The film won three Oscars."}]},
        {"id": "py", "answer": "x", "sources": [
            {"id": "P1", "text": "Python 3.11 added the tomllib module for parsing TOML."}],
         "claims": [{"text": "Python 3.11 added tomllib."},
                    {"text": "tomllib writes TOML files."}]},
    ]


def test_shared_excerpts_scores_do_not_depend_on_the_order(tmp_path: Path) -> None:
    """excerpts = "answer": the claims of an answer reuse the runtime's KV cache of their
    common prefix, and a claim's scores are the same whatever the runtime ran before."""
    scores = Path(__file__).resolve().parents[2] / "research" / "configs" / \
        "scores_v1_linear_t244_text.toml"
    config = JudgeConfig.load(scores, excerpts="answer")
    answers = _two_answers()

    def scores(order: list[dict[str, object]], name: str) -> dict[str, object]:
        store = Store.open(tmp_path / f"{name}.db")
        results = judge_answers(order, config=config, db=store)
        assert all(v.label in LABELS for r in results for v in r.verdicts)
        calls = {c["id"]: c for c in store.db["calls"].rows}
        assert all(json.loads(c["params"]).get("shared_prefix") is True
                   for c in calls.values()), "multi-claim answers are asked with the flag"
        return {k: json.loads(c["parsed"])["logprobs"] for k, c in calls.items()}

    first = scores(answers, "first")
    # something unflagged in between, then the answers in the other order
    judge_answers([{**_two_answers()[1], "id": "single",
                    "claims": [{"text": "Python 3.11 added tomllib."}]}],
                  config=config, db=Store.open(tmp_path / "single.db"))
    second = scores(answers[::-1], "second")
    assert len(first) == 5 and first == second


def _split_answers() -> list[dict[str, object]]:
    source = {"id": "S1", "text": "The film was released in 1999 and directed by Sam Mendes. "
                                  "It won five Oscars, including Best Picture."}
    return [
        {"id": "film", "answer": "The film came out in 1999, and Sam Mendes directed it. "
                                 "It won three Oscars.", "sources": [source]},
        {"id": "oscars", "answer": "Thanks for asking! The film won five Oscars, including "
                                   "Best Picture.", "sources": [source]},
    ]


def test_a_split_on_cached_instructions_equals_a_cold_one_in_any_order(tmp_path: Path) -> None:
    """reuse_instructions: the split is evaluated on top of its cached fixed instructions
    (judge.models.shared_prefix); its claims are those of a split evaluated from an empty
    cache, whatever ran before."""
    fast = JudgeConfig.load()
    assert fast.reuse_instructions and fast.split_atomic
    cold = fast.model_copy(update={"reuse_instructions": False})

    def claims(config: JudgeConfig, order: list[dict[str, object]], name: str
               ) -> dict[str, list[str]]:
        store = Store.open(tmp_path / f"{name}.db")
        judge_answers(order, config=config, db=store)
        splits = [c for c in store.db["calls"].rows if c["purpose"] == "split"]
        assert len(splits) == 2
        flags = {json.loads(c["params"]).get("shared_prefix") for c in splits}
        assert flags == ({"instructions"} if config.reuse_instructions else {None})
        out: dict[str, list[str]] = {}
        for row in store.verdict_rows():
            out.setdefault(row["answer_id"], []).append(row["claim"])
        return out

    reference = claims(cold, _split_answers(), "cold")
    assert claims(fast, _split_answers(), "warm") == reference
    # an unflagged split in between (the slot then holds another prompt), then the other
    # order
    judge_answers([{"id": "between", "answer": "Sam Mendes, who directed it, was born in "
                                               "1965.", "sources": _split_answers()[0]["sources"]}],
                  config=cold, db=Store.open(tmp_path / "between.db"))
    assert claims(fast, _split_answers()[::-1], "reversed") == reference


def test_only_the_sentences_that_are_not_atomic_are_split_by_the_real_model(
    tmp_path: Path,
) -> None:
    """The default (split_claims v3, atomic/v2): the atomic first sentence is a claim as it
    stands and only the second, which refers to it and joins two facts, is generated; every
    sentence is covered and none of the model's claims fails its checks."""
    source = {"id": "S1", "text": "The Eiffel Tower is in Paris. It was completed in 1889 and "
                                  "is 330 metres tall."}
    store = Store.open(tmp_path / "v3.db")
    config = JudgeConfig.load()
    assert config.prompts["split_claims"] == "v3" and config.atomic_rule
    judge_answers([{"id": "tower", "answer": "The Eiffel Tower is in Paris. It was completed "
                                             "in 1889 and it is 330 metres tall.",
                    "sources": [source]}], config=config, db=store)
    (split,) = [c for c in store.db["calls"].rows if c["purpose"] == "split"]
    user = json.loads(split["messages"])[-1]["content"]
    assert "sentence=2" in user and "sentence=1" not in user and " context\n" in user
    rows = list(store.verdict_rows())
    assert (rows[0]["claim"], rows[0]["origin"]) == ("The Eiffel Tower is in Paris.", "sentence")
    later = rows[1:]
    assert later and all(r["origin"] == "split" and r["label"] != JUDGE_ERROR for r in later)
    assert any("1889" in r["claim"] for r in later) and any("330" in r["claim"] for r in later)


def test_a_split_on_restored_instructions_equals_one_on_evaluated_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """judge.models.prefix_files: the first runtime evaluates the split's instructions, saves
    their state and records its sha256 in the store; a new runtime (as in a new process) on a
    store holding that record restores it instead of evaluating, and the split's output is
    the same to the byte. A state edited since (64 bits of its numbers flipped, a marker
    beside it that vouches for the edit) is not restored but deleted, the instructions are
    evaluated again, and no claim, label or score changes."""
    from judge.models import embedded, prefix_files

    folder = tmp_path / "states"
    monkeypatch.setenv(prefix_files.ENV_PREFIX_FILES, str(folder))
    restored: list[bool] = []
    original = prefix_files.PrefixFiles.restore

    def spy(self: prefix_files.PrefixFiles, slot: int, text: str) -> bool:
        restored.append(original(self, slot, text))
        return restored[-1]

    monkeypatch.setattr(prefix_files.PrefixFiles, "restore", spy)
    outputs = []
    for name in ("evaluated", "restored", "edited"):
        embedded.unload()  # a new runtime, as in a new process
        store = Store.open(tmp_path / f"{name}.db")
        if name != "evaluated":  # a store that recorded the state (a fresh one, so that the
            # calls are made again): as the same judge.db on a user's next run
            first = Store.open(tmp_path / "evaluated.db")
            store.db["prefix_states"].insert_all(first.db["prefix_states"].rows)
            first.close()
        if name == "edited":
            (state,) = folder.glob("*.bin")
            clean = state.read_bytes()
            with state.open("r+b") as fh:  # 64 bits in the middle of the KV numbers
                fh.seek(len(clean) // 2)
                fh.write(bytes(b ^ 0xFF for b in clean[len(clean) // 2:][:8]))
            state.with_name(state.name + ".sha256").write_text(
                f"{hashlib.sha256(state.read_bytes()).hexdigest()}  {state.name}\n")
        judge_answers(_split_answers()[:1], config=JudgeConfig.load(), db=store)
        (split,) = [c for c in store.db["calls"].rows if c["purpose"] == "split"]
        outputs.append((split["raw_output"], [(r["claim"], r["label"], r["strength"])
                                              for r in store.verdict_rows()]))
        if name == "evaluated":
            assert restored == [False]
            assert [p.suffix for p in folder.iterdir()] == [".bin"]  # nothing beside it
        recorded = store.rows("select name, sha256 from prefix_states")
        assert [(r["name"], r["sha256"]) for r in recorded] == [
            (p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in folder.glob("*.bin")]
        store.close()
    embedded.unload()
    assert restored == [False, True, False]  # the edited state was not restored ...
    assert outputs[0] == outputs[1] == outputs[2]  # ... and changed nothing
    assert not list(folder.glob("*.sha256"))  # deleted with it; saved anew, recorded
