"""The service's page in a real browser (SPEC 12): Debian's chromium, headless, driven by
selenium through chromium-driver, loads /, every tile's pictures load, and moving a control
changes the stream's option (seen in /api/streams) and its output picture. The screenshot is
kept in the build's test folder (page.png)."""
import shutil
import signal
import time

import cv2
import numpy as np
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from serve_support import TMP, TOKEN, Service, Source, stream_table, wait_until


@pytest.fixture(scope="module")
def served():
    base = TMP / "serve" / "page"
    base.mkdir(parents=True, exist_ok=True)
    bars = Source("udp", base, "smptebars=size=160x120:rate=15,eq=contrast=0.4:brightness=0.25").start()
    moving = Source("udp", base).start()
    service = Service(base, f'[server]\ntoken = "{TOKEN}"\n\n' + stream_table("bars", bars.url) +
                      stream_table("moving", moving.url))
    yield service, base
    service.stop(signal.SIGKILL)
    bars.stop()
    moving.stop()


@pytest.fixture(scope="module")
def browser():
    if not shutil.which("chromedriver") or not shutil.which("chromium"):
        pytest.fail("chromium and chromium-driver are needed (scripts/setup.sh installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1200,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=DriverService(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


def pictures_loaded(driver):
    return driver.execute_script(
        "const images = [...document.querySelectorAll('.tile img')];"
        "return images.length > 0 && images.every(i => i.complete && i.naturalWidth > 0);")


def test_the_page_shows_every_stream_and_a_control_changes_it(served, browser):
    service, base = served
    assert wait_until(30, lambda: all(s["state"] == "running" for s in service.streams().values())), \
        service.process.text()
    browser.get(service.url(f"/?token={TOKEN}"))
    assert wait_until(20, lambda: len(browser.find_elements(By.CSS_SELECTOR, ".tile")) == 2)
    assert wait_until(20, lambda: pictures_loaded(browser))
    assert len(browser.find_elements(By.CSS_SELECTOR, ".tile img")) == 4

    # The controls come from the options table: dcp's omega, a range with the table's bounds.
    omega = browser.find_element(By.ID, "control-bars-dcp.omega")
    assert omega.get_attribute("type") == "range"
    assert float(omega.get_attribute("max")) == 1.0
    assert Select(browser.find_element(By.ID, "control-bars-mode")).first_selected_option.text == "dcp"

    def output_picture():
        status, _, body = service.request("/api/streams/bars/snapshot.jpg?view=output")
        assert status == 200
        return cv2.imdecode(np.frombuffer(body, np.uint8), cv2.IMREAD_COLOR).astype(np.float64)

    before = output_picture()
    omega.click()  # focus, then the keyboard moves the slider to its lowest value
    omega.send_keys(Keys.HOME)
    assert wait_until(10, lambda: float(service.streams()["bars"]["options"]["dcp.omega"]) < 0.5), \
        service.streams()["bars"]["options"]
    time.sleep(1.0)
    assert np.abs(output_picture() - before).mean() > 2
    assert browser.find_element(By.CSS_SELECTOR, "#stream-bars .error").text == ""

    # The preset of the stream as TOML.
    browser.find_element(By.CSS_SELECTOR, "#stream-bars button").click()
    assert wait_until(10, lambda: "omega" in browser.find_element(By.CSS_SELECTOR, "#stream-bars pre").text)
    assert wait_until(10, lambda: pictures_loaded(browser))
    browser.save_screenshot(str(base / "page.png"))
    assert (base / "page.png").stat().st_size > 10000
