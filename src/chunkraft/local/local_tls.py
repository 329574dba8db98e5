"""The private CA of a local cluster: certificates issued from it, and contexts that trust it.

The CA is made on first use in the cluster's ``tls/`` directory (``ca.pem``, ``ca.key``) and
signs every node's and client's certificate; the nodes verify clients with it and clients
verify the nodes with it.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from chunkraft.security.certificates import Issued, issue_certificate, make_ca

__all__ = ["issue_local", "local_client_context"]


def issue_local(tls_dir: Path, ca_name: str, paths: tuple[Path, Path], common_name: str,
                addresses: tuple[str, ...]) -> tuple[Path, Path]:
    """Writes a certificate for ``common_name`` (and ``addresses``) signed by the CA in
    ``tls_dir`` (made, named ``ca_name``, if missing) to ``paths``; returns them."""
    tls_dir.mkdir(parents=True, exist_ok=True)
    ca_path, ca_key = tls_dir / "ca.pem", tls_dir / "ca.key"
    if not ca_path.exists():
        make_ca(ca_name).write(ca_path, ca_key)
    ca = Issued(ca_path.read_bytes(), ca_key.read_bytes())
    issue_certificate(ca, common_name, addresses=addresses).write(*paths)
    return paths


def local_client_context(ca_path: Path, certificate: tuple[Path, Path] | None
                         ) -> ssl.SSLContext:
    """A context that verifies with the CA at ``ca_path`` and presents ``certificate``
    (certificate and key paths; None: none)."""
    context = ssl.create_default_context(cafile=str(ca_path))
    if certificate is not None:
        context.load_cert_chain(str(certificate[0]), str(certificate[1]))
    return context
