"""TLS for the controller's HTTP listener: uvicorn's settings and the client certificate.

uvicorn (0.54) terminates TLS but does not tell the application who the client's certificate
names. :class:`CertificateHttpToolsProtocol` (passed as ``http=`` to ``uvicorn.Config``) adds
the ASGI TLS extension to every request's scope: ``scope["extensions"]["tls"]`` with
``client_cert_name`` (the subject, RFC 4514, as the ASGI spec defines it) and
``client_cert_chain`` (the peer certificate, PEM). It is computed once per connection, when
the handshake is done, not per request. The handshake itself verified the certificate against
``ssl.ca.file`` (``ssl.CERT_REQUIRED`` or ``CERT_OPTIONAL``), so any certificate found here is
a verified one; :mod:`chunkraft.api.authentication` maps it to ``User:<CN>``.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "CLIENT_AUTH_MODES",
    "CertificateHttpToolsProtocol",
    "TlsSettings",
    "client_ssl_context",
    "server_ssl_context",
    "tls_extension",
]

CLIENT_AUTH_MODES = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
"""``ssl.client.auth`` -> what the server's handshake demands of the client."""


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """The TLS files of one controller (``ssl.*`` settings); ``client_auth`` is a key of
    :data:`CLIENT_AUTH_MODES`."""

    certfile: Path
    keyfile: Path | None = None
    ca_file: Path | None = None
    client_auth: str = "none"

    def uvicorn_options(self) -> dict[str, Any]:
        """Keyword arguments of ``uvicorn.Config`` serving https with these files."""
        options: dict[str, Any] = {
            "ssl_certfile": str(self.certfile),
            "ssl_cert_reqs": CLIENT_AUTH_MODES[self.client_auth],
            "http": CertificateHttpToolsProtocol,
        }
        if self.keyfile is not None:
            options["ssl_keyfile"] = str(self.keyfile)
        if self.ca_file is not None:
            options["ssl_ca_certs"] = str(self.ca_file)
        return options


def client_ssl_context(settings: TlsSettings) -> ssl.SSLContext:
    """How this controller calls the others over https: it verifies them with ``ssl.ca.file``
    (the system's CAs without it) and, when they ask for client certificates, presents its
    own certificate."""
    context = ssl.create_default_context(
        cafile=str(settings.ca_file) if settings.ca_file is not None else None)
    if settings.client_auth != "none":
        context.load_cert_chain(str(settings.certfile),
                                str(settings.keyfile) if settings.keyfile else None)
    return context


def _subject_name(certificate: x509.Certificate) -> str:
    return certificate.subject.rfc4514_string()


def tls_extension(transport: asyncio.BaseTransport) -> dict[str, Any] | None:
    """The ASGI TLS extension of a connection, or None if it is not TLS."""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    extension: dict[str, Any] = {"server_cert": None, "client_cert_chain": [],
                                 "client_cert_name": None, "client_cert_error": None,
                                 "tls_version": None, "cipher_suite": None}
    try:
        der = ssl_object.getpeercert(binary_form=True)
    except (ValueError, ssl.SSLError) as error:  # the handshake is not complete
        extension["client_cert_error"] = str(error)
        return extension
    if der:
        try:
            certificate = x509.load_der_x509_certificate(der)
        except ValueError as error:
            extension["client_cert_error"] = str(error)
            return extension
        extension["client_cert_name"] = _subject_name(certificate)
        extension["client_cert_chain"] = [ssl.DER_cert_to_PEM_cert(der)]
    return extension


class CertificateHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, adding the TLS extension (see the module doc) to every
    request of the connection."""

    _tls: dict[object, object] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        extension = tls_extension(transport)
        if extension is not None:
            self._tls = {key: value for key, value in extension.items()}

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._tls is not None:
            # One dict per connection: the application reads it, never writes it.
            self.scope["extensions"] = {"tls": self._tls}


def server_ssl_context(settings: TlsSettings) -> ssl.SSLContext:
    """The server side of these files, for listeners other than uvicorn's (Kafka's SSL and
    SASL_SSL): the certificate, and client certificates verified as ``client_auth`` says."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(settings.certfile),
                            str(settings.keyfile) if settings.keyfile else None)
    context.verify_mode = CLIENT_AUTH_MODES[settings.client_auth]
    if settings.ca_file is not None:
        context.load_verify_locations(cafile=str(settings.ca_file))
    return context
