"""The README quality block and the research notes' detailed figures are generated from the
report of ``judge eval-gold --output-json`` (``make eval``), never typed by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.api import eval_gold
from judge.config import JudgeConfig
from research.quality_block import (
    DETAILS_END,
    DETAILS_START,
    QUALITY_END,
    QUALITY_START,
    BlockError,
    detail_tables,
    main,
    quality_table,
    queue_projection,
    update_details,
    update_readme,
)
from tests.conftest import FAKE_MODEL, write_jsonl
from tests.fakes import FakeLLM

AUTH = {"id": "S1", "text": "401 means unauthenticated. 403 means forbidden."}
TOWER = {"id": "T1", "text": "The tower is 330 metres tall."}


def gold_items() -> list[dict[str, Any]]:
    def item(n: int, claim: str, label: str, subtype: str | None, dataset: str,
             source: dict[str, str]) -> dict[str, Any]:
        return {"id": f"g{n}", "dataset": dataset, "sources": [source], "claim": claim,
                "label": label, "subtype": subtype, "annotator": "human:alice"}

    # the fake judge: a claim found verbatim in a source is supported, else not_in_source
    return [item(1, "401 means unauthenticated.", "supported", None, "alpha", AUTH),
            item(2, "403 means forbidden.", "supported", None, "alpha", AUTH),
            item(3, "404 means gone.", "not_in_source", "unsupported_addition", "alpha", AUTH),
            item(4, "The tower is 330 metres tall.", "supported", None, "beta", TOWER),
            item(5, "The tower is 300 metres tall.", "contradicted", "numeric_or_version_error",
                 "beta", TOWER)]


def report(tmp_path: Path, config: JudgeConfig) -> tuple[dict[str, Any], Path]:
    gold = write_jsonl(tmp_path / "gold.jsonl", gold_items())
    data = eval_gold(gold, config=config, db=tmp_path / "eval.db").to_dict()
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return data, path


def test_the_readme_block_is_one_short_table(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    data, out_json = report(tmp_path, config)
    readme = tmp_path / "README.md"
    readme.write_text("# x\nno markers\n", encoding="utf-8")
    with pytest.raises(BlockError, match="markers"):
        update_readme(readme, data)
    assert readme.read_text() == "# x\nno markers\n"
    assert main(["--update-readme", str(out_json), "--readme", str(readme)]) == 1

    readme.write_text(f"# x\n{QUALITY_START}\nSTALE-TABLE\n{QUALITY_END}\nend\n", encoding="utf-8")
    assert main(["--update-readme", str(out_json), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "STALE-TABLE" not in text and text.endswith(f"{QUALITY_END}\nend\n")
    block = text.split(QUALITY_START)[1].split(QUALITY_END)[0].strip()
    assert block == quality_table(data)
    first, *rest = block.splitlines()
    # one line: judge version, gold file and its sha256, cost per claim
    assert data["judge_version"] in first and str(data["gold"]["file"]) in first
    assert data["gold"]["sha256"][:12] in first and "cost per claim: 1.0 model calls" in first
    # then one table, per dataset and overall
    table = [line for line in rest if line.startswith("|")]
    assert table[0] == ("| dataset | claims | balanced accuracy | contradicted recall | "
                        "lenient rate | strict rate | queue recall | queue false alarms | "
                        "queue load |")
    # and the queue's operating point, said in words (here: none set from gold)
    assert rest[-1].startswith("The queue at its operating point: ")
    assert "states no recall" in rest[-1]
    assert [row.split(" | ")[0] for row in table[2:]] == ["| alpha", "| beta", "| **all**"]
    assert table[2].startswith("| alpha | 3 |") and table[3].startswith("| beta | 2 |")
    # beta's contradicted claim was judged not_in_source: recall 0 of 1; alpha has none
    assert "| 0% (n=1) |" in table[3] and " | – | " in table[2]
    assert "Recall per gold label" not in block and "Review queue" not in block
    update_readme(readme, data)
    assert readme.read_text() == text  # regenerating changes nothing


def test_the_detailed_figures_go_to_the_research_notes(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    data, out_json = report(tmp_path, config)
    readme, notes = tmp_path / "README.md", tmp_path / "notes.md"
    readme.write_text(f"{QUALITY_START}\n{QUALITY_END}\n", encoding="utf-8")
    notes.write_text("# notes\nno markers\n", encoding="utf-8")
    with pytest.raises(BlockError, match="markers"):
        update_details(notes, data)
    # the notes lack their markers: neither file is touched
    assert main(["--update-readme", str(out_json), "--readme", str(readme),
                 "--details", str(notes)]) == 1
    assert readme.read_text() == f"{QUALITY_START}\n{QUALITY_END}\n"

    notes.write_text(f"# notes\n{DETAILS_START}\nSTALE\n{DETAILS_END}\n", encoding="utf-8")
    assert main(["--update-readme", str(out_json), "--readme", str(readme),
                 "--details", str(notes)]) == 0
    text = notes.read_text()
    assert "STALE" not in text and detail_tables(data) in text
    assert quality_table(data) in readme.read_text()
    # recall per gold label, per dataset and overall, and the queue at other label mixes
    assert "| dataset | supported | contradicted | not_in_source | not_verifiable |" in text
    all_row = next(line for line in text.splitlines()
                   if line.startswith("| **all** |") and "(n=" in line)
    assert all_row.count("(n=") == sum(1 for m in data["per_label"].values() if m["support"])
    assert "Review queue: recall" in text and "at a 20% share" in text
    assert "at or below 50%" in text
    assert "Read in the queue's order" in text and "for any order" in text
    assert "Validity gate" in text and "Cost per claim: 1.0 model calls" in text


def test_the_queue_at_other_thresholds_marks_the_configured_one(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    config = JudgeConfig(model=FAKE_MODEL, strategy="scores", signals=False,
                         review_support_below=0.5,
                         prompts={"split_claims": "v1", "choose_label": "v1"})
    data, _ = report(tmp_path, config)
    text = "\n".join(queue_projection(data))
    assert "| 0.5 (configured) |" in text and "| 0.3 |" in text
    assert text in detail_tables(data)


def test_the_readme_block_gives_the_per_dataset_fits_and_learning_curves(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """research/fit_per_domain.py's report (real fits on a synthetic store) joins the block:
    one row per dataset with the default and the fitted rule on its check items, a refusal
    named as such, and the learning curve."""
    import research.fit_per_domain as per_domain
    from judge.evaluation.gold import load_gold
    from judge.store import Store
    from tests.fit.synthetic import gold_items as synthetic_gold
    from tests.fit.synthetic import (
        install_letters,
        letters_for,
        scores_config,
        write_config,
        write_gold,
    )

    data, out_json = report(tmp_path, config)
    tuning_items = synthetic_gold(100, "gamma") + synthetic_gold(20, "delta", start=200)
    check_items = synthetic_gold(40, "gamma", start=100) + synthetic_gold(20, "delta", start=300)
    install_letters(fake_llm, letters_for(tuning_items + check_items))
    tuning = write_gold(tmp_path / "tuning.jsonl", tuning_items)
    check = write_gold(tmp_path / "check.jsonl", check_items)
    current = write_config(tmp_path / "current.toml", scores_config())
    db = tmp_path / "judge.db"
    version = eval_gold(tuning, config=current, db=db).summary.judge_version
    assert eval_gold(check, config=current, db=db).summary.judge_version == version
    monkeypatch.setattr(per_domain, "DATASETS", ("gamma", "delta"))
    per, _rules = per_domain.per_dataset(Store.open(db), version, load_gold(tuning),
                                         load_gold(check))
    fit_report = {"store_version": version, "per_dataset": per}
    fit_json = tmp_path / "fit.json"
    fit_json.write_text(json.dumps(fit_report), encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(f"{QUALITY_START}\n{QUALITY_END}\n", encoding="utf-8")
    assert main(["--update-readme", str(out_json), "--readme", str(readme),
                 "--fit", str(fit_json)]) == 0
    block = readme.read_text().split(QUALITY_START)[1].split(QUALITY_END)[0]
    assert block.strip().startswith(quality_table(data).splitlines()[0])
    assert version.rsplit("@", 1)[-1][:12] in block
    gamma = per["gamma"]
    fitted = gamma["check"]["balanced_accuracy"]["candidate"]["value"]
    default = gamma["check"]["balanced_accuracy"]["baseline"]["value"]
    table_row, curve_row = [line for line in block.splitlines() if line.startswith("| gamma |")]
    assert table_row.startswith(f"| gamma | {gamma['fit']['n']} | {default:.0%} (")
    assert f"| {fitted:.0%} (" in table_row
    zero = gamma["shrink_zero"]["check"]["balanced_accuracy"]["candidate"]["value"]
    assert f"{gamma['balanced_accuracy_change_points']:+.1f} | {zero:.0%} |" in table_row
    assert gamma["fit"]["shrunk_toward_current"] is True
    assert ("adopt |" if gamma["recommend_adopt"] else "keep the default") in table_row
    # delta is short of the minimum gold: its row says refused and why
    assert "refused" in per["delta"]
    assert "refused (its figures: the same fit made without the minimum): a fit needs at " \
        "least 10 reviewed claims" in next(
        line for line in block.splitlines() if line.startswith("| delta |"))
    # the curve: one column per size below the dataset's whole tuning set, then all (n)
    header = next(line for line in block.splitlines() if line.startswith("| dataset | 25"))
    assert header.endswith("| all |")
    last = gamma["curve"][-1]
    assert curve_row.endswith(f"| {last['balanced_accuracy']['value']:.0%} ({last['size']}) |")
    assert main(["--update-readme", str(out_json), "--readme", str(readme)]) == 0
    assert "Learning curve" not in readme.read_text()  # without --fit, no fit tables


def test_figures_on_claims_the_default_head_was_fitted_on_are_marked_in_sample() -> None:
    from judge import version_of
    from judge.config import JudgeConfig
    from research.quality_block import in_sample_note

    default = version_of(JudgeConfig.load())
    data = {"judge_version": default, "gold": {"file": "gold/eval_xl.jsonl"}}
    note = in_sample_note(data)
    assert note is not None and "fitted on 358 of these 358 claims" in note
    # another version, or gold the head never saw, is not marked
    assert in_sample_note({**data, "judge_version": "x@123456789abc"}) is None
    assert in_sample_note({**data, "gold": {"file": "gold/regression.jsonl"}}) is None


def _figures(n: int, confusion: dict[str, dict[str, int]], balanced: float,
             auc: float | None) -> dict[str, Any]:
    """One dataset's entry of a small synthetic eval report."""
    contradicted = confusion.get("contradicted") or {}
    support = sum(contradicted.values())
    recall = contradicted.get("contradicted", 0) / support if support else None
    return {
        "n": n, "confusion": confusion, "balanced_accuracy": balanced,
        "balanced_accuracy_ci": {"ci_low": balanced - 0.1, "ci_high": balanced + 0.1, "n": n},
        "per_label": {"contradicted": {"support": support, "recall": {
            "value": recall, "ci_low": 0.1, "ci_high": 0.6, "n": support}}},
        "lenient_rate": {"value": 0.1}, "strict_rate": {"value": 0.2},
        "queue_recall": 0.9, "queue_recall_ci": {"ci_low": 0.8, "ci_high": 0.95, "n": 20},
        "queue_load": 0.7, "queue_load_ci": {"ci_low": 0.6, "ci_high": 0.8, "n": n},
        "queue_false_alarm": {"value": 0.55, "ci_low": 0.4, "ci_high": 0.7, "n": 10},
        "roc_auc_support": (None if auc is None else
                            {"value": auc, "ci_low": auc - 0.05, "ci_high": auc + 0.05, "n": n}),
    }


