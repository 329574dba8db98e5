"""The web console on a 10,000-partition topic, in a real headless Chromium.

A LocalCluster of 3 controller processes on 127.0.0.1 (authentication on) with three registered
brokers kept unfenced by heartbeats (no broker processes: the pages read the metadata only),
holding a topic like ``bench_api.py``'s describe item: 10,000 partitions, RF 3, 5 cuts each
(50,000 inactive chunks), plus ``--long-chunks`` more cuts of partition 0 (a long timeline).
``--topics`` 1-partition topics more make the topic list large (default 100,000).

Measured in Chromium (tests/support/browser.py), logged in with the admin's token, each page
loaded ``--loads`` times:

- ``table``: building the partition table of the topic (10,000 rows) in the page, layout
  included (``consoleTimings.table`` of console.js);
- ``timeline``: building one partition's timeline SVG, layout included
  (``consoleTimings.timeline``), for partition 1 (6 chunks) and partition 0 (the long one);
- ``page``: from the navigation's start until both are on the page (fetching the HTML, the
  script, ``/ui/api/topics/{t}`` and the timeline's JSON, and rendering them);
- ``api``: the resource timing of those two JSON reads (the controller's answer and transfer);
- ``topics``: a page of the topic list (50 names) with a search term, at the image's size.

Prints one JSON line per measurement and appends a dated section to bench/RESULTS.md (unless
--no-save). Not a test: never run it in CI. It only signals processes it started, by PID.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait
from tests.support.browser import headless_chromium

from _controller.cluster import cluster_with_brokers, create_pool, post, quorum
from _controller.machine import code_version, other_load
from _report import append_section, emit

TOPIC = "console-10k"
PARTITIONS = 10_000
CUTS_PER_PARTITION = 5
CHUNK_SPAN = 1_000
PER_REQUEST = 1_000  # request.max.batch.items
ROWS: list[dict[str, Any]] = []
NOTES: list[str] = []


def record(row: dict[str, Any]) -> None:
    row = {"bench": "console", **row}
    ROWS.append(row)
    emit(row)


def note(text: str) -> None:
    NOTES.append(text)
    emit({"bench": "console", "item": "note", "text": text})


def build_topic(url: str, headers: dict[str, str]) -> None:
    """10,000 partitions (RF 3), then 5 cuts of each: 50,000 inactive chunks. Created with
    9,999 partitions and grown by one (one operation writes at most 10,000 records)."""
    began = time.monotonic()
    created = post(url, headers, "create-topics", {"topics": [
        {"name": TOPIC, "num_partitions": PARTITIONS - 1, "replication_factor": 3}]},
        timeout=120)
    if created["topics"][0]["error_code"] != 0:
        raise RuntimeError(f"create-topics: {created}")
    grown = post(url, headers, "create-partitions", {
        "topics": [{"name": TOPIC, "count": PARTITIONS, "assignments": None}],
        "timeout_ms": 60_000, "validate_only": False}, timeout=120)
    if grown["results"][0]["error_code"] != 0:
        raise RuntimeError(f"create-partitions: {grown}")
    for cut in range(1, CUTS_PER_PARTITION + 1):
        for first in range(0, PARTITIONS, PER_REQUEST):
            answer = post(url, headers, "create-chunks", {"topics": [{
                "name": TOPIC, "partitions": [{
                    "partition_index": p, "broker_ids": [1, 2, 3],
                    "prev_stop_offset": cut * CHUNK_SPAN - 1,
                    "prev_end_offset": cut * CHUNK_SPAN - 1,
                    "start_offset": cut * CHUNK_SPAN,
                    "start_timestamp": 1_700_000_000_000 + cut}
                    for p in range(first, first + PER_REQUEST)]}]}, timeout=120)
            bad = [p for t in answer["topics"] for p in t["partitions"] if p["error_code"]]
            if answer.get("error_code") or bad:
                raise RuntimeError(f"create-chunks: {answer.get('error_message')} {bad[:2]}")
    record({"item": "topic-build", "partitions": PARTITIONS,
            "seconds": round(time.monotonic() - began, 1)})


def lengthen_partition_zero(url: str, headers: dict[str, str], cuts: int) -> None:
    """``cuts`` more cuts of partition 0, one request each (a partition once per request)."""
    first = (CUTS_PER_PARTITION + 1) * CHUNK_SPAN
    for index in range(cuts):
        start = first + index * 100
        answer = post(url, headers, "create-chunks", {"topics": [{
            "name": TOPIC, "partitions": [{
                "partition_index": 0, "broker_ids": [1 + index % 3, 1 + (index + 1) % 3,
                                                     1 + (index + 2) % 3],
                "prev_stop_offset": start - 1, "prev_end_offset": start - 1 + index % 7,
                "start_offset": start, "start_timestamp": 1_700_000_100_000 + index}]}]})
        bad = [p for t in answer["topics"] for p in t["partitions"] if p["error_code"]]
        if answer.get("error_code") or bad:
            raise RuntimeError(f"create-chunks: {answer.get('error_message')} {bad[:1]}")


def log_in(driver: WebDriver, url: str, token: str) -> None:
    driver.get(url + "/ui/login")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login").click()
    WebDriverWait(driver, 60).until(lambda d: "/ui/login" not in d.current_url)


def load_topic(driver: WebDriver, url: str, partition: int) -> dict[str, float]:
    driver.get("about:blank")
    driver.get(f"{url}/ui/topics/{TOPIC}#p={partition}")
    WebDriverWait(driver, 120, poll_frequency=0.01).until(
        lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    timings: dict[str, Any] = driver.execute_script("""
        const api = performance.getEntriesByType("resource").filter(
            (e) => e.name.includes("/ui/api/topics/"));
        const timeline = api.filter((e) => e.name.includes("/timeline")).map((e) => e.duration);
        const topic = api.filter((e) => !e.name.includes("/timeline")).map((e) => e.duration);
        return {table: consoleTimings.table, timeline: consoleTimings.timeline,
                page: performance.now(), rows: Number(document.body.dataset.tableRows),
                chunks: Number(document.body.dataset.timelineChunks),
                api_topic: topic[0], api_timeline: timeline[0]};""")
    return {k: float(v) for k, v in timings.items()}


def topics_search(driver: WebDriver, url: str, query: str) -> dict[str, float]:
    driver.get("about:blank")
    driver.get(f"{url}/ui/topics")
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
    return dict(driver.execute_script("""
        return (async () => {
          const started = performance.now();
          const query = encodeURIComponent(arguments[0]);
          const answer = await fetch(`/ui/api/topics?q=${query}&page_size=50`);
          const data = await answer.json();
          return {ms: performance.now() - started, shown: data.topics.length,
                  total: data.total};
        })();""", query))


def summary(item: str, values: list[float], **extra: Any) -> None:
    record({"item": item, "runs": len(values), "median_ms": round(statistics.median(values), 1),
            "max_ms": round(max(values), 1), **extra})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--long-chunks", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100_000)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    note(f"Code measured: {code_version()}. At the start: {other_load()}.")
    with contextlib.ExitStack() as stack:
        base = Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix="chunkraft-bench-console-")))
        cluster, leader_url = cluster_with_brokers(stack, base, "console")
        headers = dict(cluster.headers)
        build_topic(leader_url, headers)
        began = time.monotonic()
        lengthen_partition_zero(leader_url, headers, args.long_chunks)
        record({"item": "long-partition-build", "cuts": args.long_chunks,
                "seconds": round(time.monotonic() - began, 1)})
        if args.topics:
            began = time.monotonic()
            create_pool(leader_url, headers, "pool", args.topics)
            record({"item": "topics-build", "topics": args.topics,
                    "seconds": round(time.monotonic() - began, 1)})
        status = quorum(leader_url, headers)
        record({"item": "image", "topics": status["topics"], "partitions": status["partitions"],
                "chunks": status["chunks"]})
        driver = stack.enter_context(headless_chromium(1400, 900))
        log_in(driver, leader_url, cluster.admin_token)
        for partition in (1, 0):
            load_topic(driver, leader_url, partition)  # warm: the controller's row cache
            runs = [load_topic(driver, leader_url, partition) for _ in range(args.loads)]
            chunks = int(runs[0]["chunks"])
            rows = int(runs[0]["rows"])
            for key in ("table", "timeline", "page", "api_topic", "api_timeline"):
                summary(key, [r[key] for r in runs], partition=partition, rows=rows,
                        chunks=chunks)
        for query in ("pool-1", "console", "zzz-no-match"):
            topics_search(driver, leader_url, query)
            runs = [topics_search(driver, leader_url, query) for _ in range(args.loads)]
            summary("topics", [float(r["ms"]) for r in runs], query=query,
                    shown=runs[0]["shown"], total=runs[0]["total"])
    if not args.no_save:
        lines = [*NOTES, "", "| item | partition | rows / chunks | median ms | max ms |",
                 "|---|---|---|---|---|"]
        for row in ROWS:
            if "median_ms" not in row:
                continue
            where = row.get("partition", row.get("query", ""))
            size = (f"{row['rows']} / {row['chunks']}" if "rows" in row
                    else f"{row['shown']} shown of {row['total']}")
            lines.append(f"| {row['item']} | {where} | {size} | {row['median_ms']} | "
                         f"{row['max_ms']} |")
        builds = [r for r in ROWS if "median_ms" not in r and r.get("item") != "note"]
        lines += ["", "Built: " + "; ".join(
            ", ".join(f"{k} {v}" for k, v in r.items() if k != "bench") for r in builds)]
        append_section("Web console: a 10,000-partition topic in headless Chromium",
                       lines)


if __name__ == "__main__":
    main()
