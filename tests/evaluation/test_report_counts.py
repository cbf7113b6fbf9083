"""The calibration and drift pages state the row counts of the rows they show: the contents
list's "(N rows, collapsed)", a filter's "Filter these N rows" and what its script counts, a
heading's "(N)" and the drift page's "M changed label". A header row is no row (the contents
list once said 97 where the filter said 96). Real pages: two scripted judges that disagree,
judged through the CLI on 70 answers with human gold, so the long tables are collapsed and
filtered; the rows are counted by an HTML parser, not by the renderer's own rule."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from judge.store import Store
from tests.cli.test_drift_cli import SRC, TwoJudges, invoke, judge, two_judges  # noqa: F401
from tests.conftest import write_jsonl

ANSWERS = 70


@dataclass
class Table:
    rows: int = 0          # every <tr>
    data: int = 0          # rows with a <td>
    folded: bool = False   # inside a collapsed per-dataset block


@dataclass
class Section:
    title: str = ""
    tables: dict[str, Table] = field(default_factory=dict)


class Page(HTMLParser):
    """Sections (``<details class="section">``), their tables and rows, as a browser reads
    them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.sections: dict[str, Section] = {}
        self.section: Section | None = None
        self.table: Table | None = None
        self.row_has_td = False
        self.in_title = False
        self.folds = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "details" and a.get("class") == "section":
            self.section = self.sections.setdefault(str(a["id"]), Section())
        elif tag == "details" and a.get("class") == "dataset":
            self.folds += 1
        elif tag == "h2" and self.section is not None:
            self.in_title = True
        elif tag == "table" and self.section is not None:
            name = a.get("id") or f"table{len(self.section.tables)}"
            self.table = self.section.tables[name] = Table(folded=self.folds > 0)
        elif tag == "tr" and self.table is not None:
            self.table.rows += 1
            self.row_has_td = False
        elif tag == "td" and self.table is not None and not self.row_has_td:
            self.row_has_td = True
            self.table.data += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.table = None
        elif tag == "h2":
            self.in_title = False
        elif tag == "details" and self.folds:
            self.folds -= 1

    def handle_data(self, data: str) -> None:
        if self.in_title and self.section is not None:
            self.section.title += data

    def shown(self, ident: str) -> int:
        """Data rows a section shows when open (folded dataset blocks stay folded)."""
        return sum(t.data for t in self.sections[ident].tables.values() if not t.folded)


def _pages(tmp_path: Path, store: Store) -> dict[str, str]:
    records, gold = [], []
    for i in range(ANSWERS):
        texts = ([f"403 means forbidden in case {i}.", "401 means unauthenticated."] if i % 2
                 else ["403 means forbidden.", f"Tokens expire after one hour {i}."])
        source = {"id": "S1", "text": f"{SRC['text']} 403 means forbidden in case {i}."}
        records.append({"id": f"a{i}", "answer": " ".join(texts), "sources": [source],
                        "claims": [{"text": t, "citations": ["S1"]} for t in texts]})
        gold += [{"id": f"g{i}-{k}", "claim": t, "sources": [source],
                  "label": "not_in_source" if k else "supported",
                  **({"subtype": "unsupported_addition"} if k else {}),
                  "annotator": "human:alice", "dataset": "d1" if i % 3 else "d2"}
                 for k, t in enumerate(texts)]
    answers = write_jsonl(tmp_path / "answers.jsonl", records)
    gold_file = write_jsonl(tmp_path / "gold.jsonl", gold)
    a = judge(answers, store, "fake/judge-a")
    b = judge(answers, store, "fake/judge-b")
    db = str(store.path)
    for name, args in (("drift", ["drift", "--db", db, "--from", a, "--to", b]),
                       ("calibration", ["calibrate", "--db", db, "--judge-version", b])):
        result = invoke(*args, "--gold", str(gold_file), "--html", str(tmp_path / name))
        assert result.exit_code == 0, result.output
    return {name: (tmp_path / name).read_text(encoding="utf-8")
            for name in ("drift", "calibration")}


def test_every_count_a_page_states_is_the_rows_it_shows(
    tmp_path: Path, store: Store, two_judges: TwoJudges,  # noqa: F811
) -> None:
    pages = _pages(tmp_path, store)
    collapsed_seen = filters_seen = 0
    for name, html in pages.items():
        page = Page(html)
        contents = html[html.index('<nav class="contents">'):html.index("</nav>")]
        for ident, said in re.findall(r'<a href="#([^"]+)">[^<]*</a> <span class="muted">'
                                      r"\((\d+) rows, collapsed\)", contents):
            assert int(said) == page.shown(ident) > 40, (name, ident)
            assert f'<details class="section" id="{ident}" data-rows="{said}">' in html
            collapsed_seen += 1
        for table_id, said in re.findall(r'data-table="([^"]+)" hidden placeholder="Filter '
                                         r'these (\d+) rows', html):
            table = next(s.tables[table_id] for s in page.sections.values()
                         if table_id in s.tables)
            # the filter's script counts table.rows.length - 1: one header row, no more
            assert int(said) == table.data == table.rows - 1, (name, table_id)
            filters_seen += 1
        for ident, section in page.sections.items():
            for said in re.findall(r"\((\d+)\)\s*$", section.title):
                assert int(said) == page.shown(ident), (name, section.title)
    drift = Page(pages["drift"])
    flipped = re.search(r"(\d+) claims judged by both versions; (\d+) changed label",
                        pages["drift"])
    assert flipped is not None
    table: Any = next(s.tables["flipped"] for s in drift.sections.values()
                      if "flipped" in s.tables)
    assert int(flipped.group(1)) == 2 * ANSWERS
    assert int(flipped.group(2)) == table.data == ANSWERS  # the "forbidden" claims flip
    # the drift page: the flips and B's misjudged claims collapsed; A's and the calibration
    # page's misjudged claims filtered (filters on the flips, and on each version's claims)
    assert collapsed_seen >= 2 and filters_seen >= 4
