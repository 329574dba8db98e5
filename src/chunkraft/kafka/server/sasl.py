"""SASL on a Kafka listener: SaslHandshake 0-1 and SaslAuthenticate 0-2, PLAIN and OAUTHBEARER.

The principals are those of the REST API: a bearer token of the credentials file names one.

- PLAIN (RFC 4616): ``authzid NUL username NUL password``. The password is the principal's
  bearer token; the username must name that principal, as ``User:alice`` or ``alice`` (Kafka's
  usual form). An authorization id, if given, must be the username.
- OAUTHBEARER (RFC 7628): the client's first message carries ``auth=Bearer <token>``; the token
  is a bearer token of the credentials file.

A failure answers SASL_AUTHENTICATION_FAILED with the reason and the connection closes after
the answer, as Kafka's does. SaslHandshake v0 is followed by one raw SASL token frame (no
Kafka header), as Kafka's oldest clients send it; v1 by SaslAuthenticate requests.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from chunkraft.api.authentication import certificate_principal
from chunkraft.security.credentials import CredentialStore
from chunkraft.security.principal import ANONYMOUS_NAME, Principal

__all__ = ["KafkaAuthenticator", "SaslFailure"]

_MAX_SASL_TOKEN = 64 * 1024
"""A SASL message larger than this is refused: a PLAIN or bearer message is a few hundred bytes."""


class SaslFailure(Exception):
    """Authentication failed; the message is what the client is told."""


@dataclass(frozen=True)
class KafkaAuthenticator:
    """Who a Kafka connection is: from its SASL exchange, its client certificate, or nobody.

    ``credentials`` is the bearer-token store (None: every SASL exchange fails),
    ``mechanisms`` the SASL mechanisms offered, ``allow_anonymous`` whether a connection with
    no credentials (PLAINTEXT, or SSL without a client certificate) is ``User:ANONYMOUS``.
    Immutable; safe to share between listeners.
    """

    credentials: CredentialStore | None
    mechanisms: tuple[str, ...] = ("PLAIN", "OAUTHBEARER")
    allow_anonymous: bool = False

    def without_sasl(self, tls: ssl.SSLObject | None, host: str) -> Principal | None:
        """The principal of a connection to a listener without SASL: its client certificate's
        ``User:<CN>``, else anonymous when allowed; None when it may not be served."""
        if tls is not None:
            subject = _subject(tls)
            if subject is not None:
                name = certificate_principal(subject)
                if name is not None:
                    return Principal(name, host)
        return Principal(ANONYMOUS_NAME, host) if self.allow_anonymous else None

    def authenticate(self, mechanism: str, message: bytes, host: str) -> tuple[Principal, str]:
        """The principal and bearer token of a SASL client message; SaslFailure otherwise."""
        if len(message) > _MAX_SASL_TOKEN:
            raise SaslFailure(f"a SASL message of {len(message)} bytes is over the "
                              f"{_MAX_SASL_TOKEN}-byte limit")
        if mechanism == "PLAIN":
            return self._plain(message, host)
        if mechanism == "OAUTHBEARER":
            return self._bearer(message, host)
        raise SaslFailure(f"unsupported SASL mechanism {mechanism}")

    def _principal_of(self, token: str) -> str | None:
        if self.credentials is None:
            return None
        self.credentials.refresh()
        return self.credentials.principal_for(token)

    def _plain(self, message: bytes, host: str) -> tuple[Principal, str]:
        parts = message.split(b"\x00")
        if len(parts) != 3:
            raise SaslFailure("a SASL/PLAIN message is authzid NUL username NUL password")
        try:
            authzid, username, password = (part.decode() for part in parts)
        except UnicodeDecodeError:
            raise SaslFailure("a SASL/PLAIN message must be UTF-8") from None
        if not username or not password:
            raise SaslFailure("SASL/PLAIN needs a username and a password")
        if authzid and authzid != username:
            raise SaslFailure(f"authorization id {authzid!r} is not the username {username!r}")
        name = self._principal_of(password)
        if name is None or username not in (name, name.partition(":")[2]):
            # One answer for both: it never tells which of the two was wrong.
            raise SaslFailure(f"Authentication failed: invalid credentials for user {username}")
        return Principal(name, host), password

    def _bearer(self, message: bytes, host: str) -> tuple[Principal, str]:
        try:
            text = message.decode()
        except UnicodeDecodeError:
            raise SaslFailure("a SASL/OAUTHBEARER message must be UTF-8") from None
        gs2, _, rest = text.partition("\x01")
        authzid = next((part[2:] for part in gs2.split(",") if part.startswith("a=")), "")
        token = None
        for item in rest.split("\x01"):
            key, _, value = item.partition("=")
            if key == "auth":
                scheme, _, token = value.partition(" ")
                if scheme.lower() != "bearer":
                    raise SaslFailure("OAUTHBEARER's auth must be 'Bearer <token>'")
        if not token:
            raise SaslFailure("a SASL/OAUTHBEARER message without auth=Bearer <token>")
        name = self._principal_of(token.strip())
        if name is None:
            raise SaslFailure("Authentication failed: invalid bearer token")
        if authzid and authzid not in (name, name.partition(":")[2]):
            raise SaslFailure(f"authorization id {authzid!r} is not the token's principal")
        return Principal(name, host), token.strip()


def _subject(tls: ssl.SSLObject) -> str | None:
    """The RFC 4514 subject of the verified client certificate, or None."""
    certificate = tls.getpeercert()
    if not certificate:
        return None
    parts = []
    subject: Any = certificate.get("subject", ())
    for rdn in subject:
        for key, value in rdn:
            short = {"commonName": "CN", "organizationName": "O",
                     "organizationalUnitName": "OU", "countryName": "C"}.get(key, key)
            escaped = value.replace("\\", "\\\\").replace(",", "\\,").replace("+", "\\+")
            parts.append(f"{short}={escaped}")
    return ",".join(parts) if parts else None
