"""The web console in a real headless Chromium against a real cluster: 3 controller
processes and 3 broker agents on 127.0.0.1.

A person logs in with the admin's token, opens a topic, cuts a chunk from the page and sees the
timeline change; a cut made with the CLI shows up on the open page within 1 s, without a
reload; a principal without DESCRIBE sees no topics; a cross-site form that posts to the REST
API with the admin's session cookie is refused.

Screenshots of the main pages are taken on the way, into a temporary directory, and into the
directory named by ``CHUNKRAFT_CONSOLE_SCREENSHOTS`` when it is set
(``scripts/console-screenshots`` sets it to ``docs/console``): the pictures in docs/console.md
are made by this test, so they show the code as it is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from chunkraft.client.broker_client import BrokerClient
from chunkraft.local.local_cluster import LocalCluster
from tests.support.brokers import broker_cluster, wait_until
from tests.support.browser import headless_chromium

SCREENSHOTS_ENV = "CHUNKRAFT_CONSOLE_SCREENSHOTS"
TOPIC = "orders"
PARTITIONS = 3
LIVE_BUDGET = 1.0
"""Seconds from a cut committed elsewhere to the open timeline showing it (the console's budget)."""
WAIT = 30.0


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("console")) as running:
        running.add_token("User:alice", "console test: no ACLs")
        answer = httpx.post(f"{running.urls[0]}/v3/clusters/{cluster_id(running)}/topics",
                            json={"topic_name": TOPIC, "partitions_count": PARTITIONS,
                                  "replication_factor": 2},
                            headers=running.headers, timeout=30)
        assert answer.status_code == 201, answer.text
        yield running


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Where screenshots go: a temporary directory, and the one the environment names."""
    places = [tmp_path_factory.mktemp("screenshots")]
    wanted = os.environ.get(SCREENSHOTS_ENV)
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        places.append(Path(wanted))
    return places


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium(1400, 900) as driver:
        yield driver


# ------------------------------------------------------------------ helpers


def cluster_id(cluster: LocalCluster) -> str:
    answer = httpx.get(f"{cluster.urls[0]}/v3/clusters", headers=cluster.headers, timeout=30)
    return str(answer.json()["data"][0]["cluster_id"])


def console(cluster: LocalCluster) -> str:
    return cluster.urls[0]


def screenshot(driver: WebDriver, shots: list[Path], name: str) -> None:
    first = shots[0] / f"{name}.png"
    assert driver.save_screenshot(str(first)), f"no screenshot {name}"
    for place in shots[1:]:
        shutil.copyfile(first, place / first.name)


def until(driver: WebDriver, condition: Callable[[WebDriver], Any], what: str,
          timeout: float = WAIT) -> Any:
    """``condition``'s first truthy value (pages re-render as the metadata changes, so an
    element found a moment ago may be gone: that is retried, not a failure)."""
    return WebDriverWait(driver, timeout, poll_frequency=0.02, ignored_exceptions=(
        NoSuchElementException, StaleElementReferenceException)).until(condition, what)


def click(driver: WebDriver, by: str, value: str, what: str) -> None:
    """Clicks the element, found afresh until a click lands (see :func:`until`)."""

    def clicked(d: WebDriver) -> bool:
        d.find_element(by, value).click()
        return True

    until(driver, clicked, what)


def js(driver: WebDriver, script: str) -> Any:
    """What ``script`` returns, read in one step of the page (no element handle to go stale)."""
    return driver.execute_script(script)


def ready(driver: WebDriver) -> None:
    until(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
          == "true", "the page filled in")


def log_in(driver: WebDriver, cluster: LocalCluster, token: str, path: str = "/ui") -> None:
    driver.delete_all_cookies()
    driver.get("about:blank")  # a path that differs only by its #fragment would not load
    driver.get(console(cluster) + path)
    until(driver, lambda d: "/ui/login" in d.current_url, "sent to the login page")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login").click()
    until(driver, lambda d: "/ui/login" not in d.current_url, "logged in")
    if "#" in path:  # a form's redirect drops the fragment the page was asked with
        driver.get("about:blank")
        driver.get(console(cluster) + path)
    ready(driver)


def timeline_chunks(driver: WebDriver) -> int:
    value = driver.find_element(By.TAG_NAME, "body").get_attribute("data-timeline-chunks")
    return int(value or 0)


def partition_leader(cluster: LocalCluster, partition: int) -> int:
    answer = httpx.get(f"{console(cluster)}/v3/clusters/{cluster_id(cluster)}/topics/{TOPIC}/"
                       f"partitions/{partition}", headers=cluster.headers, timeout=30)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["leader_id"])


def produce(cluster: LocalCluster, partition: int, count: int) -> None:
    """``count`` records onto the partition's leader (a cut needs a non-empty active chunk),
    retried while a new leader is still taking over."""
    now = int(time.time() * 1000)
    records = [(f"k{i}".encode(), f"value {i}".encode(), now) for i in range(count)]

    def produced() -> bool:
        leader = partition_leader(cluster, partition)
        with BrokerClient(cluster.broker_url(leader), token=cluster.admin_token,
                          timeout=30) as client:
            return client.produce_records(TOPIC, partition, PARTITIONS, records).error_code == 0

    wait_until(produced, f"records produced to {TOPIC}-{partition}", WAIT, 0.2)


def partition_count(cluster: LocalCluster) -> int:
    answer = httpx.get(f"{console(cluster)}/v3/clusters/{cluster_id(cluster)}/topics/{TOPIC}",
                       headers=cluster.headers, timeout=30)
    return int(answer.json()["partitions_count"])


# ------------------------------------------------------------------ tests


def test_log_in_and_see_the_cluster_and_its_brokers(cluster: LocalCluster, browser: WebDriver,
                                                    shots: list[Path]) -> None:
    browser.delete_all_cookies()
    browser.get(console(cluster) + "/ui")
    until(browser, lambda d: "/ui/login" in d.current_url, "sent to the login page")
    screenshot(browser, shots, "login")
    log_in(browser, cluster, cluster.admin_token)
    assert browser.current_url.endswith("/ui")
    assert browser.find_element(By.ID, "cluster-id").text == cluster_id(cluster)
    until(browser, lambda d: d.find_element(By.ID, "quorum-leader").text.isdigit(),
          "the quorum's leader shown")
    voters = browser.find_elements(By.CSS_SELECTOR, "#voters tbody tr")
    assert len(voters) == 3
    screenshot(browser, shots, "cluster")
    browser.get(console(cluster) + "/ui/brokers")
    ready(browser)
    rows = browser.find_elements(By.CSS_SELECTOR, "#brokers tbody tr")
    assert [r.get_attribute("data-broker") for r in rows] == ["0", "1", "2"]
    assert all("unfenced" in r.text for r in rows)
    until(browser, lambda d: all("logs" in c.text for c in
                                 d.find_elements(By.CSS_SELECTOR, "td.disk")),
          "every broker's disk use shown")
    screenshot(browser, shots, "brokers")


def test_open_a_topic_and_cut_a_chunk_from_the_page(cluster: LocalCluster, browser: WebDriver,
                                                    shots: list[Path]) -> None:
    log_in(browser, cluster, cluster.admin_token, "/ui/topics")
    browser.find_element(By.ID, "search").send_keys("ord")
    until(browser, lambda d: js(d, "return document.getElementById('topics-count')"
                                   ".textContent") == "1 matching", "the search answered")
    screenshot(browser, shots, "topics")
    click(browser, By.LINK_TEXT, TOPIC, "the topic's link")
    ready(browser)
    rows = browser.find_elements(By.CSS_SELECTOR, "#partition-table tbody tr")
    assert [r.get_attribute("data-p") for r in rows] == [str(p) for p in range(PARTITIONS)]
    assert timeline_chunks(browser) == 1
    produce(cluster, 0, 20)
    leader = partition_leader(cluster, 0)
    # The new active chunk on the other two brokers (the first checked leads it).
    js(browser, f"""for (const box of document.querySelectorAll('input[name="cut"]'))
                      box.checked = box.value !== "{leader}";""")
    click(browser, By.ID, "cut-button", "Cut")
    until(browser, lambda d: timeline_chunks(d) == 2, "the timeline shows the cut")
    outcome, text = until(browser, lambda d: js(d, """
        const box = document.getElementById("action-result");
        return box && box.className ? [box.className, box.textContent] : null;"""),
        "the cut's answer shown")
    assert outcome == "ok", text
    lanes, active = js(browser, """
        const svg = document.getElementById("timeline-svg");
        return [[...svg.querySelectorAll("g.lane")].map((g) => g.dataset.broker),
                [...svg.querySelectorAll('g.bar[data-active="true"]')].map(
                    (g) => [g.dataset.broker, g.classList.contains("leader")])];""")
    assert set(lanes) == {"0", "1", "2"}
    assert str(leader) not in {broker for broker, _ in active}
    assert sum(leads for _, leads in active) == 1
    screenshot(browser, shots, "topic")
    # Move the chunk just made inactive off the broker that led it.
    others = [b for b in (0, 1, 2) if b != leader]
    js(browser, f"""for (const box of document.querySelectorAll('input[name="move"]'))
                      box.checked = box.value !== "{leader}";""")
    click(browser, By.ID, "move-button", "Move")
    outcome, text = until(browser, lambda d: js(d, """
        const box = document.getElementById("action-result");
        return box && box.textContent.startsWith("Moving") || box.className === "error"
            ? [box.className, box.textContent] : null;"""), "the move's answer shown")
    assert outcome == "ok", text

    def moved(d: WebDriver) -> bool:
        brokers = js(d, """return [...document.querySelectorAll(
            '#timeline-svg g.bar[data-active="false"]')].map((g) => Number(g.dataset.broker))""")
        return sorted(brokers) == others

    until(browser, moved, "the moved chunk on its new brokers only, without a reload")


def test_a_cut_made_with_the_cli_shows_on_the_open_page_within_a_second(
        cluster: LocalCluster, browser: WebDriver, tmp_path: Path) -> None:
    log_in(browser, cluster, cluster.admin_token, f"/ui/topics/{TOPIC}#p=1")
    assert browser.find_element(By.ID, "timeline-title").text.endswith("partition 1")
    before = timeline_chunks(browser)
    browser.execute_script("window.notReloaded = true;")
    produce(cluster, 1, 10)
    spec = tmp_path / "cut.json"
    spec.write_text(json.dumps({"partitions": [
        {"topic": TOPIC, "partition": 1, "replicas": [0, 1]}]}))
    done = subprocess.run(
        [sys.executable, "-m", "chunkraft", "chunks", "create", "--bootstrap-server",
         ",".join(cluster.urls), "--command-config", str(cluster.command_config_path),
         "--create-chunk-json-file", str(spec)],
        capture_output=True, text=True, timeout=120, check=False)
    committed = time.monotonic()  # the CLI answers once the cut is committed
    assert done.returncode == 0, (done.stdout, done.stderr)
    until(browser, lambda d: timeline_chunks(d) == before + 1, "the open page shows the cut",
          timeout=5)
    seen = time.monotonic() - committed
    assert seen <= LIVE_BUDGET, f"the page showed the cut {seen:.2f} s after it committed"
    assert browser.execute_script("return window.notReloaded === true;")
    print(f"CLI cut shown on the open page {seen * 1000:.0f} ms after the CLI returned")


def test_adding_partitions_shows_the_kip_253_note_before_it_confirms(
        cluster: LocalCluster, browser: WebDriver, shots: list[Path]) -> None:
    log_in(browser, cluster, cluster.admin_token, f"/ui/topics/{TOPIC}")
    click(browser, By.ID, "add-button", "Add…")
    note = until(browser, lambda d: d.find_element(By.ID, "kip253-note"), "the KIP-253 note")
    assert "KIP-253" in note.text and "PriorPartitionEpochs" in note.text
    assert partition_count(cluster) == PARTITIONS  # nothing happens before confirming
    screenshot(browser, shots, "add-partitions")
    click(browser, By.ID, "add-confirm", "confirm")
    until(browser, lambda d: d.find_element(By.ID, "partition-count").text
          == str(PARTITIONS + 1), "the new partition on the page")
    assert partition_count(cluster) == PARTITIONS + 1
    click(browser, By.CSS_SELECTOR, f'#partition-table tr[data-p="{PARTITIONS}"]',
          "the new partition's row")
    until(browser, lambda d: d.find_element(By.ID, "timeline-title").text.endswith(
        f"partition {PARTITIONS}"), "the new partition's timeline")
    assert "PriorPartitionEpochs" in browser.find_element(By.ID, "timeline-facts").text


def test_a_refused_action_shows_the_kafka_error(cluster: LocalCluster,
                                                browser: WebDriver) -> None:
    log_in(browser, cluster, cluster.admin_token, f"/ui/topics/{TOPIC}#p=2")
    # Partition 2 holds no records: its active chunk is empty, so there is nothing to cut.
    click(browser, By.ID, "cut-button", "Cut")
    result = until(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#action-result.error"),
                   "the refusal shown")
    assert "INVALID_REQUEST" in result.text or "INVALID_CHUNK_OFFSETS" in result.text, result.text


def test_configs_and_acls_pages(cluster: LocalCluster, browser: WebDriver,
                                shots: list[Path]) -> None:
    log_in(browser, cluster, cluster.admin_token, "/ui/configs")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#defaults table.configs tr"),
          "the brokers' default configs")
    screenshot(browser, shots, "configs")
    browser.get(console(cluster) + "/ui/acls")
    ready(browser)
    acls = browser.find_elements(By.CSS_SELECTOR, "#acls tbody tr")
    # LocalCluster grants each broker CLUSTER_ACTION on the cluster.
    assert any("CLUSTER_ACTION" in row.text for row in acls)


def test_a_principal_without_describe_sees_no_topics(cluster: LocalCluster,
                                                     browser: WebDriver) -> None:
    log_in(browser, cluster, cluster.token("User:alice"), "/ui/topics")
    until(browser, lambda d: d.find_element(By.ID, "no-topics"), "an empty topic list")
    assert TOPIC not in browser.find_element(By.ID, "main").text
    browser.get(console(cluster) + f"/ui/topics/{TOPIC}")
    error = until(browser, lambda d: d.find_element(By.ID, "topic-error"), "the refusal")
    assert "TOPIC_AUTHORIZATION_FAILED" in error.text
    browser.get(console(cluster) + "/ui/acls")
    error = until(browser, lambda d: d.find_element(By.ID, "acls-error"), "the ACLs refused")
    assert "CLUSTER_AUTHORIZATION_FAILED" in error.text


class _ForgedPage(BaseHTTPRequestHandler):
    """Another origin (same host, another port: the same "site" for SameSite cookies) whose
    page posts a form to the controller's REST API as soon as it loads."""

    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_forged_cross_site_post_is_refused(cluster: LocalCluster,
                                             browser: WebDriver) -> None:
    log_in(browser, cluster, cluster.admin_token)
    target = (f"{console(cluster)}/v3/clusters/{cluster_id(cluster)}/"
              "topics:create-partitions")
    count = partition_count(cluster)
    # A text/plain form whose body reads as JSON: the classic way to forge a JSON POST.
    payload = json.dumps({"topics": [{"topic_name": TOPIC, "partitions_count": count + 5}],
                          "pad": ""})[:-2]
    _ForgedPage.page = (
        f'<form id="f" method="post" enctype="text/plain" action="{target}">'
        f"<input name='{payload}' value='\"}}'></form>"
        "<script>document.getElementById('f').submit()</script>").encode()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ForgedPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        browser.get(f"http://127.0.0.1:{server.server_address[1]}/")
        until(browser, lambda d: "/v3/clusters/" in d.current_url, "the forged form posted")
        answer = until(browser, lambda d: d.find_element(By.TAG_NAME, "body").text,
                       "the controller's answer")
        # Refused before any route runs: its Origin is not the controller's (and it carries
        # no CSRF token, which alone refuses it: tests/unit/console/test_console_app.py).
        assert "INVALID_REQUEST" in answer and "another origin" in answer, answer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert partition_count(cluster) == count
    # The same session still works from the console's own pages.
    browser.get(console(cluster) + f"/ui/topics/{TOPIC}")
    ready(browser)
