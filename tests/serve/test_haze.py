"""The service's haze index and auto defog (SPEC 13): the hazy sample clip and a clear picture as
preview-only streams (both looped) beside an he stream; hazefree_haze_index and
hazefree_dcp_omega through the Prometheus client's own parser; haze_index, omega and
haze_history in /api/streams; PATCHes of dcp.auto_strength followed by the omega reported; and
the page's plot and auto strength control in headless chromium."""
import json
import math
import pathlib
import shutil
import signal
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.common.by import By

from serve_support import TMP, TOKEN, Service, wait_until

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
OMEGA = 0.9  # the DCP streams' configured omega


def still_table(name, path, extra):
    return (f'[[stream]]\nname = "{name}"\ninput = "{path}"\nbackend = "cpu"\nthreads = 1\n{extra}\n')


@pytest.fixture(scope="module")
def service():
    base = TMP / "serve" / "haze"
    base.mkdir(parents=True, exist_ok=True)
    dcp = f"[stream.dcp]\nomega = {OMEGA}\n"
    config = (f'[server]\ntoken = "{TOKEN}"\n\n' +
              still_table("hazy", SAMPLES / "hazy-street.mp4", dcp) +
              # A still file is a clip of one picture: the service shows it again and again.
              still_table("clear", SAMPLES / "images" / "coffee.png", dcp + "auto_strength = true\n") +
              still_table("plain", SAMPLES / "images" / "coffee.png", 'mode = "he"\n'))
    served = Service(base, config)
    assert wait_until(20, lambda: all(s["haze_index"] is not None for name, s in served.streams().items()
                                      if name != "plain")), served.process.text()
    yield served
    served.stop(signal.SIGKILL)


def metric_samples(service, family_name):
    status, _, body = service.request("/metrics", token="")
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    family = families[family_name]
    assert family.type == "gauge"
    return {sample.labels["stream"]: sample.value for sample in family.samples}


def omega_after_new_frames(service, name, frames=10):
    """The omega reported once `frames` more frames were written (the changes taken by then)."""
    start = service.streams()[name]["frames"]
    assert wait_until(15, lambda: service.streams()[name]["frames"] >= start + frames), service.streams()[name]
    return service.streams()[name]["omega"]


def test_the_metrics_give_the_haze_index_of_each_dcp_stream(service):
    index = metric_samples(service, "hazefree_haze_index")
    omega = metric_samples(service, "hazefree_dcp_omega")
    assert set(index) == {"hazy", "clear"} and set(omega) == {"hazy", "clear"}  # none for the he stream
    assert set(metric_samples(service, "hazefree_atmospheric_light")) == {"hazy", "clear"}  # one a channel
    # The thresholds themselves are the kernels' (their tests); here the omega shows which side each is on.
    assert 0 < index["hazy"] <= 1 and 0 <= index["clear"] < index["hazy"] / 2, index
    assert math.isclose(omega["hazy"], OMEGA, rel_tol=1e-6), omega  # auto strength off
    assert omega["clear"] == 0, omega  # auto strength on, a clear scene: no dehazing


def test_the_api_gives_the_index_the_omega_and_the_history(service):
    assert wait_until(10, lambda: len(service.streams()["hazy"]["haze_history"]) >= 3)
    streams = service.streams()
    hazy, plain = streams["hazy"], streams["plain"]
    assert 0 < hazy["haze_index"] <= 1 and math.isclose(hazy["omega"], OMEGA, rel_tol=1e-6), hazy
    times = [t for t, _ in hazy["haze_history"]]
    assert times == sorted(times) and all(b - a >= 0.9 for a, b in zip(times, times[1:])), times  # one a second
    assert time.time() - 300 <= times[0] and times[-1] <= time.time() + 1, times
    assert all(0 < h <= 1 for _, h in hazy["haze_history"]), hazy["haze_history"]
    assert plain["haze_index"] is None and plain["omega"] is None and plain["haze_history"] == [], plain
    assert plain["atmospheric_light"] is None and len(hazy["atmospheric_light"]) == 3, plain
    assert plain["frames"] > 0