#: gold label -> judge label -> claims, of a small Chinese and a small English dataset
ZH_CONFUSION = {"supported": {"supported": 6, "not_in_source": 4},
                "contradicted": {"contradicted": 3, "not_in_source": 7},
                "not_in_source": {"not_in_source": 9, "supported": 1}}
EN_CONFUSION = {"supported": {"supported": 8, "contradicted": 2},
                "contradicted": {"contradicted": 4, "supported": 1},
                "not_in_source": {"not_in_source": 2, "supported": 2}}


def test_chinese_rows_per_script_beside_english_on_three_labels() -> None:
    from research.quality_block import chinese_table, three_label_figures

    zh = ZH_CONFUSION
    tw = {"supported": {"supported": 5, "not_in_source": 5},
          "contradicted": {"contradicted": 2, "not_in_source": 8},
          "not_in_source": {"not_in_source": 10}}
    en = {**EN_CONFUSION,
          "not_verifiable": {"not_verifiable": 5}}  # left out of the three labels
    bal_zh, con_zh = three_label_figures(zh)
    assert bal_zh is not None and round(bal_zh, 4) == round((0.6 + 0.3 + 0.9) / 3, 4)
    assert con_zh == 0.3
    assert three_label_figures(en) == ((0.8 + 0.8 + 0.5) / 3, 0.8)
    data = {"judge_version": "v@1", "generated_at": "2026-12-03",
            "gold": {"file": "gold/x.jsonl", "sha256": "0" * 64, "items": 79},
            **_figures(79, {}, 0.6, 0.8),
            "per_dataset": {"alpha": _figures(19, en, 0.7, 0.85),
                            "ocnli": _figures(30, zh, bal_zh, 0.84),
                            "ocnli_tw": _figures(30, tw, three_label_figures(tw)[0], None)}}
    table = chinese_table(data)
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert rows[1].startswith("| English (alpha) | 19 | 70% | 80% | – |")  # 3 labels only
    assert rows[2].startswith("| Chinese, Simplified (`ocnli`) | 30 | 60% (50%–70%) | "
                              "30% (10%–60%) | 0.84 (0.79–0.89) | 90% (80%–95%) | "
                              "55% (40%–70%) | 70% (60%–80%) |")
    assert rows[3].startswith("| Chinese, Traditional (`ocnli_tw`) | 30 | 57% (47%–67%) | "
                              "20% (10%–60%) | – |")
    assert "Traditional − Simplified: -3.3 points" in table
    # the README block shows them after its table; without OCNLI it is as before
    assert table in quality_table(data)
    del data["per_dataset"]["ocnli"], data["per_dataset"]["ocnli_tw"]
    assert chinese_table(data) == "" and "Chinese" not in quality_table(data)



