"""The review pages at the sizes people use: the list of thousands of claims at 1280x800 (one
aligned table, at least 15 claims of real length on a screen with the judge hidden or
revealed, no filter outside its card, search on claim text and whole ids, the "why it is
queued" column only when the judge is revealed), on a 390 px phone (the claim readable, nothing
wider than the screen) and the review page at 1280x720 (the label
bar leaves the claim, the question and the answer in view; the note says when it is
required). Screenshots go to ``$CLAIM_JUDGE_SCREENSHOTS`` (docs/img when regenerating)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from judge.config import JudgeConfig
from judge.store import Store
from tests.fakes import FakeLLM
from tests.service.test_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    RECORDS,
    TOKEN,
    judge_serve,
    judged_with_queue,
)
from tests.service.test_browser import pytestmark as pytestmark  # browser, or skip


def _code(k: int) -> str:
    return f"{chr(97 + k // 26)}{chr(97 + k % 26)}x"


#: claims as long as real ones (three lines and more in the claim column: clamped to two), half
#: of them not in the source, so the revealed list shows long reasons too
SUPPORTED = ("Item {} is listed in the register of the northern warehouse, which the auditors "
             "reviewed in the third quarter and found complete, consistent and signed.")
INVENTED = ("Item {} was removed from the register of the southern warehouse after the "
            "auditors found it missing, damaged and not signed by any of the two officers.")
SOURCE = {"id": "S1", "title": "Register", "text": " ".join(
    SUPPORTED.format(_code(k)) for k in range(80))}
MANY = [{"id": f"gen-{a:02d}", "sources": [SOURCE],
         "answer": " ".join((SUPPORTED if k == 0 else INVENTED).format(_code(2 * a + k))[:-1]
                            + " [S1]." for k in range(2))}
        for a in range(30)]


def _login(page, base: str, path: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base}{path}")
    page.fill("#token", TOKEN)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"**{path.split('?')[0]}*")


def _shots(tmp_path: Path) -> Path:
    shots = Path(os.environ.get("CLAIM_JUDGE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def _overflow(page) -> list[str]:  # type: ignore[no-untyped-def]
    """What sticks out: the page wider than the window, a filter past its card's edge."""
    return page.evaluate("""() => {
      const out = [];
      if (document.documentElement.scrollWidth > window.innerWidth)
        out.push(`page ${document.documentElement.scrollWidth} > ${window.innerWidth}`);
      const card = document.querySelector('#filters').getBoundingClientRect();
      for (const el of document.querySelectorAll('#filters label, #filters button')) {
        const box = el.getBoundingClientRect();
        if (box.right > card.right + 0.5 || box.left < card.left - 0.5)
          out.push(`${el.textContent.trim().slice(0, 20)}: ${box.left}-${box.right} outside `
                   + `${card.left}-${card.right}`);
      }
      return out;
    }""")


def _visible_rows(page) -> int:  # type: ignore[no-untyped-def]
    return page.evaluate(
        "Array.from(document.querySelectorAll('tr.item')).filter("
        "r => r.getBoundingClientRect().bottom <= window.innerHeight).length")


@pytest.fixture
def many_db(tmp_path: Path, fake_llm: FakeLLM, config: JudgeConfig) -> Path:
    return judged_with_queue(tmp_path / "many.db", [*RECORDS, *MANY], tmp_path, config)


