"""The site in a real browser: Debian's chromium, headless, driven by Selenium through Debian's
chromedriver (nothing is downloaded). From file:// it searches for a row id, follows the result to
the row, and from the row to its scenario's sequence diagram; on every page no request leaves the
machine (every performance entry is a file: URL) and the console shows no error. Screenshots go to
docs/screenshots/site-*.png.

Skipped, with the reason, only where chromium or chromedriver is absent (scripts/setup.sh installs
both in CI).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from render.site import build_site

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "screenshots"
ROW = "Stable/JoinGroup/leader-rejoin"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "site"
    build_site(out)
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1360,1000", "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def requests_made(driver: Any) -> list[str]:
    """Every URL the page loaded: its navigation and every resource."""
    urls: list[str] = driver.execute_script(
        "return performance.getEntriesByType('navigation').concat("
        "performance.getEntriesByType('resource')).map(function (e) { return e.name; });")
    return urls


def assert_offline_and_clean(driver: Any) -> None:
    urls = requests_made(driver)
    assert urls, "the page reported no performance entries at all"
    assert all(u.startswith("file:") for u in urls), [u for u in urls if not u.startswith("file:")]
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert errors == [], errors


def shot(driver: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(SHOTS / f"site-{name}.png"))


def test_search_row_then_its_scenario_diagram_offline(site: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 20)
    browser.get((site / "index.html").as_uri())
    assert_offline_and_clean(browser)
    assert browser.find_element(By.CSS_SELECTOR, ".diagram svg")  # the state diagram is drawn
    shot(browser, "index")

    box = browser.find_element(By.ID, "search")
    box.send_keys(ROW)
    first = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#results a.result")))
    assert first.text == ROW
    shot(browser, "search")

    first.click()
    wait.until(lambda d: d.current_url.endswith(".html#" + ROW))
    assert browser.current_url.startswith((site / "state-Stable.html").as_uri())
    row = browser.find_element(By.ID, ROW)
    assert browser.execute_script("return document.querySelector(':target') === arguments[0];", row)
    assert "GC:473-477" in row.text and "PreparingRebalance" in row.text
    assert_offline_and_clean(browser)
    shot(browser, "row")

    scenario = row.find_element(By.CSS_SELECTOR, "a.scenario")
    name = scenario.text
    scenario.click()
    wait.until(lambda d: "/scenarios/" in d.current_url)
    assert browser.find_element(By.TAG_NAME, "h1").text == name
    assert browser.find_elements(By.CSS_SELECTOR, ".diagram svg")
    assert_offline_and_clean(browser)
    shot(browser, "scenario")

    # and back: the diagram's step links to the row's page on the site
    back = browser.find_elements(By.CSS_SELECTOR, f'svg a[href$="#{ROW}"]')
    assert back, "the sequence diagram does not link the step that fired the row"


def test_enter_opens_the_first_result(site: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get((site / "index.html").as_uri())
    browser.find_element(By.ID, "search").send_keys("GC:1174", Keys.ENTER)
    WebDriverWait(browser, 20).until(lambda d: "glossary.html#cite-GC-1174" in d.current_url)
    assert_offline_and_clean(browser)


def test_other_pages_open_cleanly(site: Path, browser: Any) -> None:
    for page in ("invariants", "profiles", "historical", "glossary", "scenarios", "state-CompletingRebalance"):
        browser.get((site / f"{page}.html").as_uri())
        assert_offline_and_clean(browser)
        if page in ("invariants", "profiles", "state-CompletingRebalance"):
            shot(browser, page.replace("state-", "state-").lower())


def test_a_remote_request_or_console_error_is_caught(site: Path, browser: Any, tmp_path: Path) -> None:
    """Negative control: a page that loads a script from the network and logs an error fails both
    checks (the request fails offline, but it is still an entry, and its failure is an error)."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><script src="http://127.0.0.1:9/x.js"></script>'
                    "</head><body><script>console.error('boom')</script></body></html>")
    browser.get(page.as_uri())
    urls = requests_made(browser)
    assert any(not u.startswith("file:") for u in urls), urls
    errors = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert any("boom" in e.get("message", "") for e in errors), errors