def test_turning_auto_strength_on_and_off_the_omega_follows(service):
    # The hazy clip is above the dense threshold: auto strength keeps the configured omega.
    status, _, body = service.request("/api/streams/hazy/options", "PATCH", '{"dcp.auto_strength": true}')
    assert status == 200 and json.loads(body)["options"]["dcp.auto_strength"] == "true", body
    assert math.isclose(omega_after_new_frames(service, "hazy"), OMEGA, rel_tol=1e-6)
    hazy = service.streams()["hazy"]
    assert hazy["state"] == "running" and hazy["error"] == "" and 0 < hazy["haze_index"] <= 1, hazy
    # The clear picture: 0 with auto strength, the configured omega without, 0 again.
    for auto, expected in (("false", OMEGA), ("true", 0.0)):
        status, _, body = service.request("/api/streams/clear/options", "PATCH", f'{{"dcp.auto_strength": {auto}}}')
        assert status == 200, body
        assert wait_until(15, lambda: math.isclose(service.streams()["clear"]["omega"], expected, abs_tol=1e-6)), \
            (auto, service.streams()["clear"])
        assert metric_samples(service, "hazefree_dcp_omega")["clear"] == pytest.approx(expected, abs=1e-6)
    # A value that is not a boolean: 400 with its one line, nothing changed.
    status, _, body = service.request("/api/streams/clear/options", "PATCH", '{"dcp.auto_strength": "maybe"}')
    assert status == 400 and "dcp.auto_strength" in json.loads(body)["error"], body
    assert service.streams()["clear"]["options"]["dcp.auto_strength"] == "true"


@pytest.fixture(scope="module")
def browser():
    if not shutil.which("chromedriver") or not shutil.which("chromium"):
        pytest.fail("chromium and chromium-driver are needed (scripts/setup.sh installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1200,1400"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=DriverService(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


def plot_points(browser, name):
    """The points of a stream's plotted line, as (x, y) in the plot's 300 x 60."""
    d = browser.execute_script(
        f"const p = document.querySelector('#haze-plot-{name} path.line'); return p ? p.getAttribute('d') : null;")
    if not d:
        return []
    numbers = d.replace("M", " ").replace("L", " ").split()
    return [(float(x), float(y)) for x, y in zip(numbers[::2], numbers[1::2])]


def test_the_page_plots_the_index_and_has_the_auto_strength_control(service, browser):
    status, _, body = service.request("/")
    assert status == 200 and b"haze-plot" in body
    browser.get(service.url(f"/?token={TOKEN}"))
    assert wait_until(20, lambda: len(plot_points(browser, "hazy")) >= 3), plot_points(browser, "hazy")
    points = plot_points(browser, "hazy")
    assert all(0 <= x <= 300 and 0 <= y <= 60 for x, y in points), points
    assert points[-1][0] > 290, points  # the latest sample at the right edge
    assert browser.find_element(By.ID, "haze-value-hazy").text.startswith("haze index 0.")
    assert browser.find_elements(By.CSS_SELECTOR, "#stream-plain .haze-plot") == []  # he: no plot

    # The control comes from the options table: a checkbox, as the stream has it.
    checkbox = browser.find_element(By.ID, "control-clear-dcp.auto_strength")
    assert checkbox.get_attribute("type") == "checkbox" and checkbox.is_selected()
    checkbox.click()
    assert wait_until(10, lambda: service.streams()["clear"]["options"]["dcp.auto_strength"] == "false")
    assert wait_until(15, lambda: math.isclose(service.streams()["clear"]["omega"], OMEGA, abs_tol=1e-6))
    assert wait_until(5, lambda: "omega 0.90" in browser.find_element(By.ID, "haze-value-clear").text)
    assert browser.find_element(By.CSS_SELECTOR, "#stream-clear .error").text == ""
    browser.execute_script("document.getElementById('stream-hazy').scrollIntoView()")
    browser.save_screenshot(str(TMP / "serve" / "haze" / "page.png"))