def test_review_list_is_one_compact_table_with_whole_id_search(
    many_db: Path, tmp_path: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    store = Store.open(many_db)
    claim_ids = [r["id"] for r in store.db.query("select id from claims order by id")]
    store.close()
    shots = _shots(tmp_path)
    with judge_serve(many_db) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            _login(page, base, "/review/list")
            assert page.locator("table").count() == 1
            rows = page.locator("table#items tr.item")
            assert rows.count() == 65  # 5 + 30 answers x 2 claims
            # one aligned table: every claim cell starts at the same x, has the same width
            boxes = {(round(b["x"]), round(b["width"])) for b in (
                cell.bounding_box() for cell in page.locator("td.claim-cell").all())}
            assert len(boxes) == 1, boxes
            assert _visible_rows(page) >= 15
            assert _overflow(page) == []
            two_lines = page.evaluate(  # claims of real length: two lines (cut there)
                "Array.from(document.querySelectorAll('td.claim-cell .clamp')).filter("
                "e => e.clientHeight > 1.5 * parseFloat(getComputedStyle(e).lineHeight))"
                ".length")
            assert two_lines >= 60
            headers = page.locator("table#items thead th").all_inner_texts()
            assert "why it is queued" not in headers  # blind
            page.screenshot(path=str(shots / "review-list.png"))

            # search: words of a claim's text, or a whole id; never a piece of a hash
            page.fill("#search", "concurrent writers")
            page.click("#filters button[type=submit]")
            page.wait_for_url("**q=concurrent*")
            assert rows.count() == 1
            whole = claim_ids[0]
            piece = next(whole[i:i + 3] for i in range(2, len(whole) - 3)
                         if whole[i:i + 3].isalnum() and not whole[i:i + 3].isalpha())
            page.goto(f"{base}/review/list?q={piece}")
            assert rows.count() == 0 and "No item matches" in page.inner_text("main")
            page.goto(f"{base}/review/list?q={whole}")
            assert rows.count() == 1
            page.goto(f"{base}/review/list?q=gen-07")
            assert rows.count() == 2
        finally:
            browser.close()
    with judge_serve(many_db, "--reveal-judge") as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            _login(page, base, "/review/list")
            headers = page.locator("table#items thead th").all_inner_texts()
            assert "why it is queued" in headers
            why = page.locator("table#items td.why").all_inner_texts()
            assert len(why) == 65 and all(w.strip() for w in why)
            assert _visible_rows(page) >= 15
            assert _overflow(page) == []
            page.screenshot(path=str(shots / "review-list-revealed.png"))
            # a phone: the claim gets the width, nothing sticks out
            page.set_viewport_size({"width": 390, "height": 844})
            page.reload()
            assert _overflow(page) == []
            claim = page.locator("td.claim-cell").first.bounding_box()
            assert claim is not None and claim["width"] >= 300 and claim["height"] >= 15
            assert claim["x"] >= 0 and claim["x"] + claim["width"] <= 390
            assert len(page.locator("td.claim-cell").first.inner_text()) > 10
            page.screenshot(path=str(shots / "review-list-phone.png"))
        finally:
            browser.close()
    if not os.environ.get("CLAIM_JUDGE_SCREENSHOTS"):
        shutil.rmtree(shots, ignore_errors=True)


def test_label_bar_leaves_claim_question_and_answer_in_view_and_note_says_when_required(
    tmp_path: Path, fake_llm: FakeLLM, config: JudgeConfig,
) -> None:
    from playwright.sync_api import sync_playwright

    db = judged_with_queue(tmp_path / "page.db", RECORDS, tmp_path, config)
    shots = _shots(tmp_path)
    with judge_serve(db) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            _login(page, base, "/review")
            page.wait_for_url("**/review?*pos=1")
            # the queue is shuffled with a seed drawn per queue: go to the first item whose
            # answer has a question (not every record has one)
            question = "section.card:has(h3:text('Question')) .text"
            pos = 1
            while not page.locator(question).count():
                pos += 1
                assert pos <= 20, "no queued item with a question"
                page.goto(f"{base}/review?pos={pos}")
            bar = page.locator("form.decide").bounding_box()
            assert bar is not None
            for selector in ("#claim-text", question, "#answer-text"):
                box = page.locator(selector).bounding_box()
                assert box is not None and box["y"] >= 0, selector
                assert box["y"] + box["height"] <= bar["y"], (selector, box, bar)
            page.screenshot(path=str(shots / "review-page.png"))

            need = page.locator("#note-need")
            assert need.inner_text() == "optional"  # nothing labelled before
            page.keyboard.press("1")
            page.keyboard.press("Enter")
            page.wait_for_url(re.compile(rf"[?&]saved={pos}(&|$)"))  # saved=<its position>
            page.goto(f"{base}/review?pos={pos}")
            assert "required if you change your label (supported)" in need.inner_text()
            assert not page.locator("textarea[name=note]").evaluate("n => n.required")
            page.keyboard.press("3")  # not_in_source: a changed label
            page.keyboard.press("u")
            assert "required" in (need.get_attribute("class") or "").split()
            assert page.locator("textarea[name=note]").evaluate("n => n.required")
            page.keyboard.press("Enter")
            assert "write why in the note" in page.inner_text("#form-status")
            assert page.url.endswith(f"pos={pos}")
            assert page.evaluate("document.activeElement.name") == "note"  # focused for it
            page.keyboard.press("Escape")
            page.keyboard.press("1")  # back to the earlier label: optional again
            assert not page.locator("textarea[name=note]").evaluate("n => n.required")
        finally:
            browser.close()
    if not os.environ.get("CLAIM_JUDGE_SCREENSHOTS"):
        shutil.rmtree(shots, ignore_errors=True)


def test_on_a_phone_the_labels_are_on_the_first_screen_with_the_claim(
    tmp_path: Path, fake_llm: FakeLLM, config: JudgeConfig,
) -> None:
    """390x844: the label bar is at the bottom of the first screen (at most 40% of it), the
    claim above it; the subtypes appear once a label that needs one is chosen; every source
    can be scrolled above the bar; a label is saved by tapping."""
    from playwright.sync_api import sync_playwright

    db = judged_with_queue(tmp_path / "page.db", RECORDS, tmp_path, config)
    shots = _shots(tmp_path)
    with judge_serve(db) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})
            _login(page, base, "/review")
            page.wait_for_url("**/review?*pos=1")
            assert page.evaluate("document.documentElement.scrollWidth") <= 390
            bar = page.locator("form.decide").bounding_box()
            assert bar is not None
            assert bar["y"] + bar["height"] <= 844 + 1 and bar["height"] <= 0.4 * 844 + 1
            claim = page.locator("#claim-text").bounding_box()
            assert claim is not None and claim["y"] >= 0
            assert claim["y"] + claim["height"] <= bar["y"]
            chips = page.locator("form.decide .labels .choice")
            assert chips.count() == 4
            for k in range(4):
                box = chips.nth(k).bounding_box()
                assert box is not None and box["y"] >= bar["y"] and box["x"] + box["width"] <= 390
            assert not page.locator("form.decide .subtypes").is_visible()
            page.screenshot(path=str(shots / "review-phone.png"))
            chips.nth(1).click()  # contradicted
            assert page.locator("form.decide .subtypes").is_visible()
            chips.nth(0).click()  # supported: no subtype needed
            assert not page.locator("form.decide .subtypes").is_visible()
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            last = page.locator("details.source").last.bounding_box()
            bar = page.locator("form.decide").bounding_box()
            assert last is not None and bar is not None
            assert last["y"] + last["height"] <= bar["y"]
            page.locator("#save").click()
            page.wait_for_url(re.compile(r"[?&]saved=1(&|$)"))
        finally:
            browser.close()
    if not os.environ.get("CLAIM_JUDGE_SCREENSHOTS"):
        shutil.rmtree(shots, ignore_errors=True)


