"""A broker's configuration: :class:`BrokerConfig` and where it is loaded from.

:func:`load_broker_config` reads, lowest precedence first: the defaults (the fields below), a
Kafka-style properties file, ``CHUNKRAFT_BROKER_*`` environment variables and ``--override``
flags, the same layering as the controller's (:mod:`chunkraft.controller.config`). Every error
names the property and where its value came from. The properties and their meaning are listed in
:mod:`.settings` and ``docs/broker.md``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import InitVar, dataclass
from pathlib import Path
from typing import Any

from chunkraft.broker_agent.settings import SETTINGS
from chunkraft.controller.addresses import Listener, is_wildcard
from chunkraft.controller.config_layers import COMMAND_LINE, read_layers
from chunkraft.controller.kafka_listeners import (
    SASL_MECHANISMS,
    KafkaListener,
    advertised_kafka,
    kafka_listeners,
    rest_listener,
)
from chunkraft.errors import ConfigError

__all__ = ["COMMAND_LINE", "BrokerConfig", "load_broker_config"]

_MIB = 1024 * 1024
_NEVER = 2**63 - 1
_WEEK_MS = 7 * 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Every setting of one broker, checked against each other; immutable, thread-safe.

    Attribute names are the property names with dots as underscores. Building one checks ranges
    and consistency and raises :class:`~chunkraft.errors.ConfigError`; ``sources`` (property ->
    where its value came from) only improves those messages.
    """

    node_id: int
    controller_quorum_bootstrap_servers: tuple[str, ...]
    listeners: Listener
    log_dirs: tuple[Path, ...]
    cluster_id: uuid.UUID | None = None
    broker_rack: str | None = None
    advertised_listeners: Listener | None = None
    broker_token_file: Path | None = None
    auth_credentials_file: Path | None = None
    auth_allow_anonymous: bool = False
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False
    auth_broker_principal: str = "User:broker-{id}"
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_ca_file: Path | None = None
    ssl_client_auth: str = "none"
    broker_heartbeat_interval_ms: int = 1000
    controlled_shutdown_timeout_ms: int = 30_000
    request_timeout_ms: int = 30_000
    metadata_fetch_wait_max_ms: int = 5_000
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = _MIB
    min_insync_replicas: int = 1
    chunk_copy_throttle_bytes_per_second: int = -1
    log_segment_bytes: int = 1 << 30
    log_roll_ms: int = _WEEK_MS
    log_retention_ms: int = _WEEK_MS
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300_000
    log_flush_interval_messages: int = _NEVER
    log_flush_interval_ms: int = _NEVER
    log_index_interval_bytes: int = 4096
    transaction_state_log_num_partitions: int = 3
    offsets_topic_num_partitions: int = 3
    transaction_max_timeout_ms: int = 900_000
    # Kafka-protocol listeners (chunkraft.kafka.server): split out of listeners at load.
    kafka_listeners: tuple[KafkaListener, ...] = ()
    kafka_advertised_listeners: tuple[KafkaListener, ...] = ()
    listener_security_protocol_map: tuple[tuple[str, str], ...] = ()
    sasl_enabled_mechanisms: tuple[str, ...] = SASL_MECHANISMS
    # Kafka's default: a produce request may carry 100 MiB of record batches.
    socket_request_max_bytes: int = 100 * _MIB
    max_connections_per_ip: int = 1_000
    connections_max_idle_ms: int = 600_000
    sasl_handshake_timeout_ms: int = 10_000
    sources: InitVar[Mapping[str, str] | None] = None

    def __post_init__(self, sources: Mapping[str, str] | None) -> None:
        _check(self, sources or {})

    @property
    def log_dir(self) -> Path:
        """The one log directory."""
        return self.log_dirs[0]

    @property
    def advertised(self) -> Listener:
        """The listener others connect to (advertised.listeners, else listeners)."""
        return self.advertised_listeners or self.listeners

    @property
    def listener_name(self) -> str:
        """The registered listener's name: ``HTTP`` or ``HTTPS`` (what ``broker_url`` finds)."""
        return self.advertised.scheme.upper()

    @property
    def principal(self) -> str:
        """The principal this broker authenticates as (``User:broker-<id>``)."""
        return self.auth_broker_principal.replace("{id}", str(self.node_id))

    def broker_token(self) -> str | None:
        """The bearer token from broker.token.file (stripped), None without one.

        ConfigError if the file cannot be read or is empty."""
        if self.broker_token_file is None:
            return None
        try:
            token = self.broker_token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"broker.token.file: cannot read {self.broker_token_file}: "
                              f"{error}", setting="broker.token.file") from None
        if not token:
            raise ConfigError(f"broker.token.file: {self.broker_token_file} is empty",
                              setting="broker.token.file")
        return token


