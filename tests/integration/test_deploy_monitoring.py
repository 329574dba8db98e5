"""deploy/monitoring against a running cluster: every series an alert rule or a dashboard panel
reads is in a real ``/metrics`` answer (3 controllers and a broker of LocalCluster), with the
labels the expression matches on.

An expression's selectors are found by removing what is not one (aggregation clauses, ranges,
function calls, keywords); a selector scoped to ``job="chunkraft-controllers"`` must be a
controller's series, one scoped to ``job="chunkraft-brokers"`` a broker's, any other either.
``job`` and ``instance`` are Prometheus' own labels, added when scraping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.conftest import BASE_PROPERTIES
from tests.support.brokers import broker_cluster

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
CONTROLLERS_JOB = "chunkraft-controllers"
BROKERS_JOB = "chunkraft-brokers"
SCRAPE_LABELS = frozenset({"job", "instance"})
KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
CLAUSE = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
SELECTOR = re.compile(rf"({NAME})\s*(\{{[^}}]*\}})?")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
SAMPLE = re.compile(rf"^({NAME})(?:\{{(.*)\}})?\s")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

Series = dict[str, list[dict[str, str]]]
"""Metric name -> the label sets of its samples."""


@dataclass(frozen=True)
class Selector:
    expression: str
    name: str
    matchers: tuple[tuple[str, str, str], ...]

    @property
    def job(self) -> str | None:
        return next((value for label, op, value in self.matchers
                     if label == "job" and op == "="), None)


def selectors(expression: str) -> Iterator[Selector]:
    text = re.sub(r"\[[^\]]*\]", "", CLAUSE.sub("", expression))
    for match in SELECTOR.finditer(text):
        name = match.group(1)
        rest = text[match.end(1):].lstrip()
        if name in KEYWORDS or (rest.startswith("(") and match.group(2) is None):
            continue
        yield Selector(expression, name, tuple(MATCHER.findall(match.group(2) or "")))


def alert_expressions() -> list[str]:
    rules = yaml.safe_load((MONITORING / "alerts.yaml").read_text(encoding="utf-8"))
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "expr":
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads((MONITORING / "dashboard.json").read_text(encoding="utf-8")))
    return found


def parse_exposition(text: str) -> Series:
    series: Series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match is not None, line
        series.setdefault(match.group(1), []).append(dict(LABEL.findall(match.group(2) or "")))
    return series


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Series, Series]]:
    """(a controller's series, every controller's merged, ...) and a broker's: 3 controllers
    and 1 broker, each scraped twice (the second answer counts the first request)."""
    with broker_cluster(tmp_path_factory.mktemp("monitoring"), brokers=1,
                        properties=dict(BASE_PROPERTIES)) as cluster:

        def scrape(url: str) -> Series:
            httpx.get(f"{url}/metrics", headers=cluster.headers, timeout=10).raise_for_status()
            answer = httpx.get(f"{url}/metrics", headers=cluster.headers, timeout=10)
            answer.raise_for_status()
            return parse_exposition(answer.text)

        controllers: Series = {}
        for url in cluster.urls:
            for name, labels in scrape(url).items():
                controllers.setdefault(name, []).extend(labels)
        yield controllers, scrape(cluster.broker_url(0))


def test_the_rules_and_the_dashboard_have_expressions() -> None:
    alerts, panels = alert_expressions(), dashboard_expressions()
    assert len(alerts) >= 10 and len(panels) >= 20
    for expression in [*alerts, *panels]:
        assert list(selectors(expression)), expression


@pytest.mark.parametrize("source", ["alerts.yaml", "dashboard.json"])
def test_every_series_they_read_is_exported(scraped: tuple[Series, Series],
                                            source: str) -> None:
    controllers, brokers = scraped
    expressions = alert_expressions() if source == "alerts.yaml" else dashboard_expressions()
    for selector in (s for expression in expressions for s in selectors(expression)):
        exported = {CONTROLLERS_JOB: controllers, BROKERS_JOB: brokers}.get(
            selector.job or "", {**brokers, **controllers})
        assert selector.name in exported, (
            f"{source}: {selector.name} (in {selector.expression!r}) is not exported by "
            f"{selector.job or 'any node'}")
        samples = exported[selector.name]
        labels = {label for sample in samples for label in sample}
        for label, op, value in selector.matchers:
            if label in SCRAPE_LABELS:
                continue
            assert label in labels, f"{source}: {selector.name} has no label {label}"
            if op == "=":
                assert any(sample.get(label) == value for sample in samples), (
                    f"{source}: no {selector.name}{{{label}={value!r}}}")


def test_the_selector_parser_finds_names_not_functions_or_labels() -> None:
    found = list(selectors(
        'histogram_quantile(0.99, sum by (route, le) (rate(a_bucket{route!~"x|y"}[5m])))'
        ' / scalar(max(b{job="j"})) and on (instance) c'))
    assert [s.name for s in found] == ["a_bucket", "b", "c"]
    assert found[0].matchers == (("route", "!~", "x|y"),)
    assert found[1].job == "j"
