"""Controller configuration (chunkraft.controller.config, .settings): loading, precedence and
the errors of single settings; the cross-setting checks are in test_config_checks.py."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from pathlib import Path

import pytest

from chunkraft.controller.addresses import ControllerUrl, Listener, Voter
from chunkraft.controller.config import (
    ControllerConfig,
    load_controller_config,
)
from chunkraft.controller.settings import SETTINGS, env_var
from chunkraft.errors import ConfigError
from chunkraft.records.uuids import parse_kafka_uuid
from tests.unit.controller.config_support import (
    CLUSTER,
    PASSWORD,
    Layers,
    base_values,
)

# --- loading and precedence -------------------------------------------------------------------


def test_a_complete_file_loads_with_defaults(layers: Layers) -> None:
    config = layers.load()
    assert config.node_id == 1
    assert config.cluster_id == parse_kafka_uuid(CLUSTER)
    assert config.controller_quorum_voters == (
        Voter(1, "127.0.0.1", 9093),
        Voter(2, "127.0.0.1", 9094),
        Voter(3, "127.0.0.1", 9095),
    )
    assert config.data_dir == layers.tmp_path / "data"
    assert config.raft_password == PASSWORD
    assert config.listeners == Listener("http", "127.0.0.1", 9090)
    assert config.advertised_listeners == config.listeners
    assert config.http_url_of(3) == "http://127.0.0.1:9092"
    assert config.raft_address == "127.0.0.1:9093"
    assert config.peer_addresses == ("127.0.0.1:9094", "127.0.0.1:9095")
    # PYSYNCOBJ.md's recommended timings and the brief's defaults.
    assert (
        config.raft_election_timeout_min_ms,
        config.raft_election_timeout_max_ms,
        config.raft_append_entries_period_ms,
        config.raft_connection_retry_ms,
        config.raft_leader_fallback_timeout_ms,
    ) == (200, 500, 50, 500, 1500)
    assert config.raft_log_compaction_min_entries == 50_000
    assert config.raft_log_compaction_min_time_ms == 300_000
    assert config.broker_session_timeout_ms == 9_000
    assert config.broker_heartbeat_interval_ms == 2_000
    assert config.super_users == ()
    assert config.metadata_max_retained_bytes == 64 * 1024 * 1024
    assert config.request_timeout_ms == 30_000


def test_every_setting_can_come_from_the_environment_alone(tmp_path: Path) -> None:
    env = {env_var(name): value for name, value in base_values(tmp_path).items()}
    env["CHUNKRAFT_SUPER_USERS"] = "User:admin"
    config = load_controller_config(None, {}, env)
    assert config.node_id == 1
    assert config.super_users == ("User:admin",)


def test_every_setting_can_come_from_overrides_alone(tmp_path: Path) -> None:
    config = load_controller_config(None, base_values(tmp_path), {})
    assert config.peer_addresses == ("127.0.0.1:9094", "127.0.0.1:9095")


@pytest.mark.parametrize(
    ("in_file", "in_env", "in_overrides", "expected"),
    [
        (None, None, None, 500),
        ("600", None, None, 600),
        ("600", "700", None, 700),
        (None, "700", None, 700),
        ("600", "700", "800", 800),
        ("600", None, "800", 800),
        (None, "700", "800", 800),
    ],
)
def test_flags_win_over_environment_over_file_over_default(
    layers: Layers, in_file: str | None, in_env: str | None, in_overrides: str | None, expected: int
) -> None:
    name = "raft.election.timeout.max.ms"
    if in_file is not None:
        layers.file[name] = in_file
    if in_env is not None:
        layers.env["CHUNKRAFT_RAFT_ELECTION_TIMEOUT_MAX_MS"] = in_env
    if in_overrides is not None:
        layers.overrides[name] = in_overrides
    assert layers.load().raft_election_timeout_max_ms == expected


def test_a_higher_source_replaces_a_bad_value_below_it(layers: Layers) -> None:
    layers.file["node.id"] = "not a number"
    layers.overrides["node.id"] = "2"
    layers.file["listeners"] = "http://127.0.0.1:9091"
    assert layers.load().node_id == 2


def test_env_var_names() -> None:
    assert env_var("node.id") == "CHUNKRAFT_NODE_ID"
    assert env_var("cluster.id") == "CHUNKRAFT_CLUSTER_ID"
    assert env_var("controller.quorum.voters") == "CHUNKRAFT_CONTROLLER_QUORUM_VOTERS"
    assert env_var("raft.password") == "CHUNKRAFT_RAFT_PASSWORD"
    assert {s.env_var for s in SETTINGS} == {env_var(s.name) for s in SETTINGS}


def test_attributes_are_the_property_names_with_underscores() -> None:
    attributes = {f.name for f in dataclasses.fields(ControllerConfig)}
    for setting in SETTINGS:
        if setting.name != "raft.password.file":  # read into raft_password
            assert setting.attribute in attributes
    derived = {"kafka_listeners", "kafka_advertised_listeners"}  # split out of listeners
    assert attributes - derived <= {s.attribute for s in SETTINGS}


def test_whitespace_around_values_is_dropped(layers: Layers) -> None:
    layers.file["node.id"] = "  1  "
    layers.env["CHUNKRAFT_RAFT_PASSWORD"] = f"  {PASSWORD}\n"
    config = layers.load()
    assert config.node_id == 1
    assert config.raft_password == PASSWORD


def test_an_empty_optional_value_means_not_set(layers: Layers) -> None:
    layers.file["advertised.listeners"] = "http://127.0.0.1:9999"
    layers.env["CHUNKRAFT_ADVERTISED_LISTENERS"] = ""
    layers.file["super.users"] = ""
    config = layers.load()
    assert config.advertised_listeners == config.listeners
    assert config.super_users == ()


def test_unknown_environment_variables_are_ignored(layers: Layers) -> None:
    layers.env["CHUNKRAFT_SOMETHING_ELSE"] = "x"
    layers.env["CHUNKRAFT_NODEID"] = "7"
    assert layers.load().node_id == 1


def test_super_users(layers: Layers) -> None:
    layers.file["super.users"] = "User:admin; User:CN=host, OU=ops;User:admin;"
    assert layers.load().super_users == ("User:admin", "User:CN=host, OU=ops")


def test_hex_cluster_id_is_accepted(layers: Layers) -> None:
    value = uuid.UUID("6d0c5bd6-2c3e-4f5a-9b7e-1a2b3c4d5e6f")
    layers.overrides["cluster.id"] = str(value)
    assert layers.load().cluster_id == value


def test_ipv6_voters_use_pysyncobj_address_form(tmp_path: Path) -> None:
    values = base_values(tmp_path)
    values["controller.quorum.voters"] = "1@[::1]:9093"
    values["listeners"] = "http://[::1]:9090"
    del values["controller.http.urls"]
    config = load_controller_config(None, values, {})
    assert config.voter == Voter(1, "::1", 9093)
    assert config.raft_address == "::1:9093"  # pysyncobj splits at the last colon
    assert config.http_url_of(1) == "http://[::1]:9090"


# --- one voter ---------------------------------------------------------------------------------


def test_a_single_voter_derives_its_http_url(tmp_path: Path) -> None:
    values = base_values(tmp_path)
    values["controller.quorum.voters"] = "1@127.0.0.1:9093"
    del values["controller.http.urls"]
    values["advertised.listeners"] = "http://localhost:9090"
    config = load_controller_config(None, values, {})
    assert config.controller_http_urls == (ControllerUrl(1, "http://localhost:9090"),)
    assert config.peer_addresses == ()


def test_an_even_number_of_voters_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    values = base_values(tmp_path)
    values["controller.quorum.voters"] = "1@127.0.0.1:9093,2@127.0.0.1:9094"
    values["controller.http.urls"] = "1@http://127.0.0.1:9090,2@http://127.0.0.1:9091"
    with caplog.at_level(logging.WARNING, logger="chunkraft.controller.config"):
        load_controller_config(None, values, {})
    assert "2 voters" in caplog.text


# --- every bad value names its setting and its source ------------------------------------------

BAD_VALUES: list[tuple[str, str, str]] = [
    ("node.id", "abc", "not a non-negative integer"),
    ("node.id", "-1", "not a non-negative integer"),
    ("node.id", "2147483648", "above 2147483647"),
    ("cluster.id", "not-a-uuid", "not a uuid"),
    ("cluster.id", "AAAAAAAAAAAAAAAAAAAAAA", "all-zero uuid is reserved"),
    ("controller.quorum.voters", "1@127.0.0.1", "not host:port"),
    ("controller.quorum.voters", "127.0.0.1:9093", "not id@host:port"),
    ("controller.quorum.voters", "x@127.0.0.1:9093", "not a non-negative integer"),
    ("controller.quorum.voters", "1@127.0.0.1:0", "port must be a number from 1 to 65535"),
    ("controller.quorum.voters", "1@127.0.0.1:65536", "port must be a number from 1 to 65535"),
    ("controller.quorum.voters", "1@h:port", "port must be a number from 1 to 65535"),
    ("controller.quorum.voters", "1@::1:9093", "IPv6 host in brackets"),
    ("controller.quorum.voters", "1@[::1:9093", "not [ipv6-address]:port"),
    ("controller.quorum.voters", "1@a:1,1@b:2", "node id 1 is given twice"),
    ("controller.quorum.voters", "1@a:1,2@A:1", "have the same address"),
    ("controller.quorum.voters", "1@a:1,,2@b:2", "entry 2 of 3 is empty"),
    ("controller.quorum.voters", "1@0.0.0.0:9093", "not an address a peer can connect to"),
    ("controller.quorum.voters", "", "entry 1 of 1 is empty"),
    ("data.dir", "", "must not be empty"),
    ("raft.password", "", "must not be empty"),
    ("listeners", "127.0.0.1:9090", "not http://host:port"),
    ("listeners", "http://a:1,http://b:2", "only one http:// or https:// listener"),
    ("listeners", "http://a:1,PLAINTEXT://b", "not host:port"),
    ("listeners", "http://a:1,PLAINTEXT://b:1", "port 1 is given twice"),
    ("listeners", "http://a:1,9x://b:2", "is not a listener name"),
    ("listeners", "http://a:1/api", "no path"),
    ("listeners", "http://a", "not host:port"),
    ("listeners", "", "has an empty entry"),
    ("advertised.listeners", "http://a", "not host:port"),
    ("listener.security.protocol.map", "INTERNAL", "is not NAME:PROTOCOL"),
    ("listener.security.protocol.map", "INTERNAL:KERBEROS", "is not one of PLAINTEXT"),
    ("sasl.enabled.mechanisms", "GSSAPI", "is not one of PLAIN, OAUTHBEARER"),
    ("controller.kafka.endpoints", "127.0.0.1:9092", "is not id@host:port"),
    ("controller.kafka.endpoints", "1@a:1,1@b:2", "node id 1 is given twice"),
    ("socket.request.max.bytes", "100", "must be at least 1024"),
    ("max.connections.per.ip", "0", "must be at least 1"),
    ("connections.max.idle.ms", "0", "must be at least 1"),
    ("sasl.handshake.timeout.ms", "0", "must be at least 1"),
    ("controller.http.urls", "1@127.0.0.1:9090", "not http://host:port"),
    ("controller.http.urls", "http://127.0.0.1:9090", "not id@http://host:port"),
    ("controller.http.urls", "1@http://a:1,1@http://b:2", "node id 1 is given twice"),
    ("controller.http.urls", "1@http://0.0.0.0:9090", "not an address one can connect to"),
    ("raft.election.timeout.min.ms", "ten", "not an integer"),
    ("raft.append.entries.period.ms", "0", "must be at least 1, got 0"),
    ("raft.connection.retry.ms", "-5", "must be at least 1, got -5"),
    ("raft.log.compaction.min.entries", "1", "must be at least 2, got 1"),
    ("raft.log.compaction.min.time.ms", "1.5", "not an integer"),
    ("raft.log.compaction.max.bytes", "512", "at least 1024"),
    ("raft.max.message.bytes", "16777216", "must be at least 188743680, got 16777216"),
    ("raft.max.connections.per.address", "0", "must be at least 1"),
    ("raft.handshake.timeout.ms", "50", "must be at least 100"),
    ("raft.message.timeout.ms", "1s", "not an integer"),
    ("broker.session.timeout.ms", "9s", "not an integer"),
    ("log.retention.check.interval.ms", "0", "must be at least 1, got 0"),
    ("metadata.max.retained.bytes", "0", "must be at least 1"),
    ("request.timeout.ms", "0", "must be at least 1"),
    ("request.max.body.bytes", "100", "must be at least 1024, got 100"),
    ("request.max.header.bytes", "1k", "not an integer"),
    ("request.max.batch.items", "0", "must be at least 1"),
    ("request.max.assignments", "-1", "must be at least 1"),
    ("request.max.assignment.replicas", "0", "must be at least 1"),
    ("request.max.json.values", "999", "must be at least 1000, got 999"),
    ("http.head.timeout.ms", "50", "must be at least 100, got 50"),
    ("http.body.timeout.ms", "10s", "not an integer"),
    ("http.max.connections.per.address", "0", "must be at least 1"),
    ("metadata.snapshot.export.retain", "0", "must be at least 1"),
    ("super.users", "admin", "not a principal of the form Type:name"),
    ("super.users", "User:", "not a principal of the form Type:name"),
    ("allow.everyone.if.no.acl.found", "yes", "not true or false"),
    ("auth.allow.anonymous", "1", "not true or false"),
    ("auth.broker.principal", "User:broker", "must contain {id}"),
    ("auth.broker.principal", "broker-{id}", "not a principal of the form Type:name"),
    ("auth.broker.principal", "User:{id}-{name}", "only {id} may appear in braces"),
    ("ssl.client.auth", "optional", "not one of none, requested, required"),
    ("raft.process", "thread", "not one of separate, embedded"),
]


@pytest.mark.parametrize(("name", "value", "problem"), BAD_VALUES)
def test_a_bad_value_in_the_file_names_setting_file_and_line(
    layers: Layers, name: str, value: str, problem: str
) -> None:
    layers.file[name] = value
    error = layers.error()
    source = f"file {layers.path}, line {layers.line_of(name)}"
    assert str(error).startswith(f"{name} ({source}): ")
    assert problem in str(error)
    assert (error.setting, error.source) == (name, source)


@pytest.mark.parametrize(("name", "value", "problem"), BAD_VALUES)
def test_a_bad_value_in_the_environment_names_the_variable(
    layers: Layers, name: str, value: str, problem: str
) -> None:
    layers.env[env_var(name)] = value
    error = layers.error()
    assert str(error).startswith(f"{name} (environment variable {env_var(name)}): ")
    assert problem in str(error)
    assert error.setting == name


@pytest.mark.parametrize(("name", "value", "problem"), BAD_VALUES)
def test_a_bad_value_on_the_command_line_says_so(
    layers: Layers, name: str, value: str, problem: str
) -> None:
    layers.overrides[name] = value
    error = layers.error()
    assert str(error).startswith(f"{name} (command line): ")
    assert problem in str(error)
    assert (error.setting, error.source) == (name, "command line")


def test_every_setting_has_a_bad_value_case() -> None:
    tested = {name for name, _, _ in BAD_VALUES}
    untested = {s.name for s in SETTINGS} - tested - {"raft.password.file"}  # tested below
    # Settings whose every value passes the parser, and whose range is checked with others:
    assert untested == {
        "raft.election.timeout.max.ms",
        "raft.leader.fallback.timeout.ms",
        "broker.heartbeat.interval.ms",
        # any path parses; the TLS files are checked together (test_tls_settings_...)
        "auth.credentials.file",
        "ssl.certfile",
        "ssl.keyfile",
        "ssl.ca.file",
        "metadata.snapshot.export.dir",  # any path parses; empty = off
    }


@pytest.mark.parametrize("name", [s.name for s in SETTINGS if s.required])
def test_a_missing_required_setting_says_how_to_set_it(layers: Layers, name: str) -> None:
    del layers.file[name]
    error = layers.error()
    assert str(error).startswith(f"{name}: required, and not set")
    assert env_var(name) in str(error)
    assert f"--override {name}=" in str(error)
    assert str(layers.path) in str(error)
    assert error.setting == name


def test_missing_settings_without_a_file_say_none_was_given() -> None:
    with pytest.raises(ConfigError, match=r"node.id: .*a config file \(none was given\)"):
        load_controller_config(None, {}, {})


def test_unknown_setting_in_the_file_is_refused_with_a_suggestion(layers: Layers) -> None:
    layers.file["raft.election.timeout.min"] = "300"
    error = layers.error()
    line = layers.line_of("raft.election.timeout.min")
    assert str(error) == (
        f"unknown setting 'raft.election.timeout.min' (file {layers.path}, line {line}); "
        "did you mean raft.election.timeout.min.ms?"
    )


def test_unknown_override_is_refused(layers: Layers) -> None:
    layers.overrides["no.such.thing"] = "1"
    assert str(layers.error()) == "unknown setting 'no.such.thing' (command line)"


def test_a_key_twice_in_the_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("# comment\nnode.id=1\n\nnode.id = 2\n")
    with pytest.raises(ConfigError) as caught:
        load_controller_config(str(path), {}, {})
    assert str(caught.value) == (
        f"config file {path}: line 4: node.id is set twice (first on line 2)"
    )


def test_a_line_without_separator_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("node.id 1\n")
    with pytest.raises(ConfigError, match=r"c.properties: line 1: expected key=value"):
        load_controller_config(str(path), {}, {})


def test_a_missing_config_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "absent.properties"
    with pytest.raises(ConfigError) as caught:
        load_controller_config(str(path), {}, {})
    assert str(caught.value) == f"cannot read config file {path}: No such file or directory"
    assert caught.value.source == str(path)