def test_report_filter_and_contents_work_in_a_real_browser(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from calibration.render import navigable

    rows = "".join(f"<tr><td>claim {k} {'lenient' if k % 3 else 'strict'}</td></tr>"
                   for k in range(120))
    page_html = navigable(
        '<!doctype html><html><head><meta charset="utf-8"></head><body><h1>r</h1>'
        "<h2>Summary</h2><p>x</p><h2 id=\"misjudged\">Claims the judge got wrong</h2>"
        f'<table id="misjudged-claims"><tr><th>claim</th></tr>{rows}</table></body></html>')
    path = tmp_path / "report.html"
    path.write_text(page_html, encoding="utf-8")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto(path.as_uri())
            section = page.locator("details#misjudged")
            assert not section.evaluate("d => d.open")  # 121 rows: folded
            page.click("nav.contents a[href='#misjudged']")
            assert section.evaluate("d => d.open")  # the contents link unfolds it
            box = page.locator("input.filter")
            assert box.is_visible()
            box.fill("strict")
            visible = page.evaluate("Array.from(document.querySelectorAll("
                                    "'#misjudged-claims tr')).slice(1).filter(r => !r.hidden)"
                                    ".length")
            assert visible == 40
            assert page.inner_text("#misjudged-claims-shown") == "40 of 120 shown"
        finally:
            browser.close()
