"""A small private CA for local clusters and tests: a CA, and certificates it signs.

Production deployments bring their own PKI; this exists so ``LocalCluster(tls=True)`` and the
tests can run controllers over https with client certificates, without openssl. Keys are
ECDSA P-256 (fast to make); certificates are valid from an hour ago for ``days`` days. A
controller's certificate names its address in subjectAltName (IP or DNS, which is what TLS
clients check) and serves for both server and client authentication, since a controller also
calls the others when it forwards a write. The common name is the identity a controller maps
a client certificate to (``User:<CN>``).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Issued", "issue_certificate", "make_ca"]


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, PEM-encoded."""

    certificate_pem: bytes
    key_pem: bytes

    def write(self, certificate_path: Path, key_path: Path) -> None:
        """Writes both files; the key readable by its owner only."""
        certificate_path.write_bytes(self.certificate_pem)
        key_path.touch(mode=0o600, exist_ok=True)
        key_path.chmod(0o600)
        key_path.write_bytes(self.key_pem)

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.certificate_pem)

    @property
    def key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return key


def _name(common_name: str, organization: str | None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_ca(common_name: str = "chunkraft local CA", *, days: int = 30) -> Issued:
    """A self-signed CA certificate and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name, None)
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    return Issued(certificate.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_certificate(ca: Issued, common_name: str, *, addresses: Sequence[str] = (),
                      server: bool = True, client: bool = True, organization: str | None = None,
                      days: int = 30, valid_from: datetime.datetime | None = None) -> Issued:
    """A certificate for ``common_name`` signed by ``ca``.

    ``addresses`` go into subjectAltName (IP addresses as such, other names as DNS names);
    ``server`` / ``client`` choose the extended key usages. ``valid_from`` (default an hour
    ago) lets a test make a certificate that is not valid yet or any more.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    start = valid_from or datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
        [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organization))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, key_encipherment=False, key_cert_sign=False, crl_sign=False,
            content_commitment=False, data_encipherment=False, key_agreement=True,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            ca.key.public_key()), critical=False)
    )
    if addresses:
        names: list[x509.GeneralName] = []
        for address in addresses:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(address)))
            except ValueError:
                names.append(x509.DNSName(address))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    certificate = builder.sign(ca.key, hashes.SHA256())
    return Issued(certificate.public_bytes(serialization.Encoding.PEM), _key_pem(key))
