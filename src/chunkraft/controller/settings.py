"""The table of controller settings: name, how its text is parsed, and what it means.

One row per property an operator can set. :mod:`.config` turns the rows into a
:class:`~chunkraft.controller.config.ControllerConfig` (the attribute is the property name with
dots as underscores: ``raft.election.timeout.min.ms`` -> ``raft_election_timeout_min_ms``), and
``docs/operations.md`` documents the same rows (a test keeps the two in step). Defaults live on
``ControllerConfig``'s fields, so there is one place to change each.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from chunkraft.controller.addresses import (
    Listener,
    parse_controller_urls,
    parse_listener,
    parse_node_id,
    parse_voters,
)
from chunkraft.controller.kafka_listeners import (
    parse_kafka_endpoints,
    parse_listener_entries,
    parse_mechanisms,
    parse_protocol_map,
)
from chunkraft.records.uuids import parse_kafka_uuid

__all__ = [
    "ENV_PREFIX",
    "SETTINGS",
    "Setting",
    "env_var",
    "parse_boolean",
    "parse_broker_principal",
    "parse_client_auth",
    "parse_cluster_id",
    "parse_integer",
    "parse_optional_listener",
    "parse_optional_path",
    "parse_principals",
    "setting_named",
]

ENV_PREFIX = "CHUNKRAFT_"
"""Environment variables that set a controller property start with this."""


def env_var(name: str) -> str:
    """The environment variable of a property: ``node.id`` -> ``CHUNKRAFT_NODE_ID``."""
    return ENV_PREFIX + name.upper().replace(".", "_")


class Setting(NamedTuple):
    """One controller property.

    ``parse`` turns the text (already stripped) into the attribute's value, or None for "not
    set" (only optional settings do that, for an empty value), and raises ValueError with a
    message that does not repeat the name. ``minimum`` bounds an integer setting.
    """

    name: str
    parse: Callable[[str], Any]
    meaning: str
    required: bool = False
    minimum: int | None = None

    @property
    def env_var(self) -> str:
        return env_var(self.name)

    @property
    def attribute(self) -> str:
        return self.name.replace(".", "_")


_INTEGER = re.compile(r"[+-]?[0-9]+")
# Kafka's principal form, Type:name. The name may hold spaces and commas (a TLS distinguished
# name, "User:CN=host, OU=ops"), which is why the list separator is ';'.
_PRINCIPAL = re.compile(r"[^\s:;]+:[^;]*\S[^;]*")


def parse_integer(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def parse_cluster_id(text: str) -> uuid.UUID:
    """A cluster id, Kafka's base64 form (or hex); ValueError if malformed or all zeros."""
    value = parse_kafka_uuid(text)  # its ValueError already says "not a uuid"
    if value.int == 0:
        raise ValueError(
            "the all-zero uuid is reserved; use `chunkraft controller random-cluster-id`"
        )
    return value


def _not_empty(text: str) -> str:
    if not text:
        raise ValueError("must not be empty")
    return text


def _path(text: str) -> Path:
    return Path(_not_empty(text))


def parse_optional_path(text: str) -> Path | None:
    return Path(text) if text else None


def parse_optional_listener(text: str) -> Listener | None:
    return parse_listener(text) if text else None


def _optional_entries(text: str) -> Any:
    return parse_listener_entries(text) if text else None


def _protocol_map(text: str) -> Any:
    return tuple(parse_protocol_map(text).items())


def _kafka_endpoints(text: str) -> Any:
    return parse_kafka_endpoints(text) if text else None


def _optional_urls(text: str) -> Any:
    return parse_controller_urls(text) if text else None


def parse_boolean(text: str) -> bool:
    value = text.lower()
    if value not in ("true", "false"):
        raise ValueError(f"not true or false: {text!r}")
    return value == "true"


def parse_broker_principal(text: str) -> str:
    if not _PRINCIPAL.fullmatch(text) or ";" in text:
        raise ValueError(f"{text!r} is not a principal of the form Type:name (User:broker-{{id}})")
    if "{id}" not in text:
        raise ValueError(f"{text!r} must contain {{id}}, replaced by the broker's id")
    try:
        text.format(id=0)
    except (IndexError, KeyError, ValueError):
        raise ValueError(f"{text!r}: only {{id}} may appear in braces") from None
    return text


_CLIENT_AUTH = ("none", "requested", "required")


