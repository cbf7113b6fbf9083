"""``judge drift`` on a store with two judge versions (two scripted fake models that disagree
on some claims): flip table, tests, flipped claims with both rationales, running the missing
version on the input, gold side by side, and the ``--fail-on`` exit code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from calibration import DriftReport
from judge.api import judge_file
from judge.cli import _register, app
from judge.config import JudgeConfig
from judge.store import Store
from tests.conftest import write_jsonl
from tests.fakes import FakeLLM, claim_texts, install, rule_responder

SRC = {"id": "S1", "text": "401 means unauthenticated. 403 means forbidden. "
                           "Tokens expire after one hour."}
CLAIMS = {
    "a1": ["401 means unauthenticated.", "403 means forbidden."],
    "a2": ["Tokens expire after one hour.", "Tokens can be renewed."],
    "a3": ["404 means gone.", "403 means forbidden."],
}


def records() -> list[dict[str, Any]]:
    return [{"id": aid, "answer": " ".join(texts), "sources": [SRC],
             "claims": [{"text": t, "citations": ["S1"]} for t in texts]}
            for aid, texts in CLAIMS.items()]


def responder_b(schema: str, messages: list[dict[str, Any]]) -> str:
    """Version B: strict about 'forbidden' (contradicted), calls 'renewed' an opinion."""
    out = json.loads(rule_responder(schema, messages))
    claims = dict(_claims(messages[-1]["content"]))
    for j in out["judgements"]:
        text = claims[j["claim"]]
        if "forbidden" in text:
            j.update(label="contradicted", subtype="numeric_or_version_error",
                     rationale="B: forbidden is wrong", evidence=[])
        elif "renewed" in text:
            j.update(label="not_verifiable", subtype="opinion", rationale="B: opinion")
    return json.dumps(out)


def _claims(user: str) -> list[tuple[int, str]]:
    return claim_texts(user)


class TwoJudges(FakeLLM):
    def _reply(self, model: str, messages: list, optional_params: dict) -> Any:
        self.responder = responder_b if "judge-b" in model else rule_responder
        return super()._reply(model, messages, optional_params)


@pytest.fixture
def two_judges() -> TwoJudges:
    return install(TwoJudges())  # type: ignore[return-value]


def invoke(*args: str) -> Any:
    _register()
    return CliRunner().invoke(app, list(args))


def judge(path: Path, store: Store, model: str) -> str:
    config = JudgeConfig(model=model, retries=0)
    return judge_file(path, config=config, db=store).summary.judge_version


@pytest.fixture
def two_versions(tmp_path: Path, store: Store, two_judges: TwoJudges) -> tuple[str, str, Path]:
    full = write_jsonl(tmp_path / "answers.jsonl", records())
    first = write_jsonl(tmp_path / "first.jsonl", records()[:1])
    a = judge(full, store, "fake/judge-a")
    b = judge(first, store, "fake/judge-b")  # B has judged only the first answer so far
    return a, b, full


def test_drift_runs_the_missing_claims_and_counts_flips(
    two_versions: tuple[str, str, Path], store: Store, two_judges: TwoJudges, tmp_path: Path
) -> None:
    a, b, full = two_versions
    db = str(store.path)
    partial = invoke("drift", "--db", db, "--from", a, "--to", b, "--json")
    assert partial.exit_code == 0, partial.output
    assert json.loads(partial.stdout)["n"] == 2 and len(json.loads(partial.stdout)["only_a"]) == 4

    calls_before = len(two_judges.calls)
    html = tmp_path / "drift.html"
    result = invoke("drift", "--db", db, "--from", a[:14], "--to", b, "--input", str(full),
                    "--json", "--html", str(html))
    assert result.exit_code == 0, result.output
    assert len(two_judges.calls) == calls_before + 2   # B judged answers a2 and a3 only
    data = json.loads(result.stdout)
    assert data["n"] == 6 and data["only_a"] == [] and data["only_b"] == []
    flips = data["flips"]
    # A: supported x4 (verbatim), not_in_source x2 ("renewed", "404")
    assert flips["supported"]["contradicted"] == 2          # the two "forbidden" claims
    assert flips["not_in_source"]["not_verifiable"] == 1    # "renewed"
    assert flips["supported"]["supported"] == 2 and flips["not_in_source"]["not_in_source"] == 1
    assert sum(sum(row.values()) for row in flips.values()) == 6
    assert len(data["flipped"]) == 3 and data["agreement"] == pytest.approx(0.5)
    for key in ("kappa", "mcnemar_p", "stuart_maxwell_p"):
        assert key in data
    assert set(data["kappa"]) >= {"value", "ci_low", "ci_high"}
    assert 0 < data["mcnemar_p"] <= 1
    flipped = {f["claim"]: f for f in data["flipped_claims"]}
    assert flipped["403 means forbidden."]["rationale_b"] == "B: forbidden is wrong"
    assert flipped["403 means forbidden."]["rationale_a"] == "stated verbatim"
    report = DriftReport.model_validate(data["report"])
    assert report.model_dump(mode="json") == data["report"]
    page = html.read_text(encoding="utf-8")
    assert 'id="flips"' in page and "B: forbidden is wrong" in page

    again = invoke("drift", "--db", db, "--from", a, "--to", b, "--input", str(full))
    assert again.exit_code == 0 and len(two_judges.calls) == calls_before + 2
    assert "Flip table" in again.stdout and "B: forbidden is wrong" in again.stdout


def test_drift_fail_on_exit_code(two_versions: tuple[str, str, Path], store: Store) -> None:
    a, b, full = two_versions
    args = ["drift", "--db", str(store.path), "--from", a, "--to", b, "--input", str(full)]
    flipping = invoke(*args, "--fail-on", "flip_rate_above=0.2")
    assert flipping.exit_code == 3 and "flip_rate_above" in flipping.output
    fine = invoke(*args, "--fail-on", "flip_rate_above=0.6")
    assert fine.exit_code == 0, fine.output
    needs_gold = invoke(*args, "--fail-on", "lenient_rate_increase=0.1")
    assert needs_gold.exit_code == 3 and "cannot be checked" in needs_gold.output
    unknown = invoke(*args, "--fail-on", "accuracy_below=0.5")   # a calibration key
    assert unknown.exit_code == 1 and "unknown drift threshold" in unknown.output
    same = invoke("drift", "--db", str(store.path), "--from", a, "--to", a)
    assert same.exit_code == 1
    missing = invoke("drift", "--db", str(store.path), "--from", a, "--to", "nope@123")
    assert missing.exit_code == 1 and "not in the store" in missing.output
    by_hash = invoke("drift", "--db", str(store.path), "--from", a.split("@")[1][:8],
                     "--to", b.split("@")[1], "--json")
    assert by_hash.exit_code == 0, by_hash.output  # the short hash shown in reports works


def test_drift_with_gold_side_by_side(
    two_versions: tuple[str, str, Path], store: Store, tmp_path: Path, two_judges: TwoJudges
) -> None:
    a, b, _ = two_versions
    human = "human:alice"
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"id": "g1", "claim": "403 means forbidden.", "sources": [SRC], "label": "supported",
         "annotator": human, "dataset": "d"},
        {"id": "g2", "claim": "Tokens can be renewed.", "sources": [SRC],
         "label": "not_in_source", "subtype": "unsupported_addition", "annotator": human,
         "dataset": "d"},
        {"id": "g3", "claim": "Tokens expire after one hour.", "sources": [SRC],
         "label": "supported", "annotator": human, "dataset": "d"},
    ])
    result = invoke("drift", "--db", str(store.path), "--from", a, "--to", b, "--gold",
                    str(gold), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # both versions judged the gold claims as answers of their own (run now), then compared
    assert data["n"] == 3
    assert data["flips"]["supported"]["contradicted"] == 1
    assert data["flips"]["not_in_source"]["not_verifiable"] == 1
    assert data["gold"]["away_from_gold"] == 2 and data["gold"]["toward_gold"] == 0
    cal = data["calibration"]
    assert cal["a"]["n"] == cal["b"]["n"] == 3
    assert cal["a"]["accuracy"] == pytest.approx(1.0)
    assert cal["b"]["accuracy"] == pytest.approx(1 / 3)
    assert cal["b"]["strict_rate"]["value"] == pytest.approx(0.5)
    gated = invoke("drift", "--db", str(store.path), "--from", a, "--to", b, "--gold",
                   str(gold), "--fail-on", "accuracy_drop=0.1")
    assert gated.exit_code == 3 and "accuracy_drop" in gated.output
    text = invoke("drift", "--db", str(store.path), "--from", a, "--to", b, "--gold", str(gold))
    assert "against gold" in text.stdout and "away from gold: 2" in text.stdout
    # the first screen answers "which version agrees more with people", with the figures
    # (three claims: the interval of the difference includes 0)
    verdict = ("B agrees with people about as much as A (the interval of the difference "
               "includes 0): accuracy 100.0% \u2192 33.3%, \u221266.7 [")
    assert verdict in " ".join(text.stdout.splitlines()[:3])
    assert "on 3 gold claims; 0 flips toward gold, 2 away." in text.stdout
    assert data["verdict"].startswith(verdict)
    # every flip is listed up to --show, then a count of the rest
    assert "changed label from A to B (2)" in text.stdout
    one = invoke("drift", "--db", str(store.path), "--from", a, "--to", b, "--gold", str(gold),
                 "--show", "1")
    assert "(2, the first 1)" in one.stdout and "1 more: --show 2 lists them all" in one.stdout
    assert one.stdout.count("claim: ") == 1 and text.stdout.count("claim: ") == 2
    page = tmp_path / "drift.html"
    invoke("drift", "--db", str(store.path), "--from", a, "--to", b, "--gold", str(gold),
           "--html", str(page))
    html = page.read_text(encoding="utf-8")
    assert html.index(verdict) < html.index('<nav class="contents">')  # before the contents
    entries = re.findall(r'<li><a href="#([^"]+)">([^<]+)</a>', html)
    titles = [t for _, t in entries]
    assert len(set(titles)) == len(titles) and len({i for i, _ in entries}) == len(entries)
    assert all(re.search(r"\b(A|B)\b", t) for t in titles), titles  # each names its version
    assert "Version A: claims it got wrong (0)" in titles
    assert "Version B: claims it got wrong (2)" in titles
