"""``chunkraft configs`` (chunkraft.cli.configs) and ``topics --config``: kafka-configs' parsing
of --add-config, its describe and alter output against a stand-in controller (httpx's
MockTransport), and usage mistakes (exit 1, the message and the usage line)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chunkraft.cli import configs as configs_cli
from chunkraft.cli import topics as topics_cli
from chunkraft.cli.main import main
from chunkraft.cli.output import ToolError
from chunkraft.client.admin import AdminClient

URL = "http://127.0.0.1:1"
CLUSTER = "/v3/clusters/c1"


def _entry(name: str, value: str, source: str, *synonyms: tuple[str, str, str]
           ) -> dict[str, Any]:
    return {"name": name, "value": value, "source": source, "is_sensitive": False,
            "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in synonyms]}


RETENTION = _entry("retention.ms", "1000", "DYNAMIC_TOPIC_CONFIG",
                   ("retention.ms", "1000", "DYNAMIC_TOPIC_CONFIG"),
                   ("log.retention.ms", "604800000", "DEFAULT_CONFIG"))
SEGMENT = _entry("segment.ms", "604800000", "DEFAULT_CONFIG",
                 ("log.roll.ms", "604800000", "DEFAULT_CONFIG"))


class FakeController:
    """Answers the few REST v3 calls the tool makes; records every write."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, Any]] = []
        self.refuse: dict[str, Any] | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v3/clusters":
            return httpx.Response(200, json={"data": [{"cluster_id": "c1"}]})
        if request.method != "GET":
            self.writes.append((request.method, path, json.loads(request.content or b"null")))
            if self.refuse is not None:
                return httpx.Response(400, json=self.refuse)
            return httpx.Response(204)
        if path == f"{CLUSTER}/topics":
            return httpx.Response(200, json={"data": [{"topic_name": "orders"}]})
        if path == f"{CLUSTER}/brokers":
            return httpx.Response(200, json={"data": [{"broker_id": 1}]})
        if path == f"{CLUSTER}/topics/orders/configs":
            return httpx.Response(200, json={"data": [RETENTION, SEGMENT]})
        if path == f"{CLUSTER}/brokers/1/configs":
            return httpx.Response(200, json={"data": [
                _entry("log.retention.ms", "5", "DYNAMIC_BROKER_CONFIG")]})
        if path == f"{CLUSTER}/broker-configs":
            return httpx.Response(200, json={"data": [
                _entry("log.retention.ms", "7", "DYNAMIC_DEFAULT_BROKER_CONFIG")]})
        return httpx.Response(404, json={"error_code": 3, "error_name": "NOT_FOUND",
                                         "message": path})


@pytest.fixture
def controller(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeController]:
    fake = FakeController()

    def client(args: argparse.Namespace, **options: Any) -> AdminClient:
        return AdminClient(URL, transport=httpx.MockTransport(fake), retry_for=1)

    monkeypatch.setattr(configs_cli, "open_client", client)
    monkeypatch.setattr(topics_cli, "open_client", client)
    yield fake


def _run(*argv: str) -> int:
    return main(["configs", "--bootstrap-server", URL, *argv])


# ------------------------------------------------------------------ parsing and formatting


def test_add_config_is_kafka_configs_format() -> None:
    assert configs_cli.parse_add_config(["retention.ms=1000,cleanup.policy=[delete,x]",
                                         "segment.ms = 5"]) == {
        "retention.ms": "1000", "cleanup.policy": "delete,x", "segment.ms": "5"}


@pytest.mark.parametrize("text", ["retention.ms", "a=1=2", "=1", "a=1,,b=2"])
def test_add_config_mistakes_use_kafkas_words(text: str) -> None:
    with pytest.raises(ToolError, match="all configs to be added must be in the format"):
        configs_cli.parse_add_config([text])


def test_delete_config_splits_on_commas() -> None:
    assert configs_cli.parse_delete_config(["a, b", "c"]) == ["a", "b", "c"]
    with pytest.raises(ToolError):
        configs_cli.parse_delete_config([" , "])


def test_an_entry_is_printed_as_kafka_configs_prints_it() -> None:
    assert configs_cli.format_entry(RETENTION) == (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.ms=604800000}")
    secret = {**RETENTION, "is_sensitive": True, "synonyms": []}
    assert configs_cli.format_entry(secret) == "  retention.ms=None sensitive=true synonyms={}"


def test_the_topic_line_lists_the_topics_own_configs() -> None:
    topic = {"topic_name": "orders", "topic_id": "AbC", "partitions_count": 1,
             "replication_factor": 3}
    assert topics_cli.format_topic(topic, {"retention.ms": "1000", "segment.ms": "5"}) == (
        "Topic: orders\tTopicId: AbC\tPartitionCount: 1\tReplicationFactor: 3\t"
        "Configs: retention.ms=1000,segment.ms=5")


