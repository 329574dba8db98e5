"""``chunkraft acls`` (chunkraft.cli.acls): Kafka's operation spellings and texts, the ACLs an
--add plans, and usage mistakes."""

from __future__ import annotations

import pytest

from chunkraft.cli import acls
from chunkraft.cli.main import main
from chunkraft.cli.output import ToolError

URL = "http://127.0.0.1:1"


def planned(*argv: str) -> list[dict[str, str]]:
    args = acls.build_parser().parse_args(["--bootstrap-server", URL, "--add", *argv])
    return acls._planned(args)


@pytest.mark.parametrize(("text", "name"), [
    ("Read", "READ"), ("read", "READ"), ("ClusterAction", "CLUSTER_ACTION"),
    ("cluster-action", "CLUSTER_ACTION"), ("IDEMPOTENT_WRITE", "IDEMPOTENT_WRITE"),
    ("All", "ALL"), ("DescribeConfigs", "DESCRIBE_CONFIGS"),
])
def test_operation_names_as_kafka_spells_them(text: str, name: str) -> None:
    assert acls.operation_name(text) == name


def test_an_unknown_operation_lists_the_known_ones() -> None:
    with pytest.raises(ToolError, match="unknown operation 'Fly'; expected one of ALL, ALTER"):
        acls.operation_name("Fly")


def test_kafkas_texts() -> None:
    assert acls.format_pattern("TOPIC", "orders", "LITERAL") == \
        "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    assert acls.format_acl({"principal": "User:alice", "host": "*", "operation": "READ",
                            "permission": "ALLOW"}) == \
        "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"


def test_add_plans_every_resource_principal_host_and_operation() -> None:
    plan = planned("--topic", "a", "--topic", "b", "--allow-principal", "User:alice",
                   "--allow-host", "10.0.0.1", "--deny-principal", "User:bob",
                   "--operation", "Read", "--operation", "Describe",
                   "--resource-pattern-type", "prefixed")
    assert len(plan) == 2 * 2 * 2
    assert {(a["resource_name"], a["principal"], a["host"], a["operation"], a["permission"])
            for a in plan} == {
        (topic, principal, host, operation, permission)
        for topic in ("a", "b")
        for principal, host, permission in (("User:alice", "10.0.0.1", "ALLOW"),
                                            ("User:bob", "*", "DENY"))
        for operation in ("READ", "DESCRIBE")}
    assert {a["pattern_type"] for a in plan} == {"PREFIXED"}


def test_add_defaults_to_all_and_the_cluster_is_kafka_cluster() -> None:
    assert planned("--cluster", "--allow-principal", "User:ops") == [{
        "resource_type": "CLUSTER", "resource_name": "kafka-cluster", "pattern_type": "LITERAL",
        "principal": "User:ops", "host": "*", "operation": "ALL", "permission": "ALLOW"}]


def test_producer_and_consumer_shortcuts() -> None:
    plan = planned("--producer", "--consumer", "--topic", "t", "--group", "g",
                   "--allow-principal", "User:app")
    assert sorted((a["resource_type"], a["operation"]) for a in plan) == [
        ("GROUP", "READ"), ("TOPIC", "CREATE"), ("TOPIC", "DESCRIBE"), ("TOPIC", "READ"),
        ("TOPIC", "WRITE")]


def test_an_operation_a_resource_type_does_not_take_is_refused() -> None:
    with pytest.raises(ToolError, match=r"ResourceType TOPIC only supports operations READ,WRITE,"
                                        r".* \(not CLUSTER_ACTION\)"):
        planned("--topic", "t", "--allow-principal", "User:a", "--operation", "ClusterAction")


@pytest.mark.parametrize(("argv", "message"), [
    (["--list", "--add"], "Command must include exactly one action: --add, --remove or --list"),
    (["--add", "--allow-principal", "User:a"], "--add needs a resource"),
    (["--add", "--topic", "t"], "--add needs --allow-principal or --deny-principal"),
    (["--add", "--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "any"],
     "--add needs --resource-pattern-type LITERAL or PREFIXED"),
    (["--remove"], "--remove needs a resource"),
    (["--add", "--topic", "t", "--allow-principal", "User:b", "--principal", "User:a"],
     "--principal can only be used with --list"),
    (["--add", "--topic", "t", "--allow-principal", "alice"], "principal 'alice' is not of the "
                                                             "form Type:name"),
    (["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"],
     "--consumer needs --group"),
    (["--list", "--operation", "Read"], "--list takes resources and --principal only"),
])
def test_usage_mistakes_exit_1(capsys: pytest.CaptureFixture[str], argv: list[str],
                               message: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["acls", "--bootstrap-server", URL, *argv])
    captured = capsys.readouterr()
    assert exited.value.code == 1
    assert captured.err.startswith("usage: chunkraft acls ")
    assert message in captured.err
