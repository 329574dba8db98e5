"""report.html in a real headless Chromium at 1400x900: after a failed audit, the summary box
and the first violation are on the first screen, without scrolling, and the violation's link
leads to its partition's timeline. The screenshot is saved next to the report.

The report is a real one: the pyarrow engine's audit of a corrupted snapshot with every input
(a previous snapshot and four brokers' states, so every chart is drawn above the fold's
competitors), written by write_reports.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from chunkraft.audit.arrow import run_audit
from chunkraft.audit.report import write_reports
from tests.support.audit_corruptions import CORRUPTIONS
from tests.support.audit_snapshots import write_scenario
from tests.support.browser import headless_chromium

WIDTH, HEIGHT = 1400, 900

_RECT = "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];"


def _visible(driver: WebDriver, element: WebElement) -> tuple[float, ...]:
    """The element's bounding rect, asserted to lie wholly inside the viewport (to within a
    pixel: a scrolled-to anchor may sit at a fractional offset)."""
    left, top, right, bottom = driver.execute_script(_RECT, element)
    assert bottom > top and right > left, "not rendered"
    assert left >= -1 and right <= WIDTH + 1 and top >= -1 and bottom <= HEIGHT + 1, (
        f"outside the {WIDTH}x{HEIGHT} viewport: {(left, top, right, bottom)}")
    return (left, top, right, bottom)


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    inputs = write_scenario(CORRUPTIONS["chunks.contiguous"](), root / "inputs")
    report = run_audit(inputs, CORRUPTIONS["chunks.contiguous"]().settings)
    assert report.exit_code() == 1 and report.diff is not None and report.broker_states
    write_reports(report, root / "report")
    return root / "report" / "report.html"


def test_summary_and_first_violation_are_visible_without_scrolling(report_page: Path) -> None:
    with headless_chromium(WIDTH, HEIGHT) as driver:
        driver.get(report_page.as_uri())
        assert driver.execute_script("return [window.innerWidth, window.innerHeight]") == [
            WIDTH, HEIGHT]
        assert driver.execute_script("return window.scrollY") == 0
        banner = driver.find_element(By.ID, "status")
        summary = driver.find_element(By.ID, "summary")
        first = driver.find_element(By.CSS_SELECTOR, "table.findings tbody tr")
        for element in (banner, summary, first):
            _visible(driver, element)
        assert "VIOLATIONS" in banner.text
        assert "Decided by: exit 1" in summary.text and "chunks.contiguous" in summary.text
        assert "chunks.contiguous" in first.text and "events" in first.text
        # the page is long (charts, timelines below): the test is about the fold, not luck
        assert driver.execute_script("return document.body.scrollHeight") > 3 * HEIGHT
        shot = report_page.with_name("report-1400x900.png")
        assert driver.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        link = first.find_element(By.LINK_TEXT, "timeline")
        target = link.get_attribute("href").rsplit("#", 1)[1]
        timeline = driver.find_element(By.ID, target)
        assert "events-0" in timeline.find_element(By.TAG_NAME, "svg").get_attribute(
            "aria-label")
        link.click()
        assert driver.execute_script("return window.scrollY") > HEIGHT
        _visible(driver, timeline.find_element(By.TAG_NAME, "svg"))
