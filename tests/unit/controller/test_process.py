"""What run_controller builds from a configuration (chunkraft.controller.process): the
authenticator, the TLS settings; no process is started here."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.controller.config import load_controller_config
from chunkraft.controller.process import authenticator_of, tls_settings
from chunkraft.errors import ConfigError
from chunkraft.security.credentials import add_token
from tests.unit.controller.config_support import base_values, write_properties


def test_the_authenticator_reads_the_credentials_file(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    token = add_token(path, "User:alice")
    config = load_controller_config(write_properties(tmp_path / "c.properties", base_values(
        tmp_path / "data") | {"auth.credentials.file": str(path)}), {}, {})
    authenticator = authenticator_of(config)
    assert authenticator.credentials is not None
    assert authenticator.credentials.principal_for(token) == "User:alice"
    assert authenticator.forwarding_key and not authenticator.certificates
    assert not authenticator.allow_anonymous
    assert tls_settings(config) is None


def test_a_malformed_credentials_file_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    path.write_text("[]")
    config = load_controller_config(write_properties(tmp_path / "c.properties", base_values(
        tmp_path / "data") | {"auth.credentials.file": str(path)}), {}, {})
    with pytest.raises(ConfigError, match=r"auth\.credentials\.file"):
        authenticator_of(config)


def test_tls_settings_and_certificate_authentication(tmp_path: Path) -> None:
    values = base_values(tmp_path / "data") | {
        "ssl.certfile": "c.pem", "ssl.keyfile": "k.pem", "ssl.ca.file": "ca.pem",
        "ssl.client.auth": "requested", "auth.allow.anonymous": "true"}
    values = {k: v.replace("http://", "https://") for k, v in values.items()}
    config = load_controller_config(write_properties(tmp_path / "c.properties", values), {}, {})
    settings = tls_settings(config)
    assert settings is not None
    assert (settings.certfile, settings.keyfile, settings.ca_file, settings.client_auth) == (
        Path("c.pem"), Path("k.pem"), Path("ca.pem"), "requested")
    authenticator = authenticator_of(config)
    assert authenticator.certificates and authenticator.allow_anonymous
    assert authenticator.credentials is None