def _where(sources: Mapping[str, str], name: str) -> str:
    source = sources.get(name)
    return f"{name} ({source})" if source else name


def _check(config: BrokerConfig, sources: Mapping[str, str]) -> None:
    def fail(name: str, message: str) -> ConfigError:
        return ConfigError(f"{_where(sources, name)}: {message}", setting=name,
                           source=sources.get(name))

    for setting in SETTINGS:
        if setting.minimum is None:
            continue
        value: int = getattr(config, setting.attribute)
        if value < setting.minimum:
            raise fail(setting.name, f"must be at least {setting.minimum}, got {value}")
    if is_wildcard(config.advertised.host):
        raise fail("advertised.listeners", f"{config.advertised.url} is not an address others "
                   "can connect to; set advertised.listeners to a reachable http://host:port")
    # The certificate serves an https:// listener and the TLS Kafka listeners (SSL, SASL_SSL).
    https = config.listeners.scheme == "https"
    needs = ([config.listeners.url] if https else []) + [
        str(entry) for entry in config.kafka_listeners if entry.uses_tls]
    if needs and (config.ssl_certfile is None or config.ssl_keyfile is None):
        raise fail("listeners", f"{', '.join(needs)} serve{'s' if len(needs) == 1 else ''} "
                   "TLS: set ssl.certfile and ssl.keyfile")
    if config.ssl_certfile is not None and not needs:
        raise fail("ssl.certfile", f"set, but listeners = {config.listeners.url} is not https "
                   "and no Kafka listener is SSL or SASL_SSL")
    if config.ssl_client_auth != "none" and (config.ssl_ca_file is None or not needs):
        raise fail("ssl.client.auth", f"{config.ssl_client_auth} needs ssl.ca.file and an "
                   "https:// listener or a TLS Kafka listener")


def load_broker_config(config_file: str | None, overrides: Mapping[str, str],
                       environ: Mapping[str, str]) -> BrokerConfig:
    """The configuration from ``overrides`` > ``environ`` (``CHUNKRAFT_BROKER_*``) > file >
    defaults.

    Raises ConfigError, naming the property and its source, for an unknown property (file or
    overrides), a value that does not parse, a required property left unset, or settings that
    contradict each other. An empty value of an optional property means "not set".
    """
    raw, by_name = read_layers(SETTINGS, config_file, environ, overrides)
    # A setting's attribute is its name with dots as underscores (BrokerSetting.attribute).
    values: dict[str, Any] = {name.replace(".", "_"): value for name, value in by_name.items()}
    where = config_file if config_file is not None else "a config file (none was given)"
    for setting in SETTINGS:
        if setting.required and setting.attribute not in values:
            raise ConfigError(f"{setting.name}: required, and not set; set it in {where}, as "
                              f"{setting.env_var}, or with --override {setting.name}=...",
                              setting=setting.name)
    sources = {name: item.source for name, item in raw.items()}
    _split_listeners(values, sources)
    return BrokerConfig(**values, sources=sources)


def _split_listeners(values: dict[str, Any], sources: Mapping[str, str]) -> None:
    """listeners (and advertised.listeners) -> the HTTP listener and the Kafka ones."""
    protocols = dict(values.get("listener_security_protocol_map", ()))
    where = _where(sources, "listeners")
    http = rest_listener(values["listeners"])
    if http is None:
        raise ConfigError(f"{where}: give the data plane's http://host:port (or https://) "
                          "among the listeners", setting="listeners",
                          source=sources.get("listeners"))
    try:
        kafka = kafka_listeners(values["listeners"], protocols)
        advertised = values.get("advertised_listeners")
        values["listeners"], values["kafka_listeners"] = http, kafka
        values["advertised_listeners"] = rest_listener(advertised) if advertised else None
        values["kafka_advertised_listeners"] = advertised_kafka(
            kafka, kafka_listeners(advertised, protocols) if advertised else ())
    except ValueError as error:
        raise ConfigError(f"{where}: {error}", setting="listeners",
                          source=sources.get("listeners")) from None
