"""A controller node's configuration: :class:`ControllerConfig` and where it is loaded from.

:func:`load_controller_config` reads, lowest precedence first: the defaults (the fields below),
a Kafka-style properties file, ``CHUNKRAFT_*`` environment variables (the property name upper-
cased, dots as underscores: ``CHUNKRAFT_NODE_ID``), and overrides from the command line. Every
error names the property and where its value came from. The properties are listed, with their
meaning, in :mod:`.settings` and in ``docs/operations.md``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, fields
from pathlib import Path
from typing import Any

from chunkraft.controller.addresses import ControllerUrl, Listener, Voter, is_wildcard
from chunkraft.controller.config_layers import COMMAND_LINE, RawSetting, read_layers
from chunkraft.controller.kafka_listeners import (
    SASL_MECHANISMS,
    KafkaListener,
    advertised_kafka,
    kafka_listeners,
    rest_listener,
)
from chunkraft.controller.settings import SETTINGS
from chunkraft.errors import ConfigError

__all__ = [
    "COMMAND_LINE",
    "DEFAULT",
    "ControllerConfig",
    "check_authentication",
    "load_controller_config",
]

_log = logging.getLogger(__name__)

"""The source named in errors for a value given by a flag or ``--override``."""
DEFAULT = "default"
"""The source named in errors for a value nobody set."""

_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True, repr=False)
class ControllerConfig:
    """Every setting of one controller node, checked against each other; immutable, thread-safe.

    Attribute names are the property names with dots as underscores. Building one checks ranges
    and consistency (this node among the voters, timeouts that pysyncobj accepts, every voter's
    HTTP URL known) and raises :class:`~chunkraft.errors.ConfigError`; ``sources`` maps property
    names to where each value came from, only for those messages. ``repr`` never shows the Raft
    password.
    """

    node_id: int
    cluster_id: uuid.UUID
    controller_quorum_voters: tuple[Voter, ...]
    data_dir: Path
    raft_password: str
    listeners: Listener
    advertised_listeners: Listener
    controller_http_urls: tuple[ControllerUrl, ...]
    # Defaults from PYSYNCOBJ.md: pysyncobj's own (0.4-1.4 s elections, 5 s reconnects, 30 s
    # leader fallback) made failovers take seconds in our measurements.
    raft_process: str = "separate"
    raft_election_timeout_min_ms: int = 200
    raft_election_timeout_max_ms: int = 500
    raft_append_entries_period_ms: int = 50
    raft_connection_retry_ms: int = 500
    raft_leader_fallback_timeout_ms: int = 1500
    # pysyncobj compacts every 5,000 entries by default: far too often for a large image.
    raft_log_compaction_min_entries: int = 50_000
    raft_log_compaction_min_time_ms: int = 300_000
    # A restart reads the whole journal: bound it by bytes too, since large entries are few.
    raft_log_compaction_max_bytes: int = 256 * _MIB
    # The Raft transport guard (controller/raft/transport_guard.py explains each figure):
    # messages up to ~171 MiB are legitimate at worst; a real handshake takes milliseconds.
    raft_max_message_bytes: int = 256 * _MIB
    raft_max_connections_per_address: int = 8
    raft_handshake_timeout_ms: int = 5_000
    raft_message_timeout_ms: int = 30_000
    metadata_snapshot_export_dir: Path | None = None
    metadata_snapshot_export_retain: int = 3
    broker_session_timeout_ms: int = 9_000
    broker_heartbeat_interval_ms: int = 2_000
    # Kafka's log.retention.check.interval.ms: here, the leader's pass over inactive chunks.
    log_retention_check_interval_ms: int = 300_000
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False
    auth_credentials_file: Path | None = None
    auth_allow_anonymous: bool = False
    auth_broker_principal: str = "User:broker-{id}"
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_ca_file: Path | None = None
    ssl_client_auth: str = "none"
    metadata_max_retained_bytes: int = 64 * _MIB
    request_timeout_ms: int = 30_000
    # Bounded work per request (chunkraft.api.limits, docs/api.md): 1 MiB of the densest JSON
    # parses in about 0.1 s, and 10,000 assignments are Kafka's 10,000 records per operation.
    request_max_body_bytes: int = _MIB
    request_max_header_bytes: int = 32 * 1024
    request_max_batch_items: int = 1000
    request_max_assignments: int = 10_000
    request_max_assignment_replicas: int = 50_000
    request_max_json_values: int = 100_000
    # HTTP connections (chunkraft.api.http_guard): slow-loris clients are cut.
    http_head_timeout_ms: int = 10_000
    http_body_timeout_ms: int = 30_000
    http_max_connections_per_address: int = 1_000
    # Kafka-protocol listeners (chunkraft.kafka.server): split out of listeners by _derive.
    kafka_listeners: tuple[KafkaListener, ...] = ()
    kafka_advertised_listeners: tuple[KafkaListener, ...] = ()
    listener_security_protocol_map: tuple[tuple[str, str], ...] = ()
    sasl_enabled_mechanisms: tuple[str, ...] = SASL_MECHANISMS
    controller_kafka_endpoints: tuple[tuple[int, str, int], ...] | None = None
    # Kafka's own default frame limit is 100 MiB; an admin request is far smaller, and a
    # controller must not buffer 100 MiB per connection.
    socket_request_max_bytes: int = 8 * _MIB
    max_connections_per_ip: int = 1_000
    connections_max_idle_ms: int = 600_000
    sasl_handshake_timeout_ms: int = 10_000
    sources: InitVar[Mapping[str, str] | None] = None

    def __post_init__(self, sources: Mapping[str, str] | None) -> None:
        _check(self, _Where(sources or {}))

    @property
    def voter(self) -> Voter:
        """This node's entry in ``controller.quorum.voters``."""
        return next(v for v in self.controller_quorum_voters if v.node_id == self.node_id)

    @property
    def raft_address(self) -> str:
        """This node's Raft ``host:port``, the address pysyncobj binds and peers connect to."""
        return self.voter.address

    @property
    def peer_addresses(self) -> tuple[str, ...]:
        """The other voters' Raft ``host:port``, in the order the voters are written."""
        return tuple(v.address for v in self.controller_quorum_voters if v.node_id != self.node_id)

    def http_url_of(self, node_id: int) -> str:
        """The HTTP URL of controller ``node_id``; KeyError if it is not a voter."""
        for entry in self.controller_http_urls:
            if entry.node_id == node_id:
                return entry.url
        raise KeyError(node_id)

    def __repr__(self) -> str:
        shown = []
        for field in fields(self):
            value = repr(getattr(self, field.name))
            if field.name == "raft_password":
                value = "<redacted>"
            shown.append(f"{field.name}={value}")
        return f"ControllerConfig({', '.join(shown)})"

    __str__ = __repr__


