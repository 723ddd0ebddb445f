"""A real annotator in a real browser (Debian chromium + chromedriver, headless, Selenium) on its own seat."""
from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotation import ls_server
from annotation.pull import pull
from annotation.push import push, read_tasks_record
from tiermap.formats.labels import read_labels
from tiermap.formats.layout import DatasetPaths

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[1] / ".tmp" / "test-artifacts"
A1, A2 = "annotator1@tiermap.local", "annotator2@tiermap.local"
TYPED = {"synonyms": "browser armchair, club chair", "depictions": "zebra stripes", "visually_similar": "plush sofa"}


@pytest.fixture
def browser() -> Iterator[object]:
    """Headless Debian Chromium driven by its own chromedriver (no driver download), offline flags."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
              "--disable-background-networking", "--disable-component-update", "--window-size=1400,1600"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=opts)
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def wait_for(fn, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    """Poll until fn() is truthy (returns it) or fail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = fn()
        except Exception:  # the page is still rendering
            got = None
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s")


def login(driver, url: str, email: str, password: str) -> None:  # type: ignore[no-untyped-def]
    """Log in through Label Studio's login form."""
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/user/login/")
    driver.find_element(By.NAME, "email").send_keys(email)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit], input[type=submit]").click()
    wait_for(lambda: "/user/login" not in driver.current_url)


def open_next_task(driver, url: str, pid: int) -> None:  # type: ignore[no-untyped-def]
    """The labelling stream's next task, with the project's instructions dismissed."""
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/projects/{pid}/data?labeling=1")
    wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "button[aria-label='Close modal']")).click()
    wait_for(lambda: len(driver.find_elements(By.TAG_NAME, "textarea")) == 3)


def test_annotator_labels_in_a_browser_and_pull_holds_exactly_that(ls_dataset: DatasetPaths, browser) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    ds = ls_dataset
    push(ds, ["room0"], 2, log=lambda *_: None)
    record = read_tasks_record(ds)
    s1, s2 = ls_server.seat_of(ds, A1), ls_server.seat_of(ds, A2)
    passwords = ls_server.read_simulated(ds)
    login(browser, s1.url, A1, passwords[A1])
    open_next_task(browser, s1.url, record.seats[A1].project_id)
    # The crop and the context view load (served from the crops folder through the seat's local-files storage).
    loaded = wait_for(lambda: [i for i in browser.find_elements(By.TAG_NAME, "img")
                               if browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", i)])
    assert len(loaded) >= 2
    header = wait_for(lambda: next(e.text for e in browser.find_elements(By.XPATH, "//*[starts-with(normalize-space(text()), 'Object ')]")))
    key = header.split("(")[1].rstrip(")")
    assert key in record.seats[A1].tasks
    for name, text in TYPED.items():
        area = browser.find_element(By.CSS_SELECTOR, f"textarea[name={name}]")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", area)
        area.send_keys(text)
        area.send_keys(Keys.SHIFT, Keys.ENTER)  # "Press Shift + Enter to Add"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "annotator_labelling.png"))
    submit = next(b for b in browser.find_elements(By.TAG_NAME, "button") if b.text.strip() == "Submit")
    submit.click()
    wait_for(lambda: len(read_export_annotations(ds, A1)) == 1)

    pull(ds, ["room0"])
    labels = read_labels(ds.labels / "labels.parquet")
    mine = labels[labels["annotator"] == A1]
    scene, oid = key.rsplit("/", 1)
    assert set(zip(mine["scene"], mine["object_id"])) == {(scene, int(oid))}
    got = {(c, lab) for c, lab in zip(mine["category"], mine["label"])}
    assert got == {("synonyms", "browser armchair"), ("synonyms", "club chair"), ("depictions", "zebra stripes"),
                   ("vis_sim", "plush sofa")}

    # Annotator 2, in a fresh browser session on its own seat, sees none of it.
    browser.delete_all_cookies()
    login(browser, s2.url, A2, passwords[A2])
    open_next_task(browser, s2.url, record.seats[A2].project_id)
    page = browser.page_source
    assert not any(w in page for w in ("browser armchair", "zebra stripes", "plush sofa"))
    browser.get(f"{s2.url}/projects/{record.seats[A2].project_id}/data")
    wait_for(lambda: "tiermap" in browser.page_source)
    assert not any(w in browser.page_source for w in ("browser armchair", "zebra stripes", "plush sofa"))
    browser.save_screenshot(str(ARTIFACTS / "second_annotator.png"))
    assert read_export_annotations(ds, A2) == []


def read_export_annotations(ds: DatasetPaths, who: str) -> list[dict]:  # type: ignore[type-arg]
    """Annotations on a seat's project, read by its admin."""
    from annotation.ls_client import Admin

    seat = ls_server.seat_of(ds, who)
    return [a for t in Admin(seat).export(read_tasks_record(ds).seats[who].project_id) for a in t["annotations"]]