def test_topic_config_flag() -> None:
    assert topics_cli.parse_topic_configs(["retention.ms=1000", "cleanup.policy=delete"]) == {
        "retention.ms": "1000", "cleanup.policy": "delete"}
    with pytest.raises(ToolError, match='format "key=val"'):
        topics_cli.parse_topic_configs(["retention.ms"])
    with pytest.raises(ToolError, match="given twice"):
        topics_cli.parse_topic_configs(["a=1", "a=2"])


# ------------------------------------------------------------------ against a stand-in


def test_describe_shows_only_the_dynamic_keys_unless_all(
        controller: FakeController, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--describe", "--entity-type", "topics", "--entity-name", "orders") == 0
    assert capsys.readouterr().out.splitlines() == [
        "Dynamic configs for topic orders are:", configs_cli.format_entry(RETENTION)]
    assert _run("--describe", "--all", "--entity-type", "topics", "--entity-name",
                "orders") == 0
    assert capsys.readouterr().out.splitlines() == [
        "All configs for topic orders are:", configs_cli.format_entry(RETENTION),
        configs_cli.format_entry(SEGMENT)]


def test_describe_brokers_lists_each_broker_then_the_default(
        controller: FakeController, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--describe", "--entity-type", "brokers") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Dynamic configs for broker 1 are:"
    assert lines[1].startswith("  log.retention.ms=5 ")
    assert lines[2] == "Default configs for brokers in the cluster are:"
    assert lines[3].startswith("  log.retention.ms=7 ")


def test_alter_sends_one_batch_and_says_it_completed(
        controller: FakeController, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--alter", "--entity-type", "topics", "--entity-name", "orders",
                "--add-config", "retention.ms=1000,cleanup.policy=[delete]",
                "--delete-config", "segment.ms") == 0
    assert capsys.readouterr().out == "Completed updating config for topic orders.\n"
    assert controller.writes == [("POST", f"{CLUSTER}/topics/orders/configs:alter", {
        "data": [{"name": "retention.ms", "value": "1000", "operation": "SET"},
                 {"name": "cleanup.policy", "value": "delete", "operation": "SET"},
                 {"name": "segment.ms", "operation": "DELETE"}],
        "validate_only": False})]
    assert _run("--alter", "--entity-type", "brokers", "--entity-default",
                "--add-config", "log.retention.ms=5") == 0
    assert capsys.readouterr().out == (
        "Completed updating default config for brokers in the cluster.\n")
    assert controller.writes[-1][1] == f"{CLUSTER}/broker-configs:alter"


def test_a_refused_alter_prints_the_error_line_and_exits_1(
        controller: FakeController, capsys: pytest.CaptureFixture[str]) -> None:
    controller.refuse = {"error_code": 40, "error_name": "INVALID_CONFIG",
                         "message": "Unknown topic config name: nope"}
    assert _run("--alter", "--entity-type", "topics", "--entity-name", "orders",
                "--add-config", "nope=1") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("Error while executing config command : INVALID_CONFIG: Unknown "
                            "topic config name: nope\n")


def test_topics_create_sends_its_configs(controller: FakeController,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "--bootstrap-server", URL, "--create", "--topic", "events",
                 "--partitions", "1", "--replication-factor", "1",
                 "--config", "retention.ms=60000"]) == 0
    ((method, path, body),) = controller.writes
    assert (method, path) == ("POST", f"{CLUSTER}/topics")
    assert body["configs"] == [{"name": "retention.ms", "value": "60000"}]


@pytest.mark.parametrize(("argv", "message"), [
    (["--entity-type", "topics"], "Command must include exactly one action"),
    (["--describe"], "At least one --entity-type must be specified"),
    (["--alter", "--entity-type", "topics", "--add-config", "a=1"],
     "an entity name must be specified with --alter of topics"),
    (["--alter", "--entity-type", "topics", "--entity-name", "t"],
     "At least one of --add-config or --delete-config must be specified with --alter"),
    (["--describe", "--entity-type", "topics", "--entity-default"],
     "--entity-default is only for --entity-type brokers"),
    (["--describe", "--entity-type", "brokers", "--entity-name", "b1"],
     "must be a valid integer broker id, but it is: b1"),
    (["--describe", "--entity-type", "brokers", "--entity-name", "1", "--entity-default"],
     "Only one of --entity-name or --entity-default"),
    (["--describe", "--entity-type", "topics", "--add-config", "a=1"],
     "can only be used with --alter"),
    (["--alter", "--all", "--entity-type", "topics", "--entity-name", "t",
      "--add-config", "a=1"], "Option --all can only be used with --describe"),
    (["--describe", "--entity-type", "groups"], "invalid choice: 'groups'"),
])
def test_usage_mistakes_exit_1_with_the_message_and_usage(
        capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exited:
        _run(*argv)
    captured = capsys.readouterr()
    assert exited.value.code == 1
    assert captured.out == ""
    assert captured.err.startswith("usage: chunkraft configs ")
    assert message in captured.err
