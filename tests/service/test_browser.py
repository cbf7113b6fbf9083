"""A real browser on the review page: Debian's Chromium driven by Playwright (no browser
download). ``judge serve`` runs in a subprocess on a free localhost port.

Set ``CLAIM_JUDGE_SCREENSHOTS=<folder>`` to keep the screenshots."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from judge.api import judge_file
from judge.config import JudgeConfig
from judge.review.blind import visible_items
from judge.review.queue import QueueOptions, build_queue, queue_items
from judge.review.reviews import current_reviews
from judge.store import Store
from tests.conftest import skip_or_fail, write_jsonl
from tests.fakes import FakeLLM

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "browser-token-alice"
SCRIPT = "<script>document.title='pwned';window.__pwned=1;</script>"

pytestmark = [
    pytest.mark.browser,
    skip_or_fail(not CHROMIUM.exists(), "needs Debian chromium at /usr/bin/chromium (make "
                 "browser installs it)", "CLAIM_JUDGE_REQUIRE_BROWSER"),
]

RECORDS = [
    {
        "id": "a-zh", "question": "401 與 403 有什麼差別？",
        "answer": "401 表示身分未確認 [S1]。403 表示伺服器暫時故障，請稍後重試 [S1]。",
        "sources": [
            {"id": "S1", "title": "HTTP 狀態碼筆記",
             "text": "401 表示身分未確認。需要重新登入。403 表示已認證但權限不足，"
                     "重試不會改變結果。"},
            {"id": "S2", "title": "含有 HTML 的來源", "text": f"{SCRIPT} 這段來源含有 HTML 標籤。"},
        ],
    },
    {
        "id": "b-en", "question": "Can SQLite readers and writers work at the same time?",
        "answer": "In WAL mode readers do not block writers [A]. SQLite allows any number of "
                  "concurrent writers [A].",
        "sources": [{"id": "A", "title": "SQLite WAL",
                     "text": "In WAL mode readers do not block writers. A writer does not "
                             "block readers either. SQLite allows only one writer at a time."}],
    },
    {
        "id": "c-zh", "answer": "（預先切分的主張）",
        "sources": [{"id": "S1", "title": "部署手冊",
                     "text": "部署前必須先執行資料庫遷移。遷移失敗時，請回滾到上一個版本。"}],
        "claims": [{"text": "部署前一律不需要執行資料庫遷移。",
                    "citations": [{"source": "S1", "quote": "部署前必須先執行資料庫遷移"}]}],
    },
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def judged_with_queue(db: Path, records: list[dict], folder: Path, config: JudgeConfig) -> Path:
    """A store holding the records judged by the fake judge and a queue of every claim."""
    store = Store.open(db)
    judge_file(write_jsonl(folder / "in.jsonl", records), config=config, db=store)
    build_queue(store, options=QueueOptions(sample_rate=1.0, double_fraction=0.0))
    store.close()
    return db


@contextmanager
def judge_serve(db: Path, *options: str, port: int | None = None) -> Iterator[str]:
    """``judge serve`` on ``db`` (with ``options``) in a subprocess, as a user starts it, on
    ``port`` (default: a free one); yields its base URL once ``/v1/health`` answers, and stops
    it on leaving."""
    port = port or free_port()
    code = "import sys; from judge.cli import main; sys.argv = ['judge', *sys.argv[1:]]; main()"
    env = {**os.environ, "CLAIM_JUDGE_TOKENS": f"{TOKEN}:alice", "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--db", str(db), "--port", str(port), *options],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.time() > deadline:
                pytest.fail(f"judge serve did not start:\n{server.stdout.read() if server.stdout else ''}")
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(10)


def alice_order(db: Path) -> dict[str, int]:
    """Claim text -> its number in alice's blind order of the queue (the page's ``pos``)."""
    store = Store.open(db)
    try:
        queue_id = store.queue_row()["id"]
        texts = store.queue_item_texts(queue_id)
        shown = visible_items(store, queue_id, queue_items(store, queue_id), reveal=False,
                              viewer="human:alice")
        return {texts[i["id"]]["text"]: i["number"] for i in shown}
    finally:
        store.close()


def next_todo(pos: int, done: set[int], total: int) -> int:
    """Where saving item ``pos`` leads: the next item that still needs me, else the first."""
    todo = [p for p in range(1, total + 1) if p not in done]
    return ([p for p in todo if p > pos] or todo)[0]


@pytest.fixture
def served(tmp_path: Path, fake_llm: FakeLLM, config: JudgeConfig) -> Iterator[tuple[str, Path]]:
    db = judged_with_queue(tmp_path / "review.db", RECORDS, tmp_path, config)
    with judge_serve(db) as base:
        yield base, db


def test_review_by_keyboard_in_a_real_browser(served: tuple[str, Path], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    base, db = served
    shots = Path(os.environ.get("CLAIM_JUDGE_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    console_errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error"
                    else None)
            page.goto(f"{base}/review")
            assert "/login" in page.url
            page.fill("#token", TOKEN)
            page.click("#login-form button[type=submit]")
            page.wait_for_url("**/review?*pos=1")
            assert page.title() == "Review 1/5 · claim-judge"
            # blind: alice reads the queue in her own shuffled order
            order = alice_order(db)
            zh, en, quoted = (next(n for text, n in order.items() if key in text) for key in
                              ("403 表示伺服器", "any number of concurrent writers", "部署前一律"))
            done: set[int] = set()

            # the Chinese answer; its second source holds a <script> shown as text
            page.goto(f"{base}/review?pos={zh}")
            assert page.evaluate("window.__pwned") is None
            html_source = page.locator("details.source", has_text="含有 HTML 的來源")
            html_source.locator("summary").click()  # uncited sources start collapsed
            assert SCRIPT in html_source.inner_text()
            assert page.locator("details.source script").count() == 0
            assert page.locator("mark.hl-claim").first.inner_text().startswith("403 表示伺服器")
            page.screenshot(path=str(shots / "review-zh.png"), full_page=True)

            page.keyboard.press("2")  # contradicted, without a subtype: refused in the page
            page.keyboard.press("Enter")
            assert "subtype" in page.inner_text("#form-status")
            assert page.url.endswith(f"pos={zh}")
            page.keyboard.press("3")  # not_in_source
            page.keyboard.press("u")  # unsupported_addition
            page.keyboard.press("Enter")
            done.add(zh)
            page.wait_for_url(f"**/review?*pos={next_todo(zh, done, len(order))}")

            # English; label it supported by keyboard
            page.goto(f"{base}/review?pos={en}")
            assert "any number of concurrent writers" in page.inner_text("#claim-text")
            page.screenshot(path=str(shots / "review-en.png"), full_page=True)
            page.keyboard.press("1")
            assert page.locator("input[name=subtype]").first.is_disabled()
            page.keyboard.press("Enter")
            done.add(en)
            page.wait_for_url(f"**/review?*pos={next_todo(en, done, len(order))}")
            page.goto(f"{base}/review?pos={quoted}")
            assert page.locator(".source-text mark.hl-quote").first.inner_text() == "部署前必須先執行資料庫遷移"
            page.screenshot(path=str(shots / "review-quote.png"), full_page=True)

            if quoted > 1:
                page.keyboard.press("k")  # the previous item of alice's order
                page.wait_for_url(f"**/review?*pos={quoted - 1}")
            page.goto(f"{base}/review?pos={en}")  # my label is shown
            assert page.locator("input[name=label][value=supported]").is_checked()
            page.goto(f"{base}/dashboard")
            assert "human:alice" in page.inner_text("#by-reviewer")
            page.screenshot(path=str(shots / "dashboard.png"), full_page=True)
            assert page.evaluate("window.__pwned") is None
        finally:
            browser.close()
    assert not [e for e in console_errors if "Content Security Policy" in e], console_errors
    store = Store.open(db)
    try:
        reviews = [r for rows in current_reviews(store).values() for r in rows]
        got = sorted((r["answer_id"], r["label"], r["subtype"]) for r in reviews)
        assert got == [("a-zh", "not_in_source", "unsupported_addition"),
                       ("b-en", "supported", None)]
        assert all(r["annotator"] == "human:alice" and r["origin"] == "web" for r in reviews)
        assert all(r["time_spent_ms"] and r["time_spent_ms"] > 0 for r in reviews)
    finally:
        store.close()
    if not os.environ.get("CLAIM_JUDGE_SCREENSHOTS"):
        shutil.rmtree(shots, ignore_errors=True)


JSON_RECORD = {
    "id": "d-json", "question": "p50 延遲是多少？",
    "answer": "p50 延遲是 120 毫秒。",
    "sources": [{"id": "metrics.json", "title": "服務指標",
                 "json": {"service": "checkout", "latency": {"p50": 120, "p99": 870}}}],
    "claims": [{"text": "p50 延遲是 120 毫秒。",
                "citations": [{"source": "metrics.json", "path": "$.latency.p50"}]}],
}


def test_list_view_help_saved_and_json_path_in_a_real_browser(
    tmp_path: Path, fake_llm: FakeLLM, config: JudgeConfig
) -> None:
    from playwright.sync_api import sync_playwright

    db = judged_with_queue(tmp_path / "list.db", [*RECORDS, JSON_RECORD], tmp_path, config)
    shots = Path(os.environ.get("CLAIM_JUDGE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    with judge_serve(db) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{base}/review/list")
            page.fill("#token", TOKEN)
            page.click("#login-form button[type=submit]")
            page.wait_for_url("**/review/list*")
            groups = page.locator("table#items tbody.answer-group")
            assert groups.count() == 4  # one table; an answer's claims together
            assert page.locator("tr.item").count() == 6
            assert "label:" not in page.inner_text("main")  # blind
            page.fill("#search", "b-en")
            page.click("#filters button[type=submit]")
            page.wait_for_url("**q=b-en*")
            assert page.locator("tr.item").count() == 2
            page.click("tr.item a")  # open an item from the list
            page.wait_for_url("**/review?*pos=*")
            assert page.locator("#guideline").is_visible()
            page.keyboard.press("?")
            assert page.locator("#shortcuts").is_visible()
            page.screenshot(path=str(shots / "review-help.png"))
            page.keyboard.press("Escape")
            assert not page.locator("#shortcuts").is_visible()
            page.keyboard.press("1")
            page.keyboard.press("Enter")
            page.wait_for_url("**saved=*")
            assert page.locator("#saved").is_visible()
            assert "Saved item" in page.inner_text("#saved")
            # the JSON item: the value at the cited path is marked
            page.goto(f"{base}/review/list?q=d-json")
            page.click("tr.item a")
            page.wait_for_url("**/review?*pos=*")
            assert page.locator(".source-text mark.hl-jsonpath").first.inner_text() == "120"
            page.screenshot(path=str(shots / "review-json-path.png"), full_page=True)
        finally:
            browser.close()


def test_html_report_renders_with_charts_in_a_real_browser(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from calibration import CalibrationItem, build_calibration_report, render_calibration_html

    labels = ["supported", "contradicted", "not_in_source", "not_verifiable"]
    items = [CalibrationItem(claim_id=f"c{k}", gold_label=labels[k % 4],
                             judge_label=labels[(k * 7) % 5 % 4], in_queue=k % 3 != 0,
                             dataset="中文資料集" if k % 2 else "english-set",
                             queue_position=k + 1, support=(k % 10) / 10)
             for k in range(80)]
    html = render_calibration_html(build_calibration_report(items, judge_version="v-示例",
                                                            n_resamples=50))
    from calibration.render import REPORT_SCRIPT

    # no network; the one script is the fixed filter script (no data in it)
    assert "http://" not in html
    assert "<script" not in html.replace(f"<script>{REPORT_SCRIPT}</script>", "")
    page_path = tmp_path / "calibration.html"
    page_path.write_text(html, encoding="utf-8")
    shots = Path(os.environ.get("CLAIM_JUDGE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(page_path.as_uri())
            charts = page.locator("svg.chart")
            assert charts.count() >= 3
            box = charts.first.bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 200
            assert "中文資料集" in page.inner_text("body")
            page.screenshot(path=str(shots / "calibration-report.png"), full_page=False)
        finally:
            browser.close()
