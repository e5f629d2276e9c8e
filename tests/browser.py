"""Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by selenium, for tests of report.html.

No browser is downloaded: the binary and its driver are the system's (.ci/run installs them where missing). Every
request the page makes is recorded from the performance log, every console message from the browser log.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path(shutil.which("chromedriver") or "/usr/bin/chromedriver")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", "--window-size=1400,1000",
)  # fmt: skip
ARTIFACTS = Path(os.environ.get("GLOBALTABLES_ARTIFACTS", Path(__file__).resolve().parents[1] / "artifacts"))


# selenium is given the driver and the binary: its manager must never look anything up on the network.
os.environ.setdefault("SE_OFFLINE", "true")


def require_chromium() -> None:
    if CHROMIUM.exists() and CHROMEDRIVER.exists():
        return
    message = f"headless Chromium is needed: {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs them (.ci/run): missing there is a broken setup, not a reason to skip
    pytest.skip(message)


@contextmanager
def chromium() -> Iterator:
    require_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        driver.quit()


def requested_urls(driver) -> list[str]:
    """Every URL the page asked the network stack for since the last call (performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]


def full_page_screenshot(driver, name: str) -> Path:
    """A PNG of the whole page, kept under ARTIFACTS."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(int(height), 1000), 16000))
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))
    return path
