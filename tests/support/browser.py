"""A real headless Chromium for browser tests, driven through Selenium and ChromeDriver.

Debian's chromium and chromium-driver are installed by scripts/system-packages. The driver is
named explicitly, so Selenium never tries to download one (this machine's network is closed),
and Chromium starts with its background networking off for the same reason. Each browser gets
a new empty profile directory, removed when it quits.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

__all__ = ["CHROMEDRIVER", "CHROMIUM", "chromium_available", "headless_chromium"]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
)


def chromium_available() -> bool:
    """Whether both Chromium and its driver are installed (scripts/system-packages does)."""
    return shutil.which(CHROMIUM) is not None and shutil.which(CHROMEDRIVER) is not None


@contextlib.contextmanager
def headless_chromium(width: int = 1400, height: int = 900) -> Iterator[webdriver.Chrome]:
    """A Chrome WebDriver on a fresh profile whose viewport is exactly width by height CSS pixels.

    The browser and its driver process are quit on exit, and the profile directory removed.
    """
    profile = tempfile.mkdtemp(prefix="chunkraft-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in _FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(30)
        # --window-size sizes the window, whose viewport is smaller; set the viewport itself.
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
