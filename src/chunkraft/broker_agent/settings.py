"""The table of broker settings: name, how its text is parsed, and what it means.

One row per property of ``chunkraft broker --config FILE``. :mod:`.config` turns the rows into
a :class:`~chunkraft.broker_agent.config.BrokerConfig` (the attribute is the property name with
dots as underscores), and ``docs/broker.md`` lists the same rows (a test keeps the two in step).
Defaults live on ``BrokerConfig``'s fields. Environment variables are ``CHUNKRAFT_BROKER_`` and
the name upper-cased with dots as underscores (``CHUNKRAFT_BROKER_NODE_ID``): a prefix of its
own, so a controller's ``CHUNKRAFT_NODE_ID`` in the same shell never configures a broker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chunkraft.controller.addresses import parse_listener, parse_node_id
from chunkraft.controller.kafka_listeners import (
    parse_listener_entries,
    parse_mechanisms,
    parse_protocol_map,
)
from chunkraft.controller.settings import Setting, parse_cluster_id
from chunkraft.controller.settings import parse_boolean as _boolean
from chunkraft.controller.settings import parse_broker_principal as _broker_principal
from chunkraft.controller.settings import parse_client_auth as _client_auth
from chunkraft.controller.settings import parse_integer as _integer
from chunkraft.controller.settings import parse_optional_path as _optional_path
from chunkraft.controller.settings import parse_principals as _principals

__all__ = ["ENV_PREFIX", "SETTINGS", "BrokerSetting", "broker_env_var", "setting_named"]

ENV_PREFIX = "CHUNKRAFT_BROKER_"


def broker_env_var(name: str) -> str:
    """The environment variable of a property: ``node.id`` -> ``CHUNKRAFT_BROKER_NODE_ID``."""
    return ENV_PREFIX + name.upper().replace(".", "_")


class BrokerSetting(Setting):
    """One broker property: a controller :class:`~chunkraft.controller.settings.Setting` row
    whose environment variable has the broker's own prefix (``CHUNKRAFT_BROKER_``)."""

    __slots__ = ()

    @property
    def env_var(self) -> str:
        return broker_env_var(self.name)






def _optional_entries(text: str) -> Any:
    return parse_listener_entries(text) if text else None


def _protocol_map(text: str) -> Any:
    return tuple(parse_protocol_map(text).items())


def _optional_text(text: str) -> str | None:
    return text or None




def _optional_cluster_id(text: str) -> Any:
    return parse_cluster_id(text) if text else None


def _log_dirs(text: str) -> tuple[Path, ...]:
    dirs = tuple(Path(part.strip()) for part in text.split(",") if part.strip())
    if not dirs:
        raise ValueError("must name a directory")
    if len(dirs) > 1:
        raise ValueError("only one log directory is supported (JBOD is not)")
    return dirs


def _controller_urls(text: str) -> tuple[str, ...]:
    urls: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        listener = parse_listener(part)
        if listener.url not in urls:
            urls.append(listener.url)
    if not urls:
        raise ValueError("at least one controller URL (http://host:port) is needed")
    return tuple(urls)





