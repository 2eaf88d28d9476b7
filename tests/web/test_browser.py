"""The memory page in a real headless Chromium (Debian's, driven by Playwright), on the
demo's imported memory: token, timeline and chart, search with quoted lines, a profile and
the note behind a fact, removing that fact, and the corrections log.

With ``VIVY_DOC_SCREENSHOTS=1`` the SQLite run writes its screenshots into ``docs/images/``
for docs/memory-page.md; otherwise into the test's temporary folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.machine import wait_for_machine_packages
from tests.web.conftest import MANAGER_TOKEN, DemoPage

sync_api = pytest.importorskip("playwright.sync_api")

#: Debian's Chromium; browser builds cannot be downloaded here, so Playwright uses it.
CHROMIUM = Path("/usr/bin/chromium")
#: Flags that let Chromium run headless as root in a container, offline.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One headless Chromium for the module, with a fresh profile folder (skipped without
    Debian's chromium, once ``scripts/check`` has had its chance to install it)."""
    wait_for_machine_packages()
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is missing")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            args=FLAGS,
            viewport={"width": 900, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


def test_a_manager_reads_and_corrects_the_memory(
    browser: object, demo_page: DemoPage, tmp_path: Path
) -> None:
    """Enter the token, open the guild, see the timeline and chart, search a question and
    see the right note with its quoted lines, open Sam's profile and follow a fact to its
    note, remove that fact and see it gone from the profile and from search, and find the
    correction in the log."""
    shots = (
        DOCS_IMAGES
        if os.environ.get("VIVY_DOC_SCREENSHOTS") and demo_page.engine == "sqlite"
        else tmp_path
    )
    page = browser.new_page()  # type: ignore[attr-defined]
    page.on("dialog", lambda dialog: dialog.accept())
    expect = sync_api.expect
    try:
        page.goto(demo_page.server.url + "/")
        expect(page.locator("#token-form")).to_be_visible()
        page.fill("#token", "not-the-token-at-all")
        page.click("#token-form button")
        expect(page.locator("#token-error")).to_have_text("That token was refused.")
        page.fill("#token", MANAGER_TOKEN)
        page.click("#token-form button")
        expect(page.locator("#guilds")).to_contain_text(f"Night Owls ({demo_page.guild})")
        page.screenshot(path=str(shots / "memory-page-guilds.png"))

        page.click(f"a[href='#/g/{demo_page.guild}/timeline']")
        expect(page.locator("#activity-chart")).to_be_visible()
        assert page.locator("#activity-chart rect.n").count() == 30
        expect(page.locator("#timeline .day").first).to_be_visible()
        expect(page.locator("#timeline")).to_contain_text("Sam's dog Bento")
        assert MANAGER_TOKEN not in page.url
        page.screenshot(path=str(shots / "memory-page-timeline.png"), full_page=True)

        page.click("nav a[data-view=search]")
        page.fill("input[name=q]", "what is the name of Sam's dog?")
        page.press("input[name=q]", "Enter")
        first = page.locator("#hits .hit").first
        expect(first).to_contain_text("Bento")
        expect(first.locator(".parts")).to_contain_text("score")
        expect(first.locator("blockquote.quote").first).to_be_visible()
        expect(first).to_contain_text("my dog is named Bento")
        page.screenshot(path=str(shots / "memory-page-search.png"), full_page=True)

        page.click("nav a[data-view=members]")
        page.click("#members a:text-is('Sam')")
        fact = page.locator("#facts li.fact", has_text="Bento").first
        expect(fact).to_be_visible()
        fact_text = fact.inner_text().split(" — ")[0].strip()
        page.screenshot(path=str(shots / "memory-page-profile.png"), full_page=True)
        _search(page, "Bento")
        expect(page.locator("#fact-hits")).to_contain_text(fact_text)

        page.click("nav a[data-view=members]")
        page.click("#members a:text-is('Sam')")
        page.locator("#facts li.fact", has_text=fact_text).first.locator("a.source").click()
        expect(page.locator("#view h1")).to_contain_text("Bento")
        expect(page.locator("#evidence")).to_contain_text("my dog is named Bento")
        page.screenshot(path=str(shots / "memory-page-note.png"), full_page=True)

        page.go_back()
        page.locator("#facts li.fact", has_text=fact_text).first.locator("button").click()
        expect(page.locator("#notice")).to_contain_text("Removed the fact")
        expect(page.locator("#facts")).not_to_contain_text(fact_text)
        expect(page.locator("#history")).to_contain_text("removed on the memory page by alice")

        _search(page, "Bento")
        expect(page.locator("#hits .hit").first).to_contain_text("Bento")
        assert page.locator("#fact-hits li", has_text=fact_text).count() == 0

        page.click("nav a[data-view=corrections]")
        row = page.locator("#corrections tbody tr").first
        expect(row).to_contain_text("alice")
        expect(row).to_contain_text(re.compile(r"Removed fact #\d+ \(\w+\) of Sam \(\d+\): "))
        expect(row.locator("q")).to_have_text(fact_text)
        page.screenshot(path=str(shots / "memory-page-corrections.png"), full_page=True)

        page.click("nav a[data-view=health]")
        expect(page.locator("#health")).to_contain_text("Messages kept as evidence")
        expect(page.locator("#jobs")).to_contain_text("clusters")
        page.screenshot(path=str(shots / "memory-page-health.png"), full_page=True)
    finally:
        page.close()


def test_mentions_notices_and_errors(browser: object, demo_page: DemoPage) -> None:
    """Quoted lines show mentions as names; removing a note says so on the timeline it
    returns to; a link to a missing note shows its error instead of the previous view."""
    page = browser.new_page()  # type: ignore[attr-defined]
    page.on("dialog", lambda dialog: dialog.accept())
    expect = sync_api.expect
    try:
        page.goto(demo_page.server.url + "/")
        page.fill("#token", MANAGER_TOKEN)
        page.click("#token-form button")
        page.click(f"a[href='#/g/{demo_page.guild}/timeline']")
        _search(page, "grab tacos")
        hit = page.locator("#hits .hit", has_text="we should finally grab tacos").first
        expect(hit).to_contain_text("@Alex we should finally grab tacos")
        assert "<@" not in page.locator("#hits").inner_text()

        hit.locator("a").first.click()
        expect(page.locator("#evidence")).to_contain_text("@Alex we should finally grab tacos")
        note_url = page.url
        page.click("text=Remove this note")
        expect(page.locator("#notice")).to_contain_text("Removed the note")
        expect(page.locator("#activity-chart")).to_be_visible()
        expect(page.locator("#notice")).to_be_visible()

        _search(page, "grab tacos")
        page.goto(note_url)
        expect(page.locator("#notice")).to_contain_text("this guild has no such note")
        assert page.locator("#view").inner_html().strip() == ""
    finally:
        page.close()


def _search(page: object, question: str) -> None:
    """Open the search view and ask ``question``; return once its notes are listed."""
    page.click("nav a[data-view=search]")  # type: ignore[attr-defined]
    page.fill("input[name=q]", question)  # type: ignore[attr-defined]
    page.press("input[name=q]", "Enter")  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#hits")).to_be_visible()  # type: ignore[attr-defined]
