"""TLS of the HTTP listener (chunkraft.api.tls): uvicorn's options, client SSL contexts, and
the ASGI TLS extension read from a real TLS connection's transport."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest

from chunkraft.api.tls import (
    CertificateHttpToolsProtocol,
    TlsSettings,
    client_ssl_context,
    tls_extension,
)
from chunkraft.security.certificates import Issued, issue_certificate, make_ca


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("pki")
    ca = make_ca()
    ca.write(directory / "ca.pem", directory / "ca.key")
    paths = {"ca": directory / "ca.pem"}
    for name, addresses in (("server", ("127.0.0.1",)), ("alice", ())):
        issue_certificate(ca, name, addresses=addresses, organization="Example, Inc.").write(
            directory / f"{name}.pem", directory / f"{name}.key")
        paths[name] = directory / f"{name}.pem"
        paths[f"{name}-key"] = directory / f"{name}.key"
    return paths


def test_uvicorn_options_follow_the_settings(pki: dict[str, Path]) -> None:
    settings = TlsSettings(pki["server"], pki["server-key"], pki["ca"], "required")
    options = settings.uvicorn_options()
    assert options["ssl_certfile"] == str(pki["server"])
    assert options["ssl_keyfile"] == str(pki["server-key"])
    assert options["ssl_ca_certs"] == str(pki["ca"])
    assert options["ssl_cert_reqs"] == ssl.CERT_REQUIRED
    assert options["http"] is CertificateHttpToolsProtocol
    requested = TlsSettings(pki["server"], client_auth="requested").uvicorn_options()
    assert requested["ssl_cert_reqs"] == ssl.CERT_OPTIONAL
    assert "ssl_keyfile" not in requested and "ssl_ca_certs" not in requested


def test_the_forwarding_context_presents_the_node_certificate_only_with_client_auth(
        pki: dict[str, Path]) -> None:
    with_auth = client_ssl_context(TlsSettings(pki["server"], pki["server-key"], pki["ca"],
                                               "required"))
    assert with_auth.verify_mode == ssl.CERT_REQUIRED and with_auth.check_hostname
    assert with_auth.cert_store_stats()["x509_ca"] == 1
    client_ssl_context(TlsSettings(pki["server"], pki["server-key"], pki["ca"], "none"))


def run_tls_connection(pki: dict[str, Path], client_certificate: bool,
                       cert_reqs: ssl.VerifyMode) -> dict[str, Any] | None:
    """The TLS extension the server side of one real TLS connection on 127.0.0.1 computes."""
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH,
                                                cafile=str(pki["ca"]))
    server_context.load_cert_chain(str(pki["server"]), str(pki["server-key"]))
    server_context.verify_mode = cert_reqs
    client_context = ssl.create_default_context(cafile=str(pki["ca"]))
    if client_certificate:
        client_context.load_cert_chain(str(pki["alice"]), str(pki["alice-key"]))
    seen: list[dict[str, Any] | None] = []

    async def main() -> None:
        done = asyncio.Event()

        async def on_connection(reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
            await reader.read(1)
            seen.append(tls_extension(writer.transport))
            writer.close()
            done.set()

        server = await asyncio.start_server(on_connection, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context)
            writer.write(b"x")
            await writer.drain()
            await asyncio.wait_for(done.wait(), 10)
            writer.close()

    asyncio.run(main())
    return seen[0]


def test_a_verified_client_certificate_is_in_the_extension(pki: dict[str, Path]) -> None:
    extension = run_tls_connection(pki, True, ssl.CERT_REQUIRED)
    assert extension is not None
    assert extension["client_cert_name"] == "O=Example\\, Inc.,CN=alice"
    assert extension["client_cert_error"] is None
    assert extension["client_cert_chain"][0].startswith("-----BEGIN CERTIFICATE-----")


def test_no_client_certificate_when_only_requested(pki: dict[str, Path]) -> None:
    extension = run_tls_connection(pki, False, ssl.CERT_OPTIONAL)
    assert extension is not None
    assert extension["client_cert_name"] is None and extension["client_cert_chain"] == []


def test_a_plain_connection_has_no_extension() -> None:
    class Plain(asyncio.BaseTransport):
        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return default

    assert tls_extension(Plain()) is None


def test_issued_certificates_name_their_addresses_and_usages() -> None:
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca = make_ca("test CA")
    issued: Issued = issue_certificate(ca, "controller-1", addresses=("127.0.0.1", "localhost"),
                                       client=False)
    certificate = issued.certificate
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    usages = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert certificate.issuer == ca.certificate.subject
