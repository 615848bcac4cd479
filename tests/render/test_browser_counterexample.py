"""A counterexample page in a real browser: Debian's chromium, headless, driven by Selenium with
Debian's chromium-driver (nothing is downloaded). The page, written by `groupspec check --html`
for a mutant, loads from file://, logs no console error, requests nothing but file: URLs, names
the violated invariant, draws every step with every label inside the diagram; the screenshot is
saved to docs/screenshots/counterexample.png. Skipped, with the reason, only where chromium or
its driver is absent (CI installs both)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from model.atomic import write_bytes_atomic

from groupspec.cli import main

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "screenshots" / "counterexample.png"
MUTANT, INVARIANT = "check.mutants:join-answered-and-parked", "one-response-per-request"

pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)),
                                reason=f"needs Debian's chromium ({CHROMIUM}) and chromium-driver ({DRIVER})")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1500", "--hide-scrollbars", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def check_page(tmp_path: Path) -> tuple[Path, int]:
    """`groupspec check --html` on the mutant: the page and the counterexample's step count."""
    page = tmp_path / "counterexample.html"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", "--table", MUTANT, "--stop-at-first-violation", "--quiet", "--html", str(page)])
    assert code == 1, err.getvalue()
    steps = len([line for line in out.getvalue().split("VIOLATION", 1)[1].split("\n\n")[0].splitlines()
                 if re.match(r"^\s+\d+\. ", line)])
    return page, steps


def requested_urls(driver: Any) -> list[str]:
    urls = [str(u) for u in driver.execute_script(
        "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
        ".map(e => e.name).concat([document.URL]);")]
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def test_the_counterexample_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    page, steps = check_page(tmp_path)
    browser.get(page.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert browser.title.startswith(f"{INVARIANT} violated")
    named = browser.find_element("css selector", ".violation .invariant").text
    assert named == INVARIANT
    assert browser.find_element("css selector", ".violation").is_displayed()
    assert len(browser.find_elements("css selector", "svg g.step")) == steps > 0
    # every arrow label lies inside the diagram (none cut off at its left or right edge)
    outside = browser.execute_script("""
        const svg = document.querySelector('svg'); const w = svg.viewBox.baseVal.width;
        return [...svg.querySelectorAll('text')].map(t => t.getBBox())
            .filter(b => b.x < 0 || b.x + b.width > w).length;""")
    assert outside == 0
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    urls = requested_urls(browser)
    assert urls and all(u.startswith("file:") for u in urls), urls  # nothing left the machine
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(int(height) + 20, 2400))  # the whole page, not a blank tail
    write_bytes_atomic(str(SCREENSHOT), browser.get_screenshot_as_png())


def test_the_browser_checks_can_fail(browser: Any, tmp_path: Path) -> None:
    """Negative control: a page that loads a remote font and logs an error, and names no
    invariant, fails each check above."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><title>x</title>"
                   "<link rel='stylesheet' href='http://127.0.0.1:9/font.css'></head>"
                   "<body><script>console.error('broken')</script><p>no invariant here</p></body></html>")
    browser.get(bad.as_uri())
    assert browser.find_elements("css selector", ".violation .invariant") == []
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not all(u.startswith("file:") for u in requested_urls(browser))