def test_the_eval_report_gives_the_auc_of_support_per_dataset(
    tmp_path: Path, config: JudgeConfig, fake_llm: FakeLLM
) -> None:
    from types import SimpleNamespace

    from judge.evaluation.reports import support_auc

    # a judge without a support score (the fake's strategy): null, overall and per dataset
    data, _ = report(tmp_path, config)
    assert data["roc_auc_support"] is None
    assert all(f["roc_auc_support"] is None for f in data["per_dataset"].values())

    def matched(dataset: str, label: str, support: float | None) -> SimpleNamespace:
        item = SimpleNamespace(dataset=dataset, label=label)
        return SimpleNamespace(row={"support": support}, entry=SimpleNamespace(item=item))

    outcome = SimpleNamespace(matching=SimpleNamespace(matched=[
        matched("ocnli", "supported", 0.9), matched("ocnli", "contradicted", 0.2),
        matched("ocnli", "not_in_source", 0.95), matched("ocnli_tw", "supported", 0.4),
        matched("ocnli_tw", "not_in_source", 0.1), matched("ocnli_tw", "supported", None)]))
    aucs = support_auc(outcome)  # type: ignore[arg-type]
    assert aucs["ocnli"]["value"] == 0.5 and aucs["ocnli"]["n"] == 3
    assert aucs["ocnli_tw"]["value"] == 1.0 and aucs["ocnli_tw"]["n"] == 2  # no support: out
    assert aucs[None]["value"] == pytest.approx(4 / 6) and aucs[None]["n"] == 5


