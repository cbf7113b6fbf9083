"""The language the probe reads a claim in (``judge.language.read_language``) and the head's
language offset (``LanguageShift``): deterministic, part of the head file (so of the judge
version), applied wherever a vector becomes a score, kept by a fit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from judge.decide.probe import probe_text
from judge.decide.probe_head import LanguageShift, ProbeHead, ProbeHeadError, from_dict
from judge.fitting.probe import fit_probe_rule, predict_head
from judge.fitting.run import version_of
from judge.language import LANGUAGE_RULE, han_share, read_language
from judge.verdicts import LABELS, Evidence
from tests.decide.test_probe import probe_config, toy_head, write_head

# the design documents' own sentences (shared/seeds/, seed 000), in both scripts
SEED_HANT = "所以實際是六個案例各三次，共 18 次。"
SEED_HANS = "所以实际是六个案例各三次，共 18 次。"
SEED_MIXED = ("生成條件為 gemini-3.8-flash、temperature 1.0、max_output_tokens 8192，"
              "採 API schema，沒有修正迴圈。")
SEED_QUOTES = ("現在可以問得更具體：模型說「高於個人 baseline」時，引用的是哪個指標、哪一天、"
               "哪個 baseline 與偏離判定？")


@pytest.mark.parametrize("text", [SEED_HANT, SEED_HANS, SEED_MIXED, SEED_QUOTES,
                                  "系統在 CI 中用 pytest 檢查", "用 Python"])
def test_chinese_in_either_script_and_chinese_with_english_terms_read_as_chinese(
        text: str) -> None:
    assert read_language(text) == "zh"


@pytest.mark.parametrize("text", [
    "Python 3.11 added the tomllib module.",
    "the notes 候選筆記 list three options",  # 4 Han characters of 9 units
    "ECharts Java 是 a library for data visualization.",
    "株式会社ローソンはコンビニエンスストアです",  # Japanese: kana count against
    "18 / 20 = 0.9 ...", "",
])
def test_english_japanese_and_english_with_a_chinese_term_do_not(text: str) -> None:
    assert read_language(text) is None


def test_the_rule_counts_units_and_a_tie_is_chinese() -> None:
    assert han_share("用 Python") == 0.5 and read_language("用 Python") == "zh"
    assert han_share("用 Python 寫") == 2 / 3
    assert han_share("3.11, 2026-12-03") is None
    # the same text in the other script reads the same
    assert han_share(SEED_HANT) == han_share(SEED_HANS) == 1.0


def test_the_probe_reads_the_claim_with_its_excerpts() -> None:
    excerpt = Evidence(source_id="s", quote="The run made 18 requests: six cases, three each.")
    assert read_language(probe_text(SEED_HANT, [])) == "zh"
    # a short Chinese claim on a long English excerpt is read as English, and back
    assert read_language(probe_text("共 18 次。", [excerpt])) is None
    assert read_language(probe_text("It made 18 requests.", [Evidence(
        source_id="s", quote=SEED_HANT + SEED_QUOTES)])) == "zh"


def shifted_head(offset: list[float], rule: str = LANGUAGE_RULE) -> ProbeHead:
    head = toy_head()
    shift = LanguageShift(rule, {"zh": np.asarray(offset, dtype=np.float64)},
                          {"from": "test"})
    return ProbeHead(head.labels, head.mean, head.scale, head.coef, head.intercept,
                     head.about, shift)


def test_a_head_file_round_trips_its_shift_and_old_heads_are_unchanged() -> None:
    plain = toy_head()
    assert "shift" not in plain.as_dict()
    assert from_dict(json.loads(plain.dumps())).dumps() == plain.dumps()
    head = shifted_head([1.0, -1.0, 0.0])
    again = from_dict(json.loads(head.dumps()))
    assert again.dumps() == head.dumps() and again.shift is not None
    assert again.shift.rule == LANGUAGE_RULE and again.shift.about == {"from": "test"}
    assert np.array_equal(again.shift.offsets["zh"], [1.0, -1.0, 0.0])
    for bad in ({"rule": "someday/v9", "offsets": {"zh": [0, 0, 0]}},
                {"rule": LANGUAGE_RULE, "offsets": {"zh": [0, 0]}},
                {"rule": LANGUAGE_RULE, "offsets": {"zh": [0, float("nan"), 0]}},
                {"rule": LANGUAGE_RULE}):
        with pytest.raises(ProbeHeadError):
            from_dict({**plain.as_dict(), "shift": bad})


def test_the_shift_applies_to_chinese_reads_only_and_needs_the_text() -> None:
    head = shifted_head([1.0, -1.0, 0.0])
    x = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    pred, _ = predict_head(x, head, [SEED_HANT, "Python 3.11 added tomllib."])
    assert [LABELS[k] for k in pred] == ["not_in_source", "supported"]
    with pytest.raises(ProbeHeadError, match="text the probe read"):
        head.probabilities(x)
    # a head without a shift ignores the texts
    assert np.array_equal(toy_head().probabilities(x, [SEED_HANT, "x"]),
                          toy_head().probabilities(x))


def test_the_shift_is_part_of_the_judge_version(tmp_path: Path) -> None:
    one = write_head(tmp_path, shifted_head([1.0, -1.0, 0.0]), "one.json")
    other = write_head(tmp_path, shifted_head([1.0, -1.0, 0.5]), "other.json")
    none = write_head(tmp_path, toy_head(), "none.json")
    versions = {version_of(probe_config(tmp_path, probe_head=ref)) for ref in (one, other, none)}
    assert len(versions) == 3
    assert one["sha256"] == hashlib.sha256(shifted_head([1.0, -1.0, 0.0]).dumps().encode()
                                           ).hexdigest()


def test_a_fit_keeps_the_shift_and_fits_on_shifted_vectors() -> None:
    rng = np.random.default_rng(0)
    y = np.array([k % 4 for k in range(40)])
    x = rng.normal(size=(40, 3)) + np.eye(4, 3)[y] * 3
    texts = [SEED_HANT if k % 2 else "English text." for k in range(40)]
    shift = LanguageShift(LANGUAGE_RULE, {"zh": np.array([5.0, 0.0, 0.0])})
    moved = x + np.where(np.array([k % 2 for k in range(40)])[:, None] == 1,
                         shift.offsets["zh"], 0.0)
    fold = [k % 5 for k in range(40)]
    kept = fit_probe_rule(moved, y, fold, shift=shift, texts=texts)
    plain = fit_probe_rule(x, y, fold)
    assert isinstance(kept.model, ProbeHead) and kept.model.shift is not None
    # the Chinese rows, moved by the offset, are fitted as if they had not moved
    assert np.allclose(kept.model.coef, plain.model.coef)  # type: ignore[union-attr]
    assert np.allclose(kept.model.probabilities(moved, texts),
                       plain.model.probabilities(x))  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="texts read"):
        fit_probe_rule(moved, y, fold, shift=shift)
