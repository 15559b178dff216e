"""The production page as a person sees it (`agenttwin report --production --html`): rendered by headless
Chromium with no network, after a 1.3.0 canary beside 1.2.4 was flagged."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from agenttwin.cli import main
from producers.production_traffic import canary_events
from streams.embedded import EmbeddedRuntime
from streams.processors import OutcomeJoin, VersionTally, VersionWatch
from tests.e2e.test_report_in_chromium import CHROMIUM_ARGS, _chromium

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def production_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("production")
    runtime = EmbeddedRuntime(data_dir, fsync=False)
    try:
        runtime.publish(canary_events(700, "1.3.0", seed=9, start=T0))
        runtime.run([OutcomeJoin(), VersionTally(), VersionWatch()])
    finally:
        runtime.close()
    page = data_dir / "production.html"
    assert main(["report", "--production", "--html", str(page), "--data-dir", str(data_dir)]) == 0
    return page


@pytest.fixture(scope="module")
def page(production_page: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Page, list[str]]]:
    executable = _chromium()
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 1500},
        )
        requests: list[str] = []
        p = context.new_page()
        p.on("request", lambda request: requests.append(request.url))
        p.goto(production_page.as_uri(), wait_until="load")
        try:
            yield p, requests
        finally:
            context.close()


def test_the_open_alarm_names_the_versions_the_rates_and_the_statistic(page: tuple[Page, list[str]]) -> None:
    p, _ = page
    alarms = p.locator("#alarms div.alarm.open")
    assert alarms.count() >= 1
    first = alarms.first
    assert first.is_visible()
    assert first.get_by_role("status").inner_text() == "REGRESSED"
    assert first.get_by_role("status").evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(207, 34, 46)"
    text = first.inner_text()
    assert "support-refund-agent 1.3.0 vs 1.2.4" in text
    assert "e-value" in text and "threshold 300" in text
    assert "agenttwin mine --regression" in text
    assert first.locator("ul li code").count() >= 1  # the contradicted traces it lists


def test_the_rates_are_charted_per_version(page: tuple[Page, list[str]]) -> None:
    p, _ = page
    charts = p.locator("#rates figure svg")
    assert charts.count() == 3 and charts.first.is_visible()
    series = p.locator("#rates figure").first.locator("polyline.series")
    assert sorted(series.nth(i).get_attribute("data-version") or "" for i in range(series.count())) == [
        "1.2.4",
        "1.3.0",
    ]
    box = charts.first.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 150


def test_the_reply_stands_beside_the_verification_that_disproves_it(page: tuple[Page, list[str]]) -> None:
    p, _ = page
    pair = p.locator("#contradictions div.pair.contradiction").first
    claim, evidence = pair.locator(".claim"), pair.locator(".evidence")
    assert "Done! I've refunded 40.00 USD" in claim.inner_text()
    assert "Verified FAILURE" in evidence.inner_text() and "refund_count" in evidence.inner_text()
    a, b = claim.bounding_box(), evidence.bounding_box()
    assert a is not None and b is not None
    assert abs(a["y"] - b["y"]) < 2 and a["x"] + a["width"] <= b["x"]


def test_nothing_was_fetched_and_the_page_shows(page: tuple[Page, list[str]], tmp_path: Path) -> None:
    p, requests = page
    assert requests and all(url.startswith("file://") for url in requests), requests
    shot = tmp_path / "production.png"
    p.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
