"""Per-node overrides of ``chunkraft cluster`` (chunkraft.local.node_settings): the syntax, and
every refusal made with the loaders' own tables before anything starts."""

from __future__ import annotations

import pytest

from chunkraft.errors import ConfigError
from chunkraft.local.node_settings import (
    MANAGED_BROKER,
    MANAGED_CONTROLLER,
    NodeOverride,
    NodeOverrides,
    check_overrides,
    parse_override,
)


@pytest.mark.parametrize(("text", "parsed"), [
    ("log.roll.ms=1000", NodeOverride(None, "log.roll.ms", "1000", "log.roll.ms=1000")),
    ("1:broker.rack=r1", NodeOverride(1, "broker.rack", "r1", "1:broker.rack=r1")),
    ("x.url=http://h:1=2", NodeOverride(None, "x.url", "http://h:1=2", "x.url=http://h:1=2")),
    (" 2 : a.b = c", NodeOverride(2, "a.b", " c", " 2 : a.b = c")),
    ("a.b=", NodeOverride(None, "a.b", "", "a.b=")),
])
def test_parse_override(text: str, parsed: NodeOverride) -> None:
    assert parse_override(text) == parsed


@pytest.mark.parametrize("text", ["novalue", "=1", "1:=2", "x:a.b=1", "-1:a.b=1", ":a=1"])
def test_parse_override_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_override(text)


def _check(kind: str, *texts: str, ids: tuple[int, ...] = (0, 1, 2)) -> NodeOverrides:
    return check_overrides(kind, [parse_override(t) for t in texts], ids)


def test_every_node_and_one_node() -> None:
    checked = _check("broker", "broker.rack=a", "1:broker.rack=b", "1:log.roll.ms=5")
    assert checked.every == {"broker.rack": "a"}
    assert checked.per_node == {1: {"broker.rack": "b", "log.roll.ms": "5"}}
    checked = _check("controller", "request.max.body.bytes=2048", ids=(1, 2, 3))
    assert checked.every == {"request.max.body.bytes": "2048"}


@pytest.mark.parametrize(("kind", "texts", "message"), [
    ("controller", ["request.max.bod.bytes=5"],
     "--controller-override request.max.bod.bytes=5: unknown setting 'request.max.bod.bytes' "
     "(command line); did you mean request.max.body.bytes?"),
    ("broker", ["log.roll.ms=soon"],
     "--broker-override log.roll.ms=soon: log.roll.ms (command line): not an integer"),
    ("broker", ["7:broker.rack=r"],
     "--broker-override 7:broker.rack=r: this cluster has no broker 7 (broker ids: 0, 1, 2)"),
    ("broker", ["broker.rack=a", "broker.rack=b"],
     "--broker-override broker.rack=b: broker.rack is given twice for the same brokers"),
    ("broker", ["listeners=http://127.0.0.1:1"],
     "--broker-override listeners=http://127.0.0.1:1: chunkraft cluster sets listeners itself"),
    ("controller", ["2:raft.password=x"],
     "--controller-override 2:raft.password=x: chunkraft cluster sets raft.password itself"),
])
def test_refusals_name_the_flag(kind: str, texts: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _check(kind, *texts)
    assert str(caught.value).startswith(message)


def test_managed_keys_are_real_settings() -> None:
    """A managed name that is not a setting would never match: the tables drifted apart."""
    from chunkraft.broker_agent.settings import SETTINGS as BROKER
    from chunkraft.controller.settings import SETTINGS as CONTROLLER

    assert {s.name for s in CONTROLLER} >= MANAGED_CONTROLLER
    assert {s.name for s in BROKER} >= MANAGED_BROKER


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="controller or broker"):
        check_overrides("zookeeper", [], ())
