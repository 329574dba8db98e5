"""KafkaAuthenticator (chunkraft.kafka.server.sasl): SASL/PLAIN and SASL/OAUTHBEARER messages
judged against a real credentials file, and the principal of a listener without SASL."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any, cast

import pytest

from chunkraft.kafka.server.sasl import KafkaAuthenticator, SaslFailure
from chunkraft.security.credentials import CredentialStore, add_token, revoke_tokens
from chunkraft.security.principal import ANONYMOUS_NAME, Principal

HOST = "10.0.0.7"


@pytest.fixture
def credentials(tmp_path: Path) -> CredentialStore:
    path = tmp_path / "credentials.json"
    add_token(path, "User:alice", token="crt_alice")
    add_token(path, "User:bob", token="crt_bob")
    return CredentialStore(path)


@pytest.fixture
def authenticator(credentials: CredentialStore) -> KafkaAuthenticator:
    return KafkaAuthenticator(credentials)


def failure(authenticator: KafkaAuthenticator, mechanism: str, message: bytes) -> str:
    with pytest.raises(SaslFailure) as caught:
        authenticator.authenticate(mechanism, message, HOST)
    return str(caught.value)


# --- PLAIN ------------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [
    b"\x00alice\x00crt_alice",          # librdkafka: no authorization id
    b"alice\x00alice\x00crt_alice",     # kafka-python: the username again
    b"\x00User:alice\x00crt_alice",     # the principal itself as the username
    b"User:alice\x00User:alice\x00crt_alice",
])
def test_plain_gives_the_tokens_principal_and_the_token(authenticator: KafkaAuthenticator,
                                                        message: bytes) -> None:
    assert authenticator.authenticate("PLAIN", message, HOST) == (
        Principal("User:alice", HOST), "crt_alice")


def test_plain_reads_the_file_again_when_it_changes(credentials: CredentialStore,
                                                    authenticator: KafkaAuthenticator) -> None:
    add_token(credentials.path, "User:carol", token="crt_carol")
    assert authenticator.authenticate("PLAIN", b"\x00carol\x00crt_carol", HOST)[0] == \
        Principal("User:carol", HOST)
    revoke_tokens(credentials.path, principal="User:alice")
    failure(authenticator, "PLAIN", b"\x00alice\x00crt_alice")


def test_a_wrong_password_and_a_wrong_user_fail_alike(authenticator: KafkaAuthenticator) -> None:
    wrong_password = failure(authenticator, "PLAIN", b"\x00alice\x00crt_nobody")
    wrong_user = failure(authenticator, "PLAIN", b"\x00alice\x00crt_bob")  # bob's token
    assert wrong_password == wrong_user
    assert "crt_" not in wrong_password  # no password (nor bob's name) is echoed
    assert "bob" not in wrong_user
    assert "Authentication failed" in wrong_password


def test_a_username_that_only_ends_like_the_principal_fails(
        authenticator: KafkaAuthenticator) -> None:
    for username in (b"lice", b"User:alic", b"Group:alice", b"ALICE", b"user:alice"):
        failure(authenticator, "PLAIN", b"\x00" + username + b"\x00crt_alice")


def test_an_authorization_id_other_than_the_username_fails(
        authenticator: KafkaAuthenticator) -> None:
    message = failure(authenticator, "PLAIN", b"bob\x00alice\x00crt_alice")
    assert "authorization id" in message


@pytest.mark.parametrize("message", [
    b"alice\x00crt_alice",               # two parts
    b"\x00alice\x00crt_alice\x00more",   # four parts
    b"",
    b"\x00\x00crt_alice",                # no username
    b"\x00alice\x00",                    # no password
])
def test_a_malformed_plain_message_fails(authenticator: KafkaAuthenticator,
                                         message: bytes) -> None:
    failure(authenticator, "PLAIN", message)


def test_a_plain_message_that_is_not_utf8_fails(authenticator: KafkaAuthenticator) -> None:
    assert "UTF-8" in failure(authenticator, "PLAIN", b"\x00al\xffice\x00crt_alice")


def test_an_oversize_message_fails_before_it_is_read(authenticator: KafkaAuthenticator) -> None:
    # A valid message padded past 64 KiB: refused for its size alone.
    padded = b"\x00alice\x00crt_alice" + b" " * (64 * 1024)
    assert "limit" in failure(authenticator, "PLAIN", padded)
    bearer = b"n,,\x01auth=Bearer crt_alice" + b" " * (64 * 1024) + b"\x01\x01"
    assert "limit" in failure(authenticator, "OAUTHBEARER", bearer)


def test_the_largest_message_allowed_is_64_kib(authenticator: KafkaAuthenticator) -> None:
    head = b"n,,\x01auth=Bearer crt_alice"
    message = head + b" " * (64 * 1024 - len(head) - 2) + b"\x01\x01"
    assert len(message) == 64 * 1024
    assert authenticator.authenticate("OAUTHBEARER", message, HOST)[1] == "crt_alice"


def test_without_a_credentials_store_every_exchange_fails() -> None:
    authenticator = KafkaAuthenticator(None)
    failure(authenticator, "PLAIN", b"\x00alice\x00crt_alice")
    failure(authenticator, "OAUTHBEARER", b"n,,\x01auth=Bearer crt_alice\x01\x01")


def test_an_unknown_mechanism_fails(authenticator: KafkaAuthenticator) -> None:
    assert "SCRAM-SHA-256" in failure(authenticator, "SCRAM-SHA-256", b"n,,n=alice,r=x")


# --- OAUTHBEARER ------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [
    b"n,,\x01auth=Bearer crt_alice\x01\x01",
    b"n,a=alice,\x01auth=Bearer crt_alice\x01\x01",       # an authzid naming the principal
    b"n,a=User:alice,\x01auth=Bearer crt_alice\x01\x01",
    b"n,,\x01host=k.test\x01port=9092\x01auth=bearer crt_alice\x01\x01",  # other keys first
])
def test_oauthbearer_gives_the_tokens_principal(authenticator: KafkaAuthenticator,
                                                message: bytes) -> None:
    assert authenticator.authenticate("OAUTHBEARER", message, HOST) == (
        Principal("User:alice", HOST), "crt_alice")


def test_oauthbearer_with_an_unknown_token_fails(authenticator: KafkaAuthenticator) -> None:
    message = failure(authenticator, "OAUTHBEARER", b"n,,\x01auth=Bearer crt_nobody\x01\x01")
    assert "crt_nobody" not in message


def test_oauthbearer_with_an_authzid_of_someone_else_fails(
        authenticator: KafkaAuthenticator) -> None:
    # RFC 7628 / Kafka's OAuthBearerSaslServer: an authorization id other than the token's
    # principal is refused (as PLAIN's is here), never silently replaced by the token's.
    failure(authenticator, "OAUTHBEARER", b"n,a=bob,\x01auth=Bearer crt_alice\x01\x01")


@pytest.mark.parametrize("message", [
    b"n,,\x01auth=Basic YWxpY2U6eA==\x01\x01",   # not a bearer scheme
    b"n,,\x01auth=crt_alice\x01\x01",            # no scheme at all
    b"n,,\x01\x01",                              # no auth
    b"auth=Bearer crt_alice",                    # no GS2 header
    b"n,,\x01auth=Bearer \x01\x01",              # an empty token
    b"n,,\x01auth=Bearer    \x01\x01",
    b"n,,\x01auth=Bearer crt_al\xffice\x01\x01",  # not UTF-8
])
def test_a_malformed_oauthbearer_message_fails(authenticator: KafkaAuthenticator,
                                               message: bytes) -> None:
    failure(authenticator, "OAUTHBEARER", message)


# --- without SASL -----------------------------------------------------------------------------


class FakeTls:
    """What without_sasl reads of an SSL object: the verified peer certificate."""

    def __init__(self, certificate: dict[str, Any] | None) -> None:
        self.certificate = certificate

    def getpeercert(self) -> dict[str, Any] | None:
        return self.certificate


def tls(certificate: dict[str, Any] | None) -> ssl.SSLObject:
    return cast(ssl.SSLObject, FakeTls(certificate))


def test_anonymous_only_when_allowed(credentials: CredentialStore) -> None:
    assert KafkaAuthenticator(credentials).without_sasl(None, HOST) is None
    assert KafkaAuthenticator(credentials, allow_anonymous=True).without_sasl(None, HOST) == \
        Principal(ANONYMOUS_NAME, HOST)


def test_a_client_certificate_names_the_principal_by_its_cn() -> None:
    certificate = {"subject": ((("countryName", "DE"),), (("organizationName", "ops"),),
                               (("commonName", "alice, admin"),))}
    for allow in (False, True):
        assert KafkaAuthenticator(None, allow_anonymous=allow).without_sasl(
            tls(certificate), HOST) == Principal("User:alice, admin", HOST)


def test_tls_without_a_certificate_or_a_cn_is_anonymous_or_nobody() -> None:
    no_cn = {"subject": ((("organizationName", "ops"),),)}
    for certificate in (None, {}, no_cn):
        assert KafkaAuthenticator(None).without_sasl(tls(certificate), HOST) is None
        assert KafkaAuthenticator(None, allow_anonymous=True).without_sasl(
            tls(certificate), HOST) == Principal(ANONYMOUS_NAME, HOST)