def parse_client_auth(text: str) -> str:
    value = text.lower()
    if value not in _CLIENT_AUTH:
        raise ValueError(f"{text!r} is not one of {', '.join(_CLIENT_AUTH)}")
    return value


_RAFT_PROCESS = ("separate", "embedded")


def parse_raft_process(text: str) -> str:
    value = text.lower()
    if value not in _RAFT_PROCESS:
        raise ValueError(f"{text!r} is not one of {', '.join(_RAFT_PROCESS)}")
    return value


def parse_principals(text: str) -> tuple[str, ...]:
    principals: list[str] = []
    for item in (part.strip() for part in text.split(";")):
        if not item:
            continue
        if not _PRINCIPAL.fullmatch(item):
            raise ValueError(f"{item!r} is not a principal of the form Type:name (User:admin)")
        if item not in principals:
            principals.append(item)
    return tuple(principals)


SETTINGS: tuple[Setting, ...] = (
    Setting("node.id", parse_node_id, "This controller's id; must be one of the voters.", True),
    Setting(
        "cluster.id",
        parse_cluster_id,
        "The cluster's id, a Kafka base64 uuid (`chunkraft controller random-cluster-id`); must "
        "match the cluster.id the data dir was formatted with.",
        True,
    ),
    Setting(
        "controller.quorum.voters",
        parse_voters,
        "Every Raft voter as `id@host:port,...` (the Raft port, bound at this node's entry). "
        "3 or 5 voters; 1 for tests. The same list on every controller.",
        True,
    ),
    Setting(
        "data.dir",
        _path,
        "Directory of meta.properties, the Raft journal and snapshots; prepared by "
        "`chunkraft controller format`.",
        True,
    ),
    Setting(
        "raft.password",
        _not_empty,
        "Shared secret that encrypts Raft traffic (pysyncobj's password); the same on every "
        "controller. Required: set it or raft.password.file, not both.",
    ),
    Setting(
        "raft.password.file",
        parse_optional_path,
        "A file whose content (surrounding whitespace removed) is raft.password.",
    ),
    Setting("listeners", parse_listener_entries,
            "Where the HTTP API listens, `http://host:port`, and, comma-separated in Kafka's "
            "syntax, any Kafka-protocol listeners: `NAME://host:port` (PLAINTEXT, SSL, "
            "SASL_PLAINTEXT, SASL_SSL, or a name listener.security.protocol.map maps).", True),
    Setting(
        "advertised.listeners",
        _optional_entries,
        "The addresses others use to reach this controller, in the form of listeners: the HTTP "
        "URL and Kafka listeners by name; default: listeners. Required when a listener binds "
        "0.0.0.0 or ::.",
    ),
    Setting(
        "listener.security.protocol.map",
        _protocol_map,
        "Kafka's map of listener names to security protocols, `NAME:PROTOCOL,...`, for "
        "listeners whose name is not a protocol.",
    ),
    Setting(
        "sasl.enabled.mechanisms",
        parse_mechanisms,
        "The SASL mechanisms the SASL listeners offer: PLAIN (username = principal, password "
        "= its bearer token) and OAUTHBEARER (the bearer token).",
    ),
    Setting(
        "controller.kafka.endpoints",
        _kafka_endpoints,
        "Every controller's Kafka listener as `id@host:port,...`: the controllers that "
        "DescribeCluster names to `--bootstrap-controller` clients; default: this node's own.",
    ),
    Setting(
        "socket.request.max.bytes",
        parse_integer,
        "Largest Kafka request frame; a longer one closes its connection before it is read.",
        minimum=1024,
    ),
    Setting(
        "max.connections.per.ip",
        parse_integer,
        "Most open Kafka-protocol connections from one address; more are closed at once.",
        minimum=1,
    ),
    Setting(
        "connections.max.idle.ms",
        parse_integer,
        "A Kafka-protocol connection that sends nothing for this long is closed.",
        minimum=1,
    ),
    Setting(
        "sasl.handshake.timeout.ms",
        parse_integer,
        "A Kafka-protocol connection of a SASL listener must authenticate within this time.",
        minimum=1,
    ),
    Setting(
        "controller.http.urls",
        _optional_urls,
        "Every controller's HTTP URL as `id@http://host:port,...`, to forward writes to the "
        "leader. Required with more than one voter: every voter listed, this node's entry "
        "equal to advertised.listeners. With one voter, default: `node.id@advertised.listeners`.",
    ),
    Setting(
        "raft.process",
        parse_raft_process,
        "`separate`: the Raft node (pysyncobj, its journal and port) runs in a process of its "
        "own beside the API's, so no request can delay a heartbeat; `embedded`: in the API's "
        "process, as a thread.",
    ),
    Setting(
        "raft.election.timeout.min.ms",
        parse_integer,
        "Shortest time a follower waits for the leader before it starts an election; must "
        "exceed 3 x raft.append.entries.period.ms.",
        minimum=1,
    ),
    Setting(
        "raft.election.timeout.max.ms",
        parse_integer,
        "Longest such wait (each election picks a random time in between); must exceed the "
        "minimum.",
        minimum=1,
    ),
    Setting(
        "raft.append.entries.period.ms",
        parse_integer,
        "How often the leader sends entries or a heartbeat to each follower.",
        minimum=1,
    ),
    Setting(
        "raft.connection.retry.ms",
        parse_integer,
        "Wait before reconnecting to a peer that is not connected.",
        minimum=1,
    ),
    Setting(
        "raft.leader.fallback.timeout.ms",
        parse_integer,
        "A leader that hears from no majority for this long steps down; must exceed "
        "raft.append.entries.period.ms.",
        minimum=1,
    ),
    Setting(
        "raft.log.compaction.min.entries",
        parse_integer,
        "Raft log entries since the last compaction before the next one may start.",
        minimum=2,
    ),
    Setting(
        "raft.log.compaction.min.time.ms",
        parse_integer,
        "Time since the last Raft log compaction before the next one may start.",
        minimum=1,
    ),
    Setting(
        "raft.log.compaction.max.bytes",
        parse_integer,
        "Journal bytes since the last compaction after which one is forced, whatever the count.",
        minimum=1024,
    ),
    # The Raft transport guard (controller/raft/transport_guard.py, docs/controller.md).
    Setting(
        "raft.max.message.bytes",
        parse_integer,
        "Largest Raft message an authenticated peer may announce; a longer one closes the "
        "connection before it is read. Before authentication the limit is 64 KiB, whatever "
        "this says. At least 188743680 (180 MiB), the largest message a peer can send.",
        minimum=180 * 1024 * 1024,
    ),
    Setting(
        "raft.max.connections.per.address",
        parse_integer,
        "Most unauthenticated incoming Raft connections from one IP address; a new one closes "
        "that address's oldest.",
        minimum=1,
    ),
    Setting(
        "raft.handshake.timeout.ms",
        parse_integer,
        "A Raft connection that has not authenticated (completed the password handshake) "
        "within this time is closed, idle or not.",
        minimum=100,
    ),
    Setting(
        "raft.message.timeout.ms",
        parse_integer,
        "A Raft message begun but not complete after this time closes its connection.",
        minimum=100,
    ),
    Setting(
        "broker.session.timeout.ms",
        parse_integer,
        "A broker that has not heartbeated for this long is fenced.",
        minimum=1,
    ),
    Setting(
        "broker.heartbeat.interval.ms",
        parse_integer,
        "How often brokers are told to heartbeat; must be less than broker.session.timeout.ms.",
        minimum=1,
    ),
    Setting(
        "log.retention.check.interval.ms",
        parse_integer,
        "How often the leader deletes the inactive chunks past their topic's retention.ms "
        "(at most 1000 chunks a pass).",
        minimum=1,
    ),
    Setting(
        "super.users",
        parse_principals,
        "Principals allowed everything, whatever the ACLs: `User:admin;User:ops` (';' between "
        "them, since a principal's name may hold commas). Default: none.",
    ),
    Setting(
        "allow.everyone.if.no.acl.found",
        parse_boolean,
        "`true`: a resource no ACL matches is open to every principal (Kafka's setting of the "
        "same name). Default `false`: only super users and ACLs grant anything.",
    ),
    Setting(
        "auth.credentials.file",
        parse_optional_path,
        "The credentials file of bearer tokens (SHA-256 digests; `chunkraft credentials add`). "
        "Re-read within a second of a change. Default: none (no bearer tokens).",
    ),
    Setting(
        "auth.allow.anonymous",
        parse_boolean,
        "`true`: a request without credentials is served as `User:ANONYMOUS` (ACLs still "
        "apply) instead of answered 401.",
    ),
    Setting(
        "auth.broker.principal",
        parse_broker_principal,
        "The principal broker `{id}` must authenticate as to act as that broker (register, "
        "heartbeat, AlterPartition...).",
    ),
    Setting(
        "ssl.certfile",
        parse_optional_path,
        "PEM certificate (chain) of this controller's HTTPS listener; requires an https:// "
        "listener and ssl.keyfile.",
    ),
    Setting(
        "ssl.keyfile",
        parse_optional_path,
        "PEM private key of ssl.certfile.",
    ),
    Setting(
        "ssl.ca.file",
        parse_optional_path,
        "PEM CA bundle that client certificates are verified with, and that this controller "
        "verifies the other controllers' certificates with when it forwards a write.",
    ),
    Setting(
        "ssl.client.auth",
        parse_client_auth,
        "`none`, `requested` or `required`: whether the HTTPS listener asks clients for a "
        "certificate (verified with ssl.ca.file; a valid one authenticates as `User:<CN>`).",
    ),
    Setting(
        "metadata.max.retained.bytes",
        parse_integer,
        "Bytes of committed records kept in memory for the metadata stream; a subscriber "
        "further behind loads a snapshot.",
        minimum=1,
    ),
    Setting(
        "metadata.snapshot.export.dir",
        parse_optional_path,
        "Directory each new Raft dump (snapshot) is exported to as Parquet tables, in "
        "`<offset>-<epoch>` subdirectories, by a detached low-priority process; empty: off.",
    ),
    Setting(
        "metadata.snapshot.export.retain",
        parse_integer,
        "Complete snapshot exports kept in metadata.snapshot.export.dir; older ones are "
        "deleted after each export.",
        minimum=1,
    ),
    Setting(
        "request.timeout.ms",
        parse_integer,
        "How long a request may wait for its records to commit, or for a forwarded call to "
        "the leader, before it fails.",
        minimum=1,
    ),
    # Bounded work per request (docs/api.md, "Limits"): what one HTTP request may cost.
    Setting(
        "request.max.body.bytes",
        parse_integer,
        "Largest request body; a longer one is answered 413 before more of it is read "
        "(chunked bodies too).",
        minimum=1024,
    ),
    Setting(
        "request.max.header.bytes",
        parse_integer,
        "Largest total of a request's header names and values (and its path and query); "
        "over it the answer is 431.",
        minimum=1024,
    ),
    Setting(
        "request.max.batch.items",
        parse_integer,
        "Most items in one batch of a request (topics, partitions, chunks, ACLs); more is "
        "answered 400 INVALID_REQUEST.",
        minimum=1,
    ),
    Setting(
        "request.max.assignments",
        parse_integer,
        "Most partitions (or chunks) one request may give replicas to, all topics together; "
        "more is refused with POLICY_VIOLATION.",
        minimum=1,
    ),
    Setting(
        "request.max.assignment.replicas",
        parse_integer,
        "Most broker ids one request may list in its assignments, replica lists and ISRs; "
        "more is refused with POLICY_VIOLATION.",
        minimum=1,
    ),
    Setting(
        "request.max.json.values",
        parse_integer,
        "Most JSON values a request body may hold (counted before parsing, an upper bound); "
        "more is answered 413: a parser's cost grows with the values, and it holds the GIL.",
        minimum=1000,
    ),
    # HTTP connections a slow client cannot outlast (chunkraft.api.http_guard).
    Setting(
        "http.head.timeout.ms",
        parse_integer,
        "A request's line and headers must arrive within this of the connection opening (or "
        "of the request's first byte on a kept-alive connection); else the connection is "
        "closed.",
        minimum=100,
    ),
    Setting(
        "http.body.timeout.ms",
        parse_integer,
        "A request's body must arrive within this of its headers; else the connection is "
        "closed.",
        minimum=100,
    ),
    Setting(
        "http.max.connections.per.address",
        parse_integer,
        "Most HTTP connections one client address may hold open on this controller; one more "
        "is closed at once.",
        minimum=1,
    ),
)
"""Every controller property, in the order the docs list them."""

_BY_NAME = {setting.name: setting for setting in SETTINGS}


def setting_named(name: str) -> Setting | None:
    """The setting called ``name``, or None if there is no such property."""
    return _BY_NAME.get(name)