SETTINGS: tuple[BrokerSetting, ...] = (
    BrokerSetting("node.id", parse_node_id, "This broker's id (its own id space: controllers' "
                  "ids may repeat). Principal `User:broker-<id>` acts as this broker.", True),
    BrokerSetting("cluster.id", _optional_cluster_id, "The cluster's id; when set, the broker "
                  "refuses controllers of another cluster. Default: learnt from the "
                  "controllers' metadata stream."),
    BrokerSetting("broker.rack", _optional_text, "The rack this broker is in (rack-aware "
                  "placement). Default: none."),
    BrokerSetting("controller.quorum.bootstrap.servers", _controller_urls, "The controllers' "
                  "HTTP URLs, `http://host:port,...`; any of them serves the broker (followers "
                  "forward writes to the leader).", True),
    BrokerSetting("listeners", parse_listener_entries, "Where the data plane listens: "
                  "`http://host:port` (or https://), registered as listener `HTTP` (`HTTPS`); "
                  "and, comma-separated in Kafka's syntax, any Kafka-protocol listeners "
                  "`NAME://host:port` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, or a name "
                  "listener.security.protocol.map maps), registered under their names.", True),
    BrokerSetting("advertised.listeners", _optional_entries, "The addresses others reach this "
                  "broker at, in the form of listeners (the HTTP URL, Kafka listeners by "
                  "name); default: listeners. Required when a listener binds 0.0.0.0 or ::."),
    BrokerSetting("listener.security.protocol.map", _protocol_map, "Kafka's `NAME:PROTOCOL,...` "
                  "for Kafka listeners whose name is not a security protocol."),
    BrokerSetting("sasl.enabled.mechanisms", parse_mechanisms, "The SASL mechanisms of the SASL "
                  "listeners: PLAIN (username = principal, password = its bearer token) and "
                  "OAUTHBEARER (the bearer token)."),
    BrokerSetting("socket.request.max.bytes", _integer, "Largest Kafka request frame; a longer "
                  "one closes its connection before it is read.", minimum=1024),
    BrokerSetting("max.connections.per.ip", _integer, "Most open Kafka-protocol connections "
                  "from one address; more are closed at once.", minimum=1),
    BrokerSetting("connections.max.idle.ms", _integer, "A Kafka-protocol connection that sends "
                  "nothing for this long is closed.", minimum=1),
    BrokerSetting("sasl.handshake.timeout.ms", _integer, "A connection to a SASL listener must "
                  "authenticate within this time.", minimum=1),
    BrokerSetting("log.dirs", _log_dirs, "The directory of this broker's partition logs (one).",
                  True),
    BrokerSetting("broker.token.file", _optional_path, "A file holding the bearer token this "
                  "broker presents to the controllers and to other brokers (its principal "
                  "must be `User:broker-<node.id>`). Default: none (anonymous)."),
    BrokerSetting("auth.credentials.file", _optional_path, "The credentials file of the bearer "
                  "tokens this broker accepts (`chunkraft credentials add`)."),
    BrokerSetting("auth.allow.anonymous", _boolean, "`true`: a request without credentials is "
                  "`User:ANONYMOUS` (ACLs still apply) instead of a 401."),
    BrokerSetting("super.users", _principals, "Principals allowed everything: "
                  "`User:admin;User:ops`."),
    BrokerSetting("allow.everyone.if.no.acl.found", _boolean, "`true`: a resource no ACL "
                  "matches is open to everyone (Kafka's setting)."),
    BrokerSetting("auth.broker.principal", _broker_principal, "The principal broker `{id}` "
                  "authenticates as (peer fetches are accepted only from it)."),
    BrokerSetting("ssl.certfile", _optional_path, "PEM certificate of an https:// listener."),
    BrokerSetting("ssl.keyfile", _optional_path, "PEM private key of ssl.certfile."),
    BrokerSetting("ssl.ca.file", _optional_path, "PEM CA bundle: verifies client certificates, "
                  "and the controllers' and peers' certificates this broker connects to."),
    BrokerSetting("ssl.client.auth", _client_auth, "`none`, `requested` or `required`."),
    BrokerSetting("broker.heartbeat.interval.ms", _integer, "How often the broker heartbeats "
                  "to the controller; keep it well under the controllers' "
                  "broker.session.timeout.ms.", minimum=10),
    BrokerSetting("controlled.shutdown.timeout.ms", _integer, "How long a SIGTERM waits for "
                  "the controller to move leadership away before the broker exits anyway.",
                  minimum=0),
    BrokerSetting("request.timeout.ms", _integer, "How long one controller call may take, "
                  "retries on other controllers included.", minimum=100),
    BrokerSetting("metadata.fetch.wait.max.ms", _integer, "The long poll of the metadata "
                  "stream: how long a controller may hold a read with nothing new.", minimum=0),
    BrokerSetting("replica.lag.time.max.ms", _integer, "A follower that has not caught up to "
                  "the leader's log end for this long leaves the ISR.", minimum=1),
    BrokerSetting("replica.fetch.wait.max.ms", _integer, "The long poll of a follower's fetch.",
                  minimum=0),
    BrokerSetting("replica.fetch.max.bytes", _integer, "Bytes a follower asks for per "
                  "partition and fetch.", minimum=1),
    BrokerSetting("min.insync.replicas", _integer, "acks=all needs at least this many ISR "
                  "members (else NOT_ENOUGH_REPLICAS).", minimum=1),
    BrokerSetting("chunk.copy.throttle.bytes.per.second", _integer, "Byte rate of chunk copies "
                  "(moves and creates) on this broker; -1: unlimited.", minimum=-1),
    BrokerSetting("log.segment.bytes", _integer, "A segment rolls at this size.", minimum=1024),
    BrokerSetting("log.roll.ms", _integer, "A segment rolls at this age.", minimum=1),
    BrokerSetting("log.retention.ms", _integer, "Segments older than this are deleted; -1: "
                  "kept forever.", minimum=-1),
    BrokerSetting("log.retention.bytes", _integer, "A log beyond this size loses its oldest "
                  "segments; -1: no limit.", minimum=-1),
    BrokerSetting("log.retention.check.interval.ms", _integer, "How often retention runs.",
                  minimum=1),
    BrokerSetting("log.flush.interval.messages", _integer, "fsync after this many messages "
                  "(default: never forced; segments are flushed when they roll and at "
                  "shutdown).", minimum=1),
    BrokerSetting("log.flush.interval.ms", _integer, "fsync a log at least this often "
                  "(default: never forced).", minimum=1),
    BrokerSetting("log.index.interval.bytes", _integer, "Bytes between offset index entries.",
                  minimum=1),
    BrokerSetting("transaction.state.log.num.partitions", _integer, "Partitions of "
                  "`__transaction_state` when a broker creates it (first FindCoordinator of a "
                  "transactional id).", minimum=1),
    BrokerSetting("offsets.topic.num.partitions", _integer, "Partitions of "
                  "`__consumer_offsets` when a broker creates it (first FindCoordinator of a "
                  "group).", minimum=1),
    BrokerSetting("transaction.max.timeout.ms", _integer, "The largest transaction timeout a "
                  "producer may ask for (else INVALID_TRANSACTION_TIMEOUT).", minimum=1),
)
"""Every broker property, in the order docs/broker.md lists them."""

_BY_NAME = {setting.name: setting for setting in SETTINGS}


def setting_named(name: str) -> BrokerSetting | None:
    """The setting called ``name``, or None if there is no such property."""
    return _BY_NAME.get(name)
