"""A head with a head per language (``LanguageHeads``): a claim the probe reads as Chinese is
decided, refused and scored by the Chinese head, every other claim by the outer head; the
whole is one file, so one sha256 and one judge version; a head per language that reads other
vectors, or a file an older reader would misread, is refused before any call; stored vectors
replay with no call; ``judge fit`` keeps the heads per language."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from judge.api import judge_file
from judge.decide.probe_head import (
    FORMAT,
    FORMAT_LANGUAGES,
    LanguageHeads,
    LanguageShift,
    ProbeHead,
    ProbeHeadError,
    Reach,
    canonical,
    from_dict,
)
from judge.fitting.probe import fit_probe_rule
from judge.fitting.run import version_of
from judge.language import LANGUAGE_RULE
from judge.runs.replay import replay_run
from judge.store import Store
from judge.verdicts import LABELS
from tests.conftest import write_jsonl
from tests.decide.test_probe import probe_config, toy_head, write_head
from tests.fakes import FakeLLM

ZH_SOURCE = {"id": "zh", "text": "Python 3.11 新增了 tomllib 模組，用來讀取 TOML 檔案。"}
EN_SOURCE = {"id": "en", "text": "Python 3.11 added the tomllib module. It reads TOML files."}
ZH_CLAIM = "Python 3.11 新增了 tomllib 模組"
EN_CLAIM = "Python 3.11 added the tomllib module."
ZH_TEXT = "這是一個中文句子。"


def turned_head() -> ProbeHead:
    """Reads the same 3-number vectors as :func:`toy_head` the other way: component 0 (the
    claim found in its evidence) -> contradicted, 1 -> supported."""
    coef = np.zeros((4, 3))
    coef[LABELS.index("contradicted"), 0] = 6.0
    coef[LABELS.index("supported"), 1] = 6.0
    coef[LABELS.index("not_verifiable"), 2] = 6.0
    return ProbeHead(tuple(LABELS), np.zeros(3), np.ones(3), coef, np.zeros(4),
                     {"prompt": "probe_claim/v1", "name": "turned"})


def composed(inner: ProbeHead | None = None) -> ProbeHead:
    outer = toy_head({"name": "outer"})
    return replace(outer, languages=LanguageHeads(LANGUAGE_RULE, {"zh": inner or turned_head()}))


def test_a_claim_read_as_chinese_gets_its_head_and_others_the_outer_one() -> None:
    head, outer, inner = composed(), toy_head(), turned_head()
    x = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 1.0, 0]])
    texts = ["Python added tomllib.", ZH_TEXT, ZH_TEXT]
    got = head.probabilities(x, texts)
    assert np.allclose(got[0], outer.probabilities(x[:1])[0])
    assert np.allclose(got[1:], inner.probabilities(x[1:]))
    assert LABELS[int(np.argmax(got[0]))] == "supported"
    assert LABELS[int(np.argmax(got[1]))] == "contradicted"
    with pytest.raises(ProbeHeadError, match="text the probe read"):
        head.probabilities(x)  # which head decides needs the text


def test_each_claim_is_refused_by_the_reach_of_its_own_head() -> None:
    head = replace(composed(replace(turned_head(), fitted_range=Reach(50.0, 50.0))),
                   fitted_range=Reach(1.0, 1.0))
    far = np.array([20.0, 0.0, 0.0])  # beyond 4 x the outer reach, within the inner one
    assert "far outside" in (head.refusal(far, "Python added tomllib.") or "")
    assert head.refusal(far, ZH_TEXT) is None
    assert head.decider(ZH_TEXT).about["name"] == "turned"
    assert head.decider("English").languages is None


def test_the_file_round_trips_in_its_own_format_and_plain_heads_are_unchanged() -> None:
    plain = toy_head()
    assert json.loads(plain.dumps())["format"] == FORMAT  # so pinned sha256s keep matching
    body = json.loads(composed().dumps())
    assert body["format"] == FORMAT_LANGUAGES
    again = from_dict(body)
    assert again.dumps() == composed().dumps() and again.languages is not None
    assert canonical(again)[1] != canonical(plain)[1]
    # an older reader refuses the format rather than deciding Chinese claims with the outer
    # head; a file that claims one form and holds the other is refused
    with pytest.raises(ProbeHeadError, match="needs heads per language"):
        from_dict({k: v for k, v in body.items() if k != "languages"})
    with pytest.raises(ProbeHeadError, match="cannot hold"):
        from_dict(dict(body, format=FORMAT))


@pytest.mark.parametrize(("change", "message"), [
    (lambda h: replace(h, about=dict(h.about, prompt="probe_claim/v2")), "prompt differ"),
    (lambda h: replace(h, about=dict(h.about, layers=16)), "layers differ"),
    (lambda h: replace(h, labels=tuple(reversed(h.labels))), "labels in its outer"),
    (lambda h: composed(), "plain head"),
])
def test_a_head_per_language_that_reads_other_vectors_is_refused(change, message) -> None:
    body = json.loads(composed(change(turned_head())).dumps())
    with pytest.raises(ProbeHeadError, match=message):
        from_dict(body)


def test_an_unknown_language_rule_is_refused() -> None:
    body = json.loads(composed().dumps())
    body["languages"]["rule"] = "han-share-half/v9"
    with pytest.raises(ProbeHeadError, match="does not know"):
        from_dict(body)


def batch(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [
        {"id": "en", "sources": [EN_SOURCE], "answer": EN_CLAIM, "generator": "other/model",
         "claims": [{"text": EN_CLAIM, "citations": ["en"]}]},
        {"id": "zh", "sources": [ZH_SOURCE], "answer": ZH_CLAIM, "generator": "other/model",
         "claims": [{"text": ZH_CLAIM, "citations": ["zh"]}]}])


def test_judged_end_to_end_replayed_with_no_call_and_part_of_the_version(
        tmp_path: Path, store: Store, fake_llm: FakeLLM) -> None:
    config = probe_config(tmp_path, probe_head=write_head(tmp_path, composed(), "zh.json"))
    plain = probe_config(tmp_path, probe_head=write_head(tmp_path, toy_head({"name": "outer"}),
                                                         "plain.json"))
    assert version_of(config) != version_of(plain)
    summary = judge_file(batch(tmp_path), config=config, db=store).summary
    rows = {r["claim"]: r for r in store.verdict_rows()}
    # both claims are found in their evidence (vector [1, 0, 0]): the outer head says
    # supported, the Chinese claim's head contradicted
    assert rows[EN_CLAIM]["label"] == "supported"
    assert rows[ZH_CLAIM]["label"] == "contradicted" and rows[ZH_CLAIM]["support"] < 0.1
    fake_llm.calls.clear()
    report = replay_run(store, summary.run_id)
    assert report.clean and report.claims == 2 and not fake_llm.calls


def test_a_head_per_language_for_other_vectors_is_refused_before_any_call(
        tmp_path: Path, store: Store, fake_llm: FakeLLM) -> None:
    body = json.loads(composed().dumps())
    body["languages"]["heads"]["zh"]["about"]["layers"] = 16
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    import hashlib

    ref = {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    with pytest.raises(ProbeHeadError, match="layers differ"):
        judge_file(batch(tmp_path), config=probe_config(tmp_path, probe_head=ref), db=store)
    assert not fake_llm.calls


def test_a_fit_keeps_the_heads_per_language() -> None:
    rng = np.random.default_rng(0)
    y = np.arange(60) % 4
    x = rng.normal(size=(60, 3)) + np.eye(4)[y][:, :3] * 3
    kept = composed().languages
    folds = [k % 5 for k in range(60)]
    fitted = fit_probe_rule(x, y, folds, about={"prompt": "probe_claim/v1"}, languages=kept,
                            lambdas=[1.0])
    assert fitted.model.languages is not None
    assert fitted.model.languages.heads["zh"].dumps() == turned_head().dumps()
    assert json.loads(fitted.model.dumps())["format"] == FORMAT_LANGUAGES
    # fitted on vectors read otherwise than the kept heads read theirs: refused
    with pytest.raises(ProbeHeadError, match="prompt differ"):
        fit_probe_rule(x, y, folds, about={"prompt": "probe_claim/v2"}, languages=kept,
                       lambdas=[1.0])


def test_a_head_judge_fit_wrote_composes_with_a_packaged_one_of_the_same_model() -> None:
    """``judge fit`` records how the vectors were read, not the model: the model keys must
    agree only where both heads record them."""
    inner = replace(turned_head(), about=dict(turned_head().about, gguf_sha256="a" * 64))
    assert from_dict(json.loads(composed(inner).dumps())).languages is not None
    outer = replace(toy_head(), about=dict(toy_head().about, gguf_sha256="b" * 64))
    body = json.loads(replace(outer, languages=LanguageHeads(LANGUAGE_RULE, {"zh": inner}))
                      .dumps())
    with pytest.raises(ProbeHeadError, match="gguf_sha256 differ"):
        from_dict(body)


def test_the_runtime_check_reads_each_head(tmp_path: Path) -> None:
    from judge.config import JudgeConfig
    from judge.decide.probe import check_runtime

    inner = replace(turned_head(), about=dict(turned_head().about, gguf_sha256="a" * 64))
    head = composed(inner)
    config = JudgeConfig(model="embedded/qwen2.5-coder-1.5b-instruct-q4_k_m", strategy="probe",
                         prompts={"split_claims": "v1", "probe_claim": "v1"},
                         probe_head=write_head(tmp_path, head))
    with pytest.raises(ProbeHeadError, match="hidden states of the model with sha256 aaaa"):
        check_runtime(config, head)  # the outer head records no model; its Chinese one does
    check_runtime(config, composed())  # neither records one: nothing to compare


class Read:
    def __init__(self, read: str) -> None:
        self.read = read


def test_a_fit_takes_the_place_of_the_head_that_decides_most_of_its_claims(
        tmp_path: Path) -> None:
    from judge.fitting.rules import current_rule, kept

    shift = LanguageShift(LANGUAGE_RULE, {"zh": np.array([1.0, 0.0, 0.0])})
    inner = replace(turned_head(), shift=shift)
    config = probe_config(tmp_path, probe_head=write_head(tmp_path, composed(inner), "zh.json"))
    chinese = [Read(ZH_TEXT)] * 3 + [Read("English claim.")] * 2
    english = [Read(ZH_TEXT)] * 2 + [Read("English claim.")] * 3
    on_chinese = current_rule(config, None, chinese)  # type: ignore[arg-type]
    assert on_chinese.dumps() == inner.dumps()
    assert kept(on_chinese)[1] is None
    assert kept(on_chinese)[0] is not None
    on_english = current_rule(config, None, english)  # type: ignore[arg-type]
    assert on_english.languages is not None
    assert kept(on_english)[1] is not None
    assert kept(on_english)[0] is None
    assert current_rule(config, None).languages is not None  # no items: the head itself