def test_chinese_reports_of_their_own_show_beside_english_with_their_source() -> None:
    from research.quality_block import quality_table, with_chinese

    en = EN_CONFUSION
    zh = ZH_CONFUSION
    data = {"judge_version": "v@1", "generated_at": "2026-12-03",
            "gold": {"file": "fresh.jsonl", "sha256": "0" * 64, "items": 19},
            **_figures(19, en, 0.7, 0.8), "per_dataset": {"alpha": _figures(19, en, 0.7, 0.8)}}

    def report(file: str, value: float) -> dict[str, object]:
        return {"judge_version": "v@2", "generated_at": "2026-12-04T10:00:00",
                "gold": {"file": file, "sha256": "1" * 64, "items": 30},
                **_figures(30, zh, value, 0.83)}

    both = with_chinese(data, [report("gold/ocnli_check.jsonl", 0.6),
                               report("gold/ocnli_check.zh-tw.jsonl", 0.5)])
    table = quality_table(both)
    assert ("Chinese: judge `v@2` (another version than the English figures) on "
            "`gold/ocnli_check.jsonl` (30 pairs, 2026-12-04) and "
            "`gold/ocnli_check.zh-tw.jsonl` (30 pairs, 2026-12-04).") in table
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    # the English table keeps its datasets; the Chinese rows come after it
    assert [r.split(" |")[0] for r in rows] == [
        "| dataset", "| alpha", "| **all**", "|", "| English (alpha)",
        "| Chinese, Simplified (`ocnli`)", "| Chinese, Traditional (`ocnli_tw`)"]
    assert "Traditional − Simplified: -10.0 points" in table
    with pytest.raises(ValueError, match="two Chinese reports"):
        with_chinese(data, [report("gold/ocnli_check.jsonl", 0.6)] * 2)
