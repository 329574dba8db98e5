"""Controller configuration: settings checked against each other, the password, the docs' table
of settings, authentication and TLS."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from chunkraft.controller.config import (
    ControllerConfig,
    check_authentication,
    load_controller_config,
)
from chunkraft.controller.settings import SETTINGS, setting_named
from chunkraft.errors import ConfigError
from tests.unit.controller.config_support import (
    DOCS,
    PASSWORD,
    Layers,
    base_values,
)

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
