"""Controller configuration (chunkraft.controller.config, .settings): precedence, checks, docs."""

from __future__ import annotations

import dataclasses
import logging
import re
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from chunkraft.controller.addresses import ControllerUrl, Listener, Voter
from chunkraft.controller.config import (
    ControllerConfig,
    check_authentication,
    load_controller_config,
)
from chunkraft.controller.settings import SETTINGS, env_var, setting_named
from chunkraft.errors import ConfigError
from chunkraft.records.uuids import parse_kafka_uuid

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
PASSWORD = "correct-horse-battery-staple"
VOTERS = "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095"
HTTP_URLS = "1@http://127.0.0.1:9090,2@http://127.0.0.1:9091,3@http://127.0.0.1:9092"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "operations.md"


def base_values(data_dir: Path) -> dict[str, str]:
    return {
        "node.id": "1",
        "cluster.id": CLUSTER,
        "controller.quorum.voters": VOTERS,
        "controller.http.urls": HTTP_URLS,
        "data.dir": str(data_dir),
        "raft.password": PASSWORD,
        "listeners": "http://127.0.0.1:9090",
    }


def write_properties(path: Path, values: Mapping[str, str]) -> str:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    return str(path)


class Layers:
    """Builds the three sources for one test and loads a config from them."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.file = base_values(tmp_path / "data")
        self.env: dict[str, str] = {}
        self.overrides: dict[str, str] = {}

    @property
    def path(self) -> Path:
        return self.tmp_path / "controller.properties"

    def load(self) -> ControllerConfig:
        return load_controller_config(
            write_properties(self.path, self.file), self.overrides, self.env
        )

    def error(self) -> ConfigError:
        with pytest.raises(ConfigError) as caught:
            self.load()
        return caught.value

    def line_of(self, key: str) -> int:
        return list(self.file).index(key) + 1


@pytest.fixture
def layers(tmp_path: Path) -> Layers:
    return Layers(tmp_path)


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
    assert attributes <= {s.attribute for s in SETTINGS}


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
    ("listeners", "http://a:1,http://b:2", "only one listener"),
    ("listeners", "http://a:1/api", "no path"),
    ("listeners", "http://a", "not host:port"),
    ("listeners", "", "not http://host:port"),
    ("advertised.listeners", "ftp://a:1", "only http:// and https:// listeners"),
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


# --- settings checked against each other -------------------------------------------------------


def test_this_node_must_be_a_voter(layers: Layers) -> None:
    layers.env["CHUNKRAFT_NODE_ID"] = "4"
    error = layers.error()
    assert str(error) == (
        "node.id (environment variable CHUNKRAFT_NODE_ID): 4 is not among "
        f"controller.quorum.voters (file {layers.path}, line 3), whose ids are 1, 2, 3; "
        "a controller must be one of the voters"
    )
    assert error.setting == "node.id"


@pytest.mark.parametrize(
    ("changes", "name", "message"),
    [
        (
            {"raft.election.timeout.min.ms": "150"},
            "raft.election.timeout.min.ms",
            "150 must be more than 3 x raft.append.entries.period.ms (default) = 150",
        ),
        (
            {"raft.election.timeout.max.ms": "200"},
            "raft.election.timeout.max.ms",
            "200 must be more than raft.election.timeout.min.ms (default) = 200",
        ),
        (
            {"raft.leader.fallback.timeout.ms": "50"},
            "raft.leader.fallback.timeout.ms",
            "50 must be more than raft.append.entries.period.ms (default) = 50",
        ),
        (
            {"broker.heartbeat.interval.ms": "9000"},
            "broker.heartbeat.interval.ms",
            "9000 must be less than broker.session.timeout.ms (default) = 9000",
        ),
    ],
)
def test_timings_that_pysyncobj_or_brokers_cannot_use(
    layers: Layers, changes: dict[str, str], name: str, message: str
) -> None:
    layers.overrides.update(changes)
    error = layers.error()
    assert str(error) == f"{name} (command line): {message}"


def test_timing_errors_name_the_source_of_both_settings(layers: Layers) -> None:
    layers.file["raft.append.entries.period.ms"] = "100"
    error = layers.error()
    line = layers.line_of("raft.append.entries.period.ms")
    assert str(error) == (
        "raft.election.timeout.min.ms (default): 200 must be more than 3 x "
        f"raft.append.entries.period.ms (file {layers.path}, line {line}) = 300"
    )


def test_http_urls_are_required_with_several_voters(layers: Layers) -> None:
    del layers.file["controller.http.urls"]
    error = layers.error()
    assert str(error).startswith(
        "controller.http.urls: required with more than one voter (controller.quorum.voters, "
        f"file {layers.path}, line 3)"
    )


def test_http_urls_must_cover_exactly_the_voters(layers: Layers) -> None:
    layers.env["CHUNKRAFT_CONTROLLER_HTTP_URLS"] = (
        "1@http://127.0.0.1:9090,2@http://127.0.0.1:9091,4@http://127.0.0.1:9094"
    )
    error = layers.error()
    assert str(error) == (
        "controller.http.urls (environment variable CHUNKRAFT_CONTROLLER_HTTP_URLS): no URL "
        "for voter(s) 3; 4 not among the voters: it must list exactly the ids of "
        f"controller.quorum.voters (file {layers.path}, line 3)"
    )


def test_own_http_url_must_be_the_advertised_listener(layers: Layers) -> None:
    layers.overrides["advertised.listeners"] = "http://localhost:9090"
    error = layers.error()
    assert str(error) == (
        f"controller.http.urls (file {layers.path}, line 4): this node's entry "
        "1@http://127.0.0.1:9090 differs from advertised.listeners (command line) = "
        "http://localhost:9090"
    )


def test_a_wildcard_listener_needs_an_advertised_listener(layers: Layers) -> None:
    layers.file["listeners"] = "http://0.0.0.0:9090"
    error = layers.error()
    assert error.setting == "advertised.listeners"
    assert str(error).startswith(
        f"advertised.listeners (not set: listeners, file {layers.path}, line 7): "
        "http://0.0.0.0:9090 is not an address others can connect to"
    )
    layers.file["advertised.listeners"] = "http://127.0.0.1:9090"
    config = layers.load()
    assert config.listeners.host == "0.0.0.0"


def test_the_http_listener_cannot_take_the_raft_port(layers: Layers) -> None:
    layers.file["listeners"] = "http://0.0.0.0:9093"
    layers.file["advertised.listeners"] = "http://127.0.0.1:9090"
    error = layers.error()
    assert error.setting == "listeners"
    assert "uses the Raft port of this node's voter entry 1@127.0.0.1:9093" in str(error)


def test_direct_construction_is_checked_too(tmp_path: Path) -> None:
    config = load_controller_config(None, base_values(tmp_path), {})
    with pytest.raises(ConfigError, match=r"^node.id: 9 is not among controller.quorum.voters,"):
        dataclasses.replace(config, node_id=9)
    with pytest.raises(ConfigError, match=r"^raft.password: must not be empty"):
        dataclasses.replace(config, raft_password="")
    assert dataclasses.replace(config, request_timeout_ms=5).request_timeout_ms == 5


def test_a_config_is_immutable_and_hashable(tmp_path: Path) -> None:
    config = load_controller_config(None, base_values(tmp_path), {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.node_id = 2  # type: ignore[misc]
    assert hash(config) == hash(load_controller_config(None, base_values(tmp_path), {}))


# --- the password -----------------------------------------------------------------------------


def test_the_password_is_required(layers: Layers) -> None:
    del layers.file["raft.password"]
    error = layers.error()
    assert str(error).startswith("raft.password (or raft.password.file): required, and not set")


def test_the_password_can_come_from_a_file(layers: Layers) -> None:
    secret = layers.tmp_path / "raft-password"
    secret.write_text(PASSWORD + "-from-file\n")
    del layers.file["raft.password"]
    layers.env["CHUNKRAFT_RAFT_PASSWORD_FILE"] = str(secret)
    assert layers.load().raft_password == PASSWORD + "-from-file"


def test_password_and_password_file_together_are_refused(layers: Layers) -> None:
    secret = layers.tmp_path / "raft-password"
    secret.write_text("other")
    layers.overrides["raft.password.file"] = str(secret)
    error = layers.error()
    assert str(error) == (
        f"raft.password (file {layers.path}, line 6) and raft.password.file (command line) "
        "are both set; set only one"
    )


def test_an_empty_or_missing_password_file_is_refused(layers: Layers) -> None:
    del layers.file["raft.password"]
    secret = layers.tmp_path / "raft-password"
    layers.overrides["raft.password.file"] = str(secret)
    assert str(layers.error()) == (
        f"raft.password.file (command line): cannot read {secret}: No such file or directory"
    )
    secret.write_text(" \n")
    assert str(layers.error()) == f"raft.password.file (command line): {secret} is empty"


def test_the_password_never_shows(layers: Layers) -> None:
    config = layers.load()
    for text in (repr(config), str(config), f"{config}"):
        assert PASSWORD not in text
        assert "raft_password=<redacted>" in text
        assert "node_id=1" in text


def test_errors_never_show_the_password(layers: Layers) -> None:
    layers.env["CHUNKRAFT_RAFT_PASSWORD"] = "   "
    error = layers.error()
    assert str(error) == "raft.password (environment variable CHUNKRAFT_RAFT_PASSWORD): " + (
        "must not be empty"
    )


# --- the docs list every setting ---------------------------------------------------------------


def _docs_table() -> dict[str, tuple[str, str, str]]:
    rows: dict[str, tuple[str, str, str]] = {}
    for line in DOCS.read_text().splitlines():
        match = re.fullmatch(r"\| `([a-z.]+)` \| `([A-Z_]+)` \| (.*?) \| (.*) \|", line)
        if match:
            rows[match.group(1)] = (match.group(2), match.group(3), match.group(4))
    return rows


def test_docs_list_every_setting_with_its_variable_and_default() -> None:
    rows = _docs_table()
    assert list(rows) == [s.name for s in SETTINGS]
    defaults = {f.name: f.default for f in dataclasses.fields(ControllerConfig)}
    for setting in SETTINGS:
        variable, default, _ = rows[setting.name]
        assert variable == setting.env_var
        value = defaults.get(setting.attribute, dataclasses.MISSING)
        if setting.required:
            assert default == "required"
        elif isinstance(value, bool):
            assert default.startswith(f"`{str(value).lower()}`"), setting.name
        elif isinstance(value, (str, int)):
            assert default.startswith(f"`{value}`"), setting.name


def test_the_docs_example_configures_three_nodes(tmp_path: Path) -> None:
    text = DOCS.read_text()
    example = re.search(r"```properties\n(# Identity.*?)```", text, re.S)
    assert example is not None
    path = tmp_path / "controller.properties"
    path.write_text(example.group(1))
    secret = tmp_path / "raft-password"
    secret.write_text(PASSWORD)
    addresses = set()
    for node in (1, 2, 3):
        overrides = {
            "node.id": str(node),
            "listeners": f"http://127.0.0.1:{9089 + node}",
            "data.dir": str(tmp_path / f"controller-{node}"),
            "raft.password.file": str(secret),
        }
        config = load_controller_config(str(path), overrides, {})
        assert config.super_users == ("User:admin",)
        addresses.add(config.raft_address)
    assert addresses == {"127.0.0.1:9093", "127.0.0.1:9094", "127.0.0.1:9095"}


def test_setting_named() -> None:
    setting = setting_named("node.id")
    assert setting is not None and setting.required
    assert setting_named("node_id") is None


# --- authentication and TLS ----------------------------------------------------------------------


def test_authentication_and_tls_defaults(layers: Layers) -> None:
    config = layers.load()
    assert config.auth_credentials_file is None
    assert config.auth_allow_anonymous is False
    assert config.auth_broker_principal == "User:broker-{id}"
    assert config.allow_everyone_if_no_acl_found is False
    assert (config.ssl_certfile, config.ssl_keyfile, config.ssl_ca_file) == (None, None, None)
    assert config.ssl_client_auth == "none"


def _https(layers: Layers) -> None:
    for key in ("listeners", "advertised.listeners", "controller.http.urls"):
        if key in layers.file:
            layers.file[key] = layers.file[key].replace("http://", "https://")


@pytest.mark.parametrize(("changes", "https", "setting", "problem"), [
    ({}, True, "listeners", "set ssl.certfile and ssl.keyfile"),
    ({"ssl.certfile": "c.pem", "ssl.keyfile": "k.pem"}, False, "ssl.certfile",
     "is not https://"),
    ({"ssl.keyfile": "k.pem"}, False, "ssl.keyfile", "set without ssl.certfile"),
    ({"ssl.certfile": "c.pem", "ssl.client.auth": "required"}, True, "ssl.client.auth",
     "needs ssl.ca.file"),
])
def test_tls_settings_are_checked_together(layers: Layers, changes: dict[str, str], https: bool,
                                           setting: str, problem: str) -> None:
    layers.file.update(changes)
    if https:
        _https(layers)
    error = layers.error()
    assert error.setting == setting
    assert problem in str(error)


def test_an_https_listener_with_client_certificates(layers: Layers) -> None:
    layers.file.update({"ssl.certfile": "c.pem", "ssl.keyfile": "k.pem", "ssl.ca.file": "ca.pem",
                        "ssl.client.auth": "REQUIRED"})
    _https(layers)
    config = layers.load()
    assert config.listeners.scheme == "https"
    assert config.ssl_client_auth == "required"
    assert config.ssl_ca_file == Path("ca.pem")


def test_a_controller_needs_a_way_to_authenticate(layers: Layers) -> None:
    with pytest.raises(ConfigError) as caught:
        check_authentication(layers.load())
    message = str(caught.value)
    for choice in ("auth.credentials.file", "ssl.client.auth", "auth.allow.anonymous=true"):
        assert choice in message
    for ways in ({"auth.credentials.file": "creds.json"}, {"auth.allow.anonymous": "true"}):
        layers.file = {key: value for key, value in layers.file.items() if not key.startswith(
            "auth.")} | ways
        check_authentication(layers.load())
