"""The demo story's HTML report as a person sees it: rendered by a real headless Chromium (Debian's package,
driven by Playwright), with no network. The screenshot it takes is the README's (docs/report.png when
AGENTTWIN_WRITE_DOCS_SCREENSHOT=1)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from agenttwin.cli import main

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DIVERGENCE = (
    "At step 2 the baseline called get_refund_policy(order_id=ORD-1001); "
    "the candidate called refund_payment(amount=40, order_id=ORD-1001)."
)


def _chromium() -> str:
    """Debian's chromium; installed here when missing and we may (CI runs as root), else a loud failure."""
    if not Path(CHROMIUM).exists() and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=900)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, timeout=1800)
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium)")
    return CHROMIUM


@pytest.fixture(scope="module")
def story_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("story")
    capture = data_dir / "stdout.txt"
    import contextlib

    with capture.open("w") as stream, contextlib.redirect_stdout(stream):
        assert main(["demo", "--data-dir", str(data_dir)]) == 0
    last = capture.read_text().strip().splitlines()[-1]
    assert last.startswith("HTML report of the story: ")  # the demo ends by printing the report's path
    path = Path(last.split(": ", 1)[1])
    assert path.is_file()
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    executable = _chromium()
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh --user-data-dir
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 1500},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def page(browser: BrowserContext, story_report: Path) -> Iterator[tuple[Page, list[str]]]:
    requests: list[str] = []
    page = browser.new_page()
    page.on("request", lambda request: requests.append(request.url))
    page.goto(story_report.as_uri(), wait_until="load")
    yield page, requests
    page.close()


def test_the_block_badge_and_the_first_divergence_are_what_a_person_sees(page: tuple[Page, list[str]]) -> None:
    p, _ = page
    badges = p.get_by_role("status")
    assert badges.count() == 2
    assert badges.nth(0).inner_text() == "BLOCK" and badges.nth(0).is_visible()
    assert badges.nth(1).inner_text() == "PASS"
    assert badges.nth(0).bounding_box()["y"] < 200  # at the top, before anything else  # type: ignore[index]
    color = badges.nth(0).evaluate("e => getComputedStyle(e).backgroundColor")
    assert color == "rgb(207, 34, 46)"  # the BLOCK red
    case = p.locator("details#ev-53eafe442d531320-refund-timeout-after-mutation")
    sentence = case.locator("p.divergence")
    assert sentence.is_visible() and sentence.inner_text() == DIVERGENCE
    row = case.locator("tr.diverged")
    assert row.count() == 1 and row.is_visible()
    cells = row.locator("td")
    assert "first divergence" in cells.nth(0).inner_text()
    assert cells.nth(1).inner_text().startswith("get_refund_policy(order_id=ORD-1001)")
    assert cells.nth(2).inner_text().startswith("refund_payment(amount=40, order_id=ORD-1001)")
    assert "orders.ORD-1001.refund_count" in case.locator("table.state").inner_text()


def test_the_reply_stands_beside_the_evidence_that_disproves_it(page: tuple[Page, list[str]]) -> None:
    p, _ = page
    pair = p.locator("div.pair.contradiction").first
    claim, evidence = pair.locator(".claim"), pair.locator(".evidence")
    assert "Done! I've refunded 40.00 USD" in claim.inner_text()
    assert "refund_count: expected 1, got 2" in evidence.inner_text()
    a, b = claim.bounding_box(), evidence.bounding_box()
    assert a is not None and b is not None
    assert abs(a["y"] - b["y"]) < 2 and a["x"] + a["width"] <= b["x"]  # side by side, claim on the left
    charts = p.locator("figure svg")
    assert charts.count() >= 3 and charts.first.is_visible()  # classifications and moved metrics, inline SVG


def test_nothing_was_fetched_and_a_screenshot_was_taken(page: tuple[Page, list[str]], tmp_path: Path) -> None:
    p, requests = page
    assert requests and all(url.startswith("file://") for url in requests), requests
    shot = tmp_path / "report.png"
    p.screenshot(path=str(shot), full_page=False)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
    if os.environ.get("AGENTTWIN_WRITE_DOCS_SCREENSHOT") == "1":
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copyfile(shot, ROOT / "docs" / "report.png")
