"""report.html in a real headless Chromium: it loads from disk with no console errors and no network request, its
charts render with data, the fault windows are shaded on the time charts, the ledger table sorts, the key explorer
shows a key's versions, and a failed checker's operations are drawn as lanes. A screenshot is kept under artifacts/.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from browser import chromium, console_errors, full_page_screenshot, requested_urls
from globaltables.chaos.checkers.lww import check_lww
from globaltables.chaos.history import History
from globaltables.experiment.html_report import run_data, write_run_html
from globaltables.experiment.load import PROBE_KEY_PREFIX, is_probe_key
from globaltables.experiment.runner import read_final_states, run_experiment

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)
TIME_CHARTS = ("chart-faults", "chart-throughput", "chart-latency", "chart-lag", "chart-clocks")


@pytest.fixture(scope="module")
def hot_key_run(tmp_path_factory) -> Path:
    """The hot-key experiment with a short partition: losses in the ledger and a fault window to shade."""
    import asyncio

    base = tmp_path_factory.mktemp("html")
    schedule = base / "partition.yaml"
    schedule.write_text("quiet: 0.2s\nsteps:\n  - {at: 0.5s, do: partition, between: [us-east-1, eu-west-1], "
                        "for: 1s}\n  - {at: 0.8s, do: skew, region: ap-southeast-1, offset: +200ms, for: 1s}\n")  # fmt: skip
    out = base / "hot"
    outcome = asyncio.run(run_experiment(ROOT / "topologies" / "hot-key.yaml", chaos_path=schedule, out_dir=out,
                                         duration_s=2.0, seed=11, make_plots=False))  # fmt: skip
    assert outcome.results is not None, outcome.reason
    return out


def _open(driver, page: Path):
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))


def test_every_run_writes_a_self_contained_page(hot_key_run):
    from globaltables.experiment.html_report import plotly_js

    page = (hot_key_run / "report.html").read_text()
    assert plotly_js() in page  # plotly embedded from the installed package
    ours = page.replace(plotly_js(), "")
    assert ours.count("<script") == 3 and " src=" not in ours and "<link" not in ours and "http://" not in ours and "https://" not in ours
    data = run_data(hot_key_run, json.loads((hot_key_run / "results.json").read_text()))
    assert data["windows"] and data["ledger"] and data["keys"] and data["heals"]
    assert not any(PROBE_KEY_PREFIX in name for name in data["keys"])  # the explorer shows workload keys only
    assert is_probe_key({"id": {"S": PROBE_KEY_PREFIX + "us-east-1"}}) and is_probe_key({"n": {"N": "-2"}})
    assert not is_probe_key({"id": {"S": "k000001"}}) and not is_probe_key({"n": {"N": "0"}})
    assert "report.html" in (hot_key_run / "report.md").read_text()


def test_the_page_renders_offline_and_the_key_explorer_shows_a_keys_versions(hot_key_run):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    data = run_data(hot_key_run, json.loads((hot_key_run / "results.json").read_text()))
    with chromium() as driver:
        _open(driver, hot_key_run / "report.html")
        urls = requested_urls(driver)
        assert urls and all(url.startswith(("file://", "data:", "blob:")) for url in urls), urls
        assert console_errors(driver) == []
        for chart in ("chart-throughput", "chart-latency", "chart-lag", "chart-clocks", "chart-faults"):
            traces = driver.execute_script(
                f"const d = document.getElementById('{chart}'); return d && d.data ? d.data.length : -1")
            assert traces > 0, chart
            drawn = driver.find_elements(By.CSS_SELECTOR, f"#{chart} .main-svg g.trace")
            assert drawn, f"{chart} drew no trace"
        for chart in TIME_CHARTS:  # the fault windows, shaded on every time chart
            shapes = driver.execute_script(f"return document.getElementById('{chart}').layout.shapes.length")
            assert shapes == len(data["windows"]) > 0, chart
        assert driver.find_elements(By.CSS_SELECTOR, "[id^='chart-cdf-'] .main-svg")

        # The ledger sorts by a column when its header is clicked.
        rows = driver.find_elements(By.CSS_SELECTOR, "#ledger-table tbody tr")
        assert len(rows) == len(data["ledger"]) > 0
        driver.find_element(By.CSS_SELECTOR, "#ledger-table th[data-column='6']").click()
        times = [float(td.text) for td in driver.find_elements(By.CSS_SELECTOR, "#ledger-table tbody td:nth-child(7)")]
        assert times == sorted(times)

        # Pick the key with the most versions: the explorer lists every version, the winner marked.
        key = max(data["keys"], key=lambda name: len(data["keys"][name]))
        Select(driver.find_element(By.ID, "key-select")).select_by_value(key)
        WebDriverWait(driver, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#key-table tbody tr"))
        rows = driver.find_elements(By.CSS_SELECTOR, "#key-table tbody tr")
        assert len(rows) == len(data["keys"][key])
        versions = [row.find_element(By.CSS_SELECTOR, "td").text for row in rows]
        assert versions == [version["version"] for version in data["keys"][key]]
        won = driver.find_elements(By.CSS_SELECTOR, "#key-table tbody tr.won")
        assert len(won) == 1 and won[0].find_element(By.CSS_SELECTOR, "td").text == data["keys"][key][-1]["version"]
        assert driver.find_elements(By.CSS_SELECTOR, "#chart-key .main-svg g.trace")
        assert console_errors(driver) == [] and all(
            url.startswith(("file://", "data:", "blob:")) for url in requested_urls(driver)
        )
        shot = full_page_screenshot(driver, "report-html.png")
    assert shot.stat().st_size > 50_000


def test_a_failed_checker_draws_its_operations_as_lanes(hot_key_run, tmp_path):
    from selenium.webdriver.common.by import By

    out = tmp_path / "failed"
    shutil.copytree(hot_key_run, out)
    results = json.loads((out / "results.json").read_text())
    states = read_final_states(out / "final_state.jsonl")
    table = results["workload"]["table"]
    victim = next(key for key in states["eu-west-1"][table] if PROBE_KEY_PREFIX not in key)  # a workload item
    del states["eu-west-1"][table][victim]  # a replica that lost an item: the lww checker must fail
    check = check_lww(History.read_jsonl(out / "history.jsonl"), states)
    assert not check.passed
    (out / "checks.json").write_bytes(orjson.dumps([check.to_dict()]))
    results["checks"] = [{"name": check.name, "passed": False, "detail": check.detail}]
    write_run_html(out, results)
    with chromium() as driver:
        _open(driver, out / "report.html")
        assert console_errors(driver) == []
        lanes = driver.execute_script("return document.getElementById('chart-violation-0-0').data")
        assert lanes and {lane["y"][0] for lane in lanes} <= set(results["regions"])
        assert driver.find_elements(By.CSS_SELECTOR, "#chart-violation-0-0 .main-svg g.trace")
        assert "CHECKS FAILED" in driver.find_element(By.TAG_NAME, "h1").text
        full_page_screenshot(driver, "report-html-failed-check.png")