class _Where:
    """Renders a property with where its value came from: ``node.id (command line)``."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = sources

    def __call__(self, name: str) -> str:
        source = self.sources.get(name)
        return f"{name} ({source})" if source else name

    def error(self, name: str, message: str) -> ConfigError:
        return ConfigError(f"{self(name)}: {message}", setting=name, source=self.sources.get(name))


def _check(config: ControllerConfig, where: _Where) -> None:
    for setting in SETTINGS:
        if setting.minimum is None:
            continue
        value: int = getattr(config, setting.attribute)
        if value < setting.minimum:
            raise where.error(setting.name, f"must be at least {setting.minimum}, got {value}")
    _check_quorum(config, where)
    _check_timings(config, where)
    _check_http(config, where)
    _check_tls(config, where)


def _check_quorum(config: ControllerConfig, where: _Where) -> None:
    voter_ids = [v.node_id for v in config.controller_quorum_voters]
    if not voter_ids:
        raise where.error("controller.quorum.voters", "at least one voter is required")
    if config.node_id not in voter_ids:
        raise where.error(
            "node.id",
            f"{config.node_id} is not among {where('controller.quorum.voters')}, whose ids are "
            f"{', '.join(map(str, voter_ids))}; a controller must be one of the voters",
        )
    if not config.raft_password:
        raise where.error("raft.password", "must not be empty")


def _check_timings(config: ControllerConfig, where: _Where) -> None:
    # The first three are pysyncobj's own assertions (SyncObjConf.validate), caught here with a
    # message instead of an AssertionError at start.
    period = config.raft_append_entries_period_ms
    rules = (
        (
            "raft.election.timeout.min.ms",
            config.raft_election_timeout_min_ms > 3 * period,
            f"{config.raft_election_timeout_min_ms} must be more than 3 x "
            f"{where('raft.append.entries.period.ms')} = {3 * period}",
        ),
        (
            "raft.election.timeout.max.ms",
            config.raft_election_timeout_max_ms > config.raft_election_timeout_min_ms,
            f"{config.raft_election_timeout_max_ms} must be more than "
            f"{where('raft.election.timeout.min.ms')} = {config.raft_election_timeout_min_ms}",
        ),
        (
            "raft.leader.fallback.timeout.ms",
            config.raft_leader_fallback_timeout_ms > period,
            f"{config.raft_leader_fallback_timeout_ms} must be more than "
            f"{where('raft.append.entries.period.ms')} = {period}",
        ),
        (
            "broker.heartbeat.interval.ms",
            config.broker_heartbeat_interval_ms < config.broker_session_timeout_ms,
            f"{config.broker_heartbeat_interval_ms} must be less than "
            f"{where('broker.session.timeout.ms')} = {config.broker_session_timeout_ms}",
        ),
    )
    for name, holds, message in rules:
        if not holds:
            raise where.error(name, message)


def _check_http(config: ControllerConfig, where: _Where) -> None:
    advertised = config.advertised_listeners
    if is_wildcard(advertised.host):
        raise where.error(
            "advertised.listeners",
            f"{advertised.url} is not an address others can connect to; set "
            "advertised.listeners to this controller's reachable http://host:port",
        )
    listener, raft = config.listeners, config.voter
    same_host = listener.host.lower() == raft.host.lower() or is_wildcard(listener.host)
    if same_host and listener.port == raft.port:
        raise where.error(
            "listeners",
            f"{listener.url} uses the Raft port of this node's voter entry {raft} in "
            f"{where('controller.quorum.voters')}",
        )
    voter_ids = {v.node_id for v in config.controller_quorum_voters}
    url_ids = {entry.node_id for entry in config.controller_http_urls}
    if url_ids != voter_ids:
        problems = []
        if missing := sorted(voter_ids - url_ids):
            problems.append(f"no URL for voter(s) {', '.join(map(str, missing))}")
        if extra := sorted(url_ids - voter_ids):
            problems.append(f"{', '.join(map(str, extra))} not among the voters")
        raise where.error(
            "controller.http.urls",
            f"{'; '.join(problems)}: it must list exactly the ids of "
            f"{where('controller.quorum.voters')}",
        )
    own = config.http_url_of(config.node_id)
    if own != advertised.url:
        raise where.error(
            "controller.http.urls",
            f"this node's entry {config.node_id}@{own} differs from "
            f"{where('advertised.listeners')} = {advertised.url}",
        )


def _check_tls(config: ControllerConfig, where: _Where) -> None:
    """The certificate is needed by an https:// listener or a TLS Kafka listener (SSL,
    SASL_SSL), and only then."""
    https = config.listeners.scheme == "https"
    kafka_tls = [str(entry) for entry in config.kafka_listeners if entry.uses_tls]
    needs = ([config.listeners.url] if https else []) + kafka_tls
    if needs and config.ssl_certfile is None:
        raise where.error("listeners", f"{', '.join(needs)} serve{'s' if len(needs) == 1 else ''}"
                          " TLS: set ssl.certfile and ssl.keyfile to this controller's "
                          "certificate and key")
    if config.ssl_certfile is not None and not needs:
        raise where.error("ssl.certfile", f"set, but {where('listeners')} = "
                          f"{config.listeners.url} is not https:// and no Kafka listener is "
                          "SSL or SASL_SSL")
    if config.ssl_keyfile is not None and config.ssl_certfile is None:
        raise where.error("ssl.keyfile", "set without ssl.certfile")
    if config.ssl_client_auth != "none" and config.ssl_ca_file is None:
        raise where.error("ssl.client.auth", f"{config.ssl_client_auth} needs ssl.ca.file, the "
                          "CA bundle client certificates are verified with")
    if config.ssl_client_auth != "none" and not needs:
        raise where.error("ssl.client.auth", f"{config.ssl_client_auth} needs an https:// "
                          f"listener or a TLS Kafka listener ({where('listeners')} = "
                          f"{config.listeners.url})")


def check_authentication(config: ControllerConfig) -> None:
    """ConfigError unless requests can be authenticated somehow, or anonymity is chosen.

    Checked when a controller starts (not when a configuration is built, so tools may load a
    configuration of any kind): a controller that could authenticate nobody would answer 401
    to everything, and one that quietly served everyone anonymously would be a surprise.
    """
    if (config.auth_credentials_file is not None or config.ssl_client_auth != "none"
            or config.auth_allow_anonymous):
        return
    raise ConfigError(
        "no way to authenticate requests is configured; set one of: auth.credentials.file (a "
        "file of bearer tokens, made with `chunkraft credentials add`), ssl.client.auth="
        "required or requested (client certificates, with an https:// listener, ssl.certfile, "
        "ssl.keyfile and ssl.ca.file), or auth.allow.anonymous=true (every request without "
        "credentials is User:ANONYMOUS; only for tests and demos)",
        setting="auth.credentials.file")


def _password(raw: Mapping[str, RawSetting], values: dict[str, Any],
              sources: dict[str, str]) -> None:
    """Reads raft.password.file into raft.password; exactly one of the two must be set."""
    path: Path | None = values.pop("raft.password.file", None)
    if path is None:
        return
    file_source = raw["raft.password.file"].source
    if "raft.password" in values:
        raise ConfigError(
            f"raft.password ({sources['raft.password']}) and raft.password.file "
            f"({file_source}) are both set; set only one",
            setting="raft.password",
            source=sources["raft.password"],
        )
    where = f"raft.password.file ({file_source})"
    try:
        password = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ConfigError(
            f"{where}: cannot read {path}: {reason}",
            setting="raft.password.file",
            source=file_source,
        ) from error
    if not password:
        raise ConfigError(
            f"{where}: {path} is empty", setting="raft.password.file", source=file_source
        )
    values["raft.password"] = password
    sources["raft.password"] = f"file {path}, named by raft.password.file ({file_source})"


def _split_listeners(values: dict[str, Any], sources: dict[str, str]) -> None:
    """Splits listeners (and advertised.listeners) into the HTTP listener and the Kafka ones."""
    protocols = dict(values.get("listener.security.protocol.map", ()))
    entries = values["listeners"]
    http = rest_listener(entries)
    if http is None:
        raise ConfigError(f"listeners ({sources['listeners']}): give the HTTP API's "
                          "http://host:port (or https://) among the listeners",
                          setting="listeners", source=sources["listeners"])
    try:
        kafka = kafka_listeners(entries, protocols)
        advertised = values.get("advertised.listeners")
        values["listeners"], values["kafka.listeners"] = http, kafka
        if advertised is None:
            values["advertised.listeners"] = http
            sources["advertised.listeners"] = f"not set: listeners, {sources['listeners']}"
            values["kafka.advertised.listeners"] = advertised_kafka(kafka, ())
            return
        values["advertised.listeners"] = rest_listener(advertised) or http
        values["kafka.advertised.listeners"] = advertised_kafka(
            kafka, kafka_listeners(advertised, protocols))
    except ValueError as error:
        raise ConfigError(f"listeners ({sources['listeners']}): {error}",
                          setting="listeners", source=sources["listeners"]) from None


def _derive(values: dict[str, Any], sources: dict[str, str]) -> None:
    """Fills advertised.listeners and controller.http.urls when they were not set."""
    _split_listeners(values, sources)
    if "controller.http.urls" in values:
        return
    if len(values["controller.quorum.voters"]) > 1:
        raise ConfigError(
            "controller.http.urls: required with more than one voter (controller.quorum.voters, "
            f"{sources['controller.quorum.voters']}): give every controller's HTTP URL, as "
            "id@http://host:port,...",
            setting="controller.http.urls",
        )
    values["controller.http.urls"] = (
        ControllerUrl(values["node.id"], values["advertised.listeners"].url),
    )
    sources["controller.http.urls"] = "not set: node.id@advertised.listeners"


def load_controller_config(
    config_file: str | None, overrides: Mapping[str, str], environ: Mapping[str, str]
) -> ControllerConfig:
    """The configuration from ``overrides`` > ``environ`` (``CHUNKRAFT_*``) > file > defaults.

    ``config_file`` is a properties file (None: none); ``overrides`` maps property names to
    values given on the command line. Raises ConfigError, naming the property and its source,
    for an unknown property (in the file or the overrides), a value that does not parse, a
    required property left unset, or settings that contradict each other. Surrounding
    whitespace is no part of any value; an empty value of an optional property means "not set".
    """
    raw, values = read_layers(SETTINGS, config_file, environ, overrides)
    sources = {s.name: raw[s.name].source if s.name in raw else DEFAULT for s in SETTINGS}
    _password(raw, values, sources)
    where = config_file if config_file is not None else "a config file (none was given)"
    for setting in SETTINGS:
        required = setting.required or setting.name == "raft.password"
        if required and setting.name not in values:
            also = " (or raft.password.file)" if setting.name == "raft.password" else ""
            raise ConfigError(
                f"{setting.name}{also}: required, and not set; set it in {where}, as "
                f"{setting.env_var}, or with --override {setting.name}=...",
                setting=setting.name,
            )
    _derive(values, sources)
    voters = values["controller.quorum.voters"]
    if len(voters) % 2 == 0:
        _log.warning(
            "controller.quorum.voters (%s) has %d voters: an even count tolerates no more "
            "failures than one voter fewer; use 3 or 5",
            sources["controller.quorum.voters"],
            len(voters),
        )
    # The attribute of a property is its name with dots as underscores (see .settings).
    arguments = {name.replace(".", "_"): value for name, value in values.items()}
    return ControllerConfig(**arguments, sources=sources)
