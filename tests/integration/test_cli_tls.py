"""The installed ``chunkraft`` command against a controller that serves https and requires
client certificates: the command-config's ``ssl.*`` files make it work, and without them the
failure is a one-line message, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.local.local_cluster import LocalCluster
from tests.integration.conftest import BASE_PROPERTIES, stop_cluster

CHUNKRAFT = str(Path(sys.executable).parent / "chunkraft")


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("tls"), size=1, tls=True,
                           extra_properties=dict(BASE_PROPERTIES))
    try:
        cluster.prepare()
        cluster.start()
        cluster.wait_ready(timeout=60)
        yield cluster
    finally:
        stop_cluster(cluster)


def run(cluster: LocalCluster, config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "CHUNKRAFT_TOKEN"}
    return subprocess.run([CHUNKRAFT, *argv, "--bootstrap-server", ",".join(cluster.urls),
                           "--command-config", str(config)],
                          capture_output=True, text=True, timeout=60, env=environment,
                          check=False)


def test_the_admin_command_config_carries_the_tls_files(tls_cluster: LocalCluster) -> None:
    assert all(url.startswith("https://") for url in tls_cluster.urls)
    config = tls_cluster.command_config_path
    assert "ssl.certificate.file=" in config.read_text()
    created = run(tls_cluster, config, "topics", "--create", "--topic", "secure",
                  "--partitions", "1", "--replication-factor", "1")
    # no broker is registered: the topic cannot be placed, and the answer says so over TLS
    assert created.returncode == 1, created
    assert created.stderr.startswith("Error while executing topic command : "
                                     "INVALID_REPLICATION_FACTOR"), created.stderr
    status = run(tls_cluster, config, "quorum", "describe", "--status")
    assert status.returncode == 0, status
    assert status.stdout.startswith(f"ClusterId:            {tls_cluster.cluster_id}\n")


def test_without_a_client_certificate_or_the_ca_the_error_is_one_line(
        tls_cluster: LocalCluster, tmp_path: Path) -> None:
    token_only = tmp_path / "token-only.properties"
    token_only.write_text(f"bearer.token={tls_cluster.admin_token}\n"
                          f"ssl.ca.file={tls_cluster.ca_path}\n")
    no_certificate = run(tls_cluster, token_only, "topics", "--list")
    assert no_certificate.returncode == 1
    assert no_certificate.stderr.startswith(
        "Error while executing topic command : NETWORK_EXCEPTION: no controller answered: "
        "https://127.0.0.1:")
    assert no_certificate.stderr.count("\n") == 1 and "Traceback" not in no_certificate.stderr

    no_ca = tmp_path / "no-ca.properties"
    no_ca.write_text(f"bearer.token={tls_cluster.admin_token}\n")
    untrusted = run(tls_cluster, no_ca, "topics", "--list")
    assert untrusted.returncode == 1
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr
    assert untrusted.stderr.count("\n") == 1
