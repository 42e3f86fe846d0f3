"""The web page of ``memdir serve --claude-code`` in headless Chromium (as tests/server/test_browser.py runs it).

A person signs in with the token serve printed, sees every project's and agent's memory with what needs a look,
switches between them with the picker, reads and restores a file Claude Code changed, and searches them all.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from backends import LiveServer
from memdir.claudecode import snapshot
from memdir.server.routers.claude_code import prepare
from server.test_browser import CHROMIUM, DESKTOP, Watch

from .helpers import Layout

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (.ci/run installs it with apt-get)"
)


def test_every_claude_code_directory_in_one_page(
    browser: Browser, layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / "config.toml"
    settings.write_text('[search]\nmode = "fts"\n', encoding="utf-8")  # no embedding model to load in a test
    monkeypatch.setenv("MEMDIR_CONFIG", str(settings))
    snapshot()
    note = layout.app_memory / "feedback_testing.md"
    note.write_text(note.read_text().replace("Run pytest with -x.", "Run pytest with -x, and the linters."))
    snapshot()  # what Claude Code wrote is a version now
    config, secret, _ = prepare(rate=0)
    with LiveServer(config) as live:
        context = browser.new_context(viewport=DESKTOP)
        context.set_default_timeout(15_000)
        page = context.new_page()
        watch = Watch(page)
        page.goto(live.url + "/")
        page.get_by_label("Token", exact=True).fill(secret)
        page.get_by_role("button", name="Sign in").click()
        picker = page.get_by_label("Memory directory")
        expect(picker).to_be_visible()
        assert secret not in page.url
        overview(page, layout, tmp_path)
        switches_and_restores(page, layout)
        searches_everywhere(page, layout)
        assert watch.problems == []
        page.get_by_role("button", name="Sign out").click()
        assert page.evaluate("sessionStorage.length") == 0


def overview(page: Page, layout: Layout, tmp_path: Path) -> None:
    page.get_by_role("link", name="Claude Code", exact=True).click()
    expect(page.get_by_role("heading", name="Claude Code memory")).to_be_visible()
    cards = page.locator("article[data-namespace]")
    expect(cards).to_have_count(7)
    assert [t.strip() for t in cards.locator("h2").all_inner_texts()] == [
        "app", "blog", "cloned", "scratch", "planner (local, app)", "planner (project, app)", "reviewer (user)"
    ]  # fmt: skip
    app = cards.filter(has_text=f"project {layout.app}").first
    expect(app).to_contain_text("MEMORY.md: lines 201–230 not loaded")
    expect(app).to_contain_text("1 secret")
    expect(app).to_contain_text("api_access.md line 7: github-token")
    expect(app).to_contain_text("broken.md")
    expect(page.locator(".notice")).to_contain_text("the workspace is not trusted")
    page.screenshot(path=str(tmp_path / "claude-code-overview.png"))


def switches_and_restores(page: Page, layout: Layout) -> None:
    page.get_by_role("link", name="blog", exact=True).click()
    expect(page.get_by_role("treeitem", name=re.compile(r"^style\.md, version"))).to_be_visible()
    page.get_by_label("Memory directory").select_option(label="app")
    item = page.get_by_role("treeitem", name=re.compile(r"^feedback_testing\.md, version"))
    item.click()
    expect(page.get_by_role("list", name="Text of /memories/feedback_testing.md")).to_contain_text("the linters")
    page.get_by_role("link", name="History").click()
    rows = page.locator("table tbody tr")
    expect(rows.first).to_contain_text("claude-code")
    page.get_by_role("button", name=re.compile(r"^Restore version \d+")).last.click()
    page.get_by_role("button", name="Restore", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Restored version")
    assert (layout.app_memory / "feedback_testing.md").read_text().endswith("Run pytest with -x.\n")


def searches_everywhere(page: Page, layout: Layout) -> None:
    page.get_by_role("searchbox", name="Search memory").fill("spelling prefers")
    page.keyboard.press("Enter")
    results = page.locator(".results article")
    expect(results.first).to_be_visible()
    found = {(chip.strip(), path.strip()) for chip, path in zip(
        results.locator("h2 .chip").all_inner_texts(), results.locator("h2 a").all_inner_texts(), strict=True
    )}  # fmt: skip
    assert ("blog", "/memories/style.md") in found  # "British spelling" in the blog's style note
    assert ("scratch", "/memories/MEMORY.md") in found  # "prefers tabs" in the scratch project's index
    results.filter(has_text="/memories/style.md").first.get_by_role("link").first.click()
    expect(page.get_by_role("heading", name="style.md")).to_be_visible()
    expect(page.get_by_label("Memory directory")).to_have_value(re.compile(r"^blog-"))
