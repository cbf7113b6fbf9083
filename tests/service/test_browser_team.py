"""Two reviewers in real browsers at once on one ``judge serve``: each is given items the
other is not reviewing, a restart of the server keeps both logged in (and their open forms
valid), and the dashboard shows agreement per label. Debian's Chromium, as
:mod:`tests.service.test_browser`."""

from __future__ import annotations

from pathlib import Path

from judge.config import JudgeConfig
from judge.review.queue import queue_items
from judge.store import Store
from tests.fakes import FakeLLM
from tests.service.test_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    RECORDS,
    TOKEN,
    free_port,
    judge_serve,
    judged_with_queue,
)
from tests.service.test_browser import pytestmark as browser_marks

pytestmark = browser_marks
BOB_TOKEN = "browser-token-bob"


def _item(page) -> str | None:  # type: ignore[no-untyped-def]
    """The id of the item the page shows, None on a message page (all done, nothing free)."""
    field = page.locator("input[name=item_id]")
    return field.first.get_attribute("value") if field.count() else None


def _login(page, base: str, token: str) -> str | None:  # type: ignore[no-untyped-def]
    page.goto(f"{base}/review")
    page.fill("#token", token)
    with page.expect_navigation():
        page.click("#login-form button[type=submit]")
    assert "/login" not in page.url
    return _item(page)


def _save(page) -> str | None:  # type: ignore[no-untyped-def]
    """Label the shown item supported by keyboard and save; the next item given."""
    page.keyboard.press("1")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/login" not in page.url
    return _item(page)


def test_two_reviewers_share_a_queue_across_a_restart(
    tmp_path: Path, fake_llm: FakeLLM, config: JudgeConfig
) -> None:
    from playwright.sync_api import sync_playwright

    db = judged_with_queue(tmp_path / "team.db", RECORDS, tmp_path, config)
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{BOB_TOKEN}:bob\n", encoding="utf-8")
    port = free_port()
    given: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            # two people: two browser contexts, each with its own cookies
            alice = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
            bob = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
            with judge_serve(db, "--tokens-file", str(tokens), port=port) as base:
                a, b = _login(alice, base, TOKEN), _login(bob, base, BOB_TOKEN)
                assert a and b and a != b  # logged in at once, given different items
                given += [a, b]
                a = _save(alice)
                assert a and a not in given and a != b  # not bob's open item
                given.append(a)
            with judge_serve(db, "--tokens-file", str(tokens), port=port) as base:
                for page in (alice, bob):  # a restart: both still logged in, forms valid
                    page.reload()
                    assert "/login" not in page.url and _item(page)
                while a or b:  # each saves and is given the next free item
                    if a:
                        a = _save(alice)
                        given += [a] if a else []
                    if b:
                        b = _save(bob)
                        given += [b] if b else []
                    assert not (a and a == b)
                assert len(given) == len(set(given))  # no item was given twice
                bob.goto(f"{base}/dashboard")
                assert bob.locator("#agreement-by-label").count() == 1
                assert "/login" not in bob.url
        finally:
            browser.close()
    store = Store.open(db)
    try:
        items = queue_items(store, store.queue_row()["id"])  # type: ignore[index]
        assert all(i["reviews_required"] == 1 for i in items)
        assert all(i["state"] == "done" and len(i["reviewers"]) == 1 for i in items)
        assert {r for i in items for r in i["reviewers"]} == {"human:alice", "human:bob"}
    finally:
        store.close()
