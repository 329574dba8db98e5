"""Per-node settings of ``chunkraft cluster``: ``--controller-override`` / ``--broker-override``.

An override is ``KEY=VALUE`` (every node of that kind) or ``ID:KEY=VALUE`` (node ``ID`` only,
winning over a ``KEY=VALUE`` of the same key). A property name never holds a colon, so the
colon before the first ``=`` is unambiguous, and a value may hold colons (URLs).

:func:`check_overrides` checks them with the loaders' own tables (``read_layers`` of
:mod:`chunkraft.controller.config_layers`, the code that reads every node's file) before
anything starts: an unknown key (with the closest known name as a hint), a value that does not
parse, a node id the cluster does not have, the same key given twice for the same nodes, and a
key the launcher sets itself (:data:`MANAGED_CONTROLLER`, :data:`MANAGED_BROKER`: identities,
ports, directories and secrets that ``cluster.json`` and the launcher's bookkeeping depend on).
Each refusal is a :class:`~chunkraft.errors.ConfigError` naming the flag as it was given.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from chunkraft.broker_agent.settings import SETTINGS as BROKER_SETTINGS
from chunkraft.controller.config_layers import SettingLike, read_layers
from chunkraft.controller.settings import SETTINGS as CONTROLLER_SETTINGS
from chunkraft.errors import ConfigError

__all__ = [
    "MANAGED_BROKER",
    "MANAGED_CONTROLLER",
    "NodeOverride",
    "NodeOverrides",
    "check_overrides",
    "parse_override",
]

_TLS = frozenset({"ssl.certfile", "ssl.keyfile", "ssl.ca.file", "ssl.client.auth"})
MANAGED_CONTROLLER = frozenset({
    "node.id", "cluster.id", "controller.quorum.voters", "controller.http.urls", "data.dir",
    "raft.password", "listeners", "advertised.listeners", "auth.credentials.file",
    "super.users"}) | _TLS
"""Controller properties ``chunkraft cluster`` writes itself and an override may not change."""
MANAGED_BROKER = frozenset({
    "node.id", "cluster.id", "controller.quorum.bootstrap.servers", "listeners",
    "advertised.listeners", "log.dirs", "broker.token.file", "auth.credentials.file",
    "super.users"}) | _TLS
"""Broker properties ``chunkraft cluster`` writes itself and an override may not change."""


@dataclass(frozen=True, slots=True)
class NodeOverride:
    """One ``[ID:]KEY=VALUE`` as given; ``node_id`` None means every node of its kind."""

    node_id: int | None
    key: str
    value: str
    text: str
    """The flag's argument as typed, for error messages."""


@dataclass(slots=True)
class NodeOverrides:
    """Checked overrides: ``every`` for all nodes, ``per_node`` by node id (these win)."""

    every: dict[str, str] = field(default_factory=dict)
    per_node: dict[int, dict[str, str]] = field(default_factory=dict)


def parse_override(text: str) -> NodeOverride:
    """``KEY=VALUE`` or ``ID:KEY=VALUE`` (ID a non-negative integer); ValueError otherwise."""
    target, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"expected KEY=VALUE or ID:KEY=VALUE, got {text!r}")
    node_id: int | None = None
    if ":" in target:
        number, _, target = target.partition(":")
        if not number.strip().isdigit():
            raise ValueError(f"expected ID:KEY=VALUE with ID a node id, got {text!r}")
        node_id = int(number)
    key = target.strip()
    if not key:
        raise ValueError(f"expected KEY=VALUE or ID:KEY=VALUE, got {text!r}")
    return NodeOverride(node_id, key, value, text)


def check_overrides(kind: str, overrides: Sequence[NodeOverride],
                    node_ids: Collection[int]) -> NodeOverrides:
    """The ``kind`` (``controller`` or ``broker``) overrides, checked as the module docstring
    says against the nodes ``node_ids``; ConfigError naming ``--<kind>-override ARG``."""
    if kind == "controller":
        settings: Sequence[SettingLike] = CONTROLLER_SETTINGS
        managed = MANAGED_CONTROLLER
    elif kind == "broker":
        settings, managed = BROKER_SETTINGS, MANAGED_BROKER
    else:
        raise ValueError(f"kind must be controller or broker, not {kind!r}")
    flag = f"--{kind}-override"
    checked = NodeOverrides()
    for override in overrides:
        where = f"{flag} {override.text}"
        try:
            # the loaders' own check: unknown names (with a hint) and values that do not parse
            read_layers(settings, None, {}, {override.key: override.value})
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}", setting=override.key) from None
        if override.key in managed:
            raise ConfigError(f"{where}: chunkraft cluster sets {override.key} itself (from "
                              "cluster.json and its directory); it cannot be overridden",
                              setting=override.key)
        if override.node_id is None:
            target = checked.every
        elif override.node_id in node_ids:
            target = checked.per_node.setdefault(override.node_id, {})
        else:
            known = ", ".join(str(n) for n in sorted(node_ids)) or "none"
            raise ConfigError(f"{where}: this cluster has no {kind} {override.node_id} "
                              f"({kind} ids: {known})", setting=override.key)
        if override.key in target:
            raise ConfigError(f"{where}: {override.key} is given twice for the same "
                              f"{kind}s", setting=override.key)
        target[override.key] = override.value
    return checked
