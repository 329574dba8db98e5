"""Authentication and whole-request authorization against a real 3-node quorum: bearer tokens
(401s, 403s, brokers acting as themselves, tokens added and revoked without a restart, the
principal of a write forwarded to the leader), and client certificates on a TLS quorum."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chunkraft.local.local_cluster import LocalCluster
from chunkraft.security.certificates import issue_certificate, make_ca
from chunkraft.security.credentials import revoke_tokens
from tests.integration.conftest import BASE_PROPERTIES, READY_TIMEOUT, log_tail, stop_cluster
from tests.support.cluster_client import (
    ClusterClient,
    admin_client,
    new_key,
    registration_body,
    wait_converged,
    wait_leader,
)

API = "/controller/v1"
RELOAD_WAIT = 10.0
"""Bound on the wait for every node to honour a changed credentials file (they check each s)."""


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def a_follower(cluster: LocalCluster) -> int:
    leader = wait_leader(cluster)
    return next(node for node in cluster.nodes if node != leader)


def cluster_acl(principal: str, operation: str) -> dict[str, Any]:
    return {"resource_type": "CLUSTER", "resource_name": "kafka-cluster",
            "principal": principal, "operation": operation, "permission_type": "ALLOW"}


def topic_acl(principal: str, prefix: str, operation: str) -> dict[str, Any]:
    return {"resource_type": "TOPIC", "resource_name": prefix,
            "resource_pattern_type": "PREFIXED", "principal": principal,
            "operation": operation, "permission_type": "ALLOW"}


def create_acls(client: ClusterClient, *acls: dict[str, Any]) -> None:
    """Creates ``acls`` (the client's principal must be allowed to)."""
    outcome = client.write("/create-acls", {"creations": list(acls)})
    assert outcome.acknowledged, outcome.describe()
    assert outcome.body is not None
    assert [r["error_code"] for r in outcome.body["results"]] == [0] * len(acls), outcome.body


def wait_until(check: Callable[[], bool], what: str, timeout: float = RELOAD_WAIT) -> None:
    ends = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= ends:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)


def assert_error(answer: httpx.Response, status: int, name: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert set(body) == {"error_code", "error_name", "message"}, body
    assert body["error_name"] == name, body
    return body


def topic(name: str) -> dict[str, Any]:
    return {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}]}


# ---------------------------------------------------------------- bearer tokens


def test_no_or_a_bad_token_is_a_401_with_the_error_body(quorum: LocalCluster) -> None:
    url = quorum.nodes[a_follower(quorum)].url
    requests = [("POST", f"{API}/create-topics", topic("t")),
                ("POST", f"{API}/metadata", {}),
                ("GET", f"{API}/quorum", None),
                ("GET", f"{API}/metadata-log", None),
                ("GET", "/v3/clusters", None),
                ("GET", "/metrics", None)]
    with httpx.Client(timeout=10) as http:
        for method, path, body in requests:
            missing = http.request(method, url + path, json=body)
            error = assert_error(missing, 401, "SASL_AUTHENTICATION_FAILED")
            assert error["error_code"] == 58
            assert "Bearer <token>" in error["message"]
            assert missing.headers["www-authenticate"].startswith("Bearer")
            wrong = http.request(method, url + path, json=body,
                                 headers=bearer("crt_" + "x" * 43))
            assert assert_error(wrong, 401, "SASL_AUTHENTICATION_FAILED")["message"] == (
                "invalid bearer token")
            assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
        for path in ("/healthz", "/readyz", "/openapi.json"):
            assert http.get(url + path).status_code == 200, path


def test_a_user_without_acls_is_refused_cluster_level_routes(quorum: LocalCluster) -> None:
    token = quorum.add_token("User:nobody")
    url = quorum.nodes[a_follower(quorum)].url
    with httpx.Client(timeout=10, headers=bearer(token)) as http:
        wait_until(lambda: http.post(url + f"{API}/metadata", json={}).status_code == 200,
                   "the new token works")
        for method, path, body in [
            ("GET", f"{API}/quorum", None),
            ("GET", f"{API}/metadata-log", None),
            ("GET", f"{API}/snapshot", None),
            ("POST", f"{API}/describe-acls", {}),
            ("POST", f"{API}/create-acls", {"creations": []}),
            ("POST", f"{API}/delete-acls", {"filters": []}),
            ("POST", f"{API}/unregister-broker", {"broker_id": 1}),
            ("POST", f"{API}/broker-registration", registration_body(1, quorum.cluster_id)),
        ]:
            answer = http.request(method, url + path, json=body)
            error = assert_error(answer, 403, "CLUSTER_AUTHORIZATION_FAILED")
            assert "User:nobody" in error["message"], path
        # a topic operation is refused per topic, inside a 200
        created = http.post(url + f"{API}/create-topics", json=topic("nobody-topic"))
        assert created.status_code == 200, created.text
        assert created.json()["topics"][0]["error_code"] == 29  # TOPIC_AUTHORIZATION_FAILED


def test_a_broker_acts_only_as_itself(quorum: LocalCluster) -> None:
    with admin_client(quorum) as admin:
        create_acls(admin, cluster_acl("User:broker-4", "CLUSTER_ACTION"),
                    cluster_acl("User:broker-5", "CLUSTER_ACTION"))
    url = quorum.nodes[a_follower(quorum)].url
    with ClusterClient([url], token=quorum.token("User:broker-4")) as broker_4:
        as_other = broker_4.register_broker(5, quorum.cluster_id, key=new_key())
        assert as_other.status == 403, as_other.describe()
        assert as_other.body is not None
        assert as_other.body["error_name"] == "CLUSTER_AUTHORIZATION_FAILED"
        assert "may not act as broker 5" in as_other.body["message"]
        itself = broker_4.register_broker(4, quorum.cluster_id, key=new_key())
        assert itself.acknowledged and itself.status == 200, itself.describe()
        assert itself.body is not None and itself.body["error_code"] == 0, itself.describe()
        epoch = itself.body["broker_epoch"]
        beat = broker_4.heartbeat(4, epoch, -1, key=new_key())
        assert beat.acknowledged, beat.describe()
        other_beat = broker_4.heartbeat(5, epoch, -1, key=new_key())
        assert other_beat.status == 403, other_beat.describe()


def test_tokens_are_added_and_revoked_without_a_restart(quorum: LocalCluster) -> None:
    token = quorum.add_token("User:carol", "added while running")
    urls = quorum.urls

    def works_everywhere(expected: int) -> Callable[[], bool]:
        def check() -> bool:
            return all(httpx.post(url + f"{API}/metadata", json={}, headers=bearer(token),
                                  timeout=5).status_code == expected for url in urls)
        return check

    started = time.monotonic()
    wait_until(works_everywhere(200), "every node accepts the added token")
    assert time.monotonic() - started < 5.0
    removed = revoke_tokens(quorum.credentials_path, principal="User:carol")
    assert [entry.principal for entry in removed] == ["User:carol"]
    wait_until(works_everywhere(401), "every node refuses the revoked token")


def test_a_write_through_a_follower_is_authorized_on_the_leader_as_its_principal(
        quorum: LocalCluster) -> None:
    with admin_client(quorum) as admin:
        admin.ensure_unfenced((1, 2, 3), quorum.cluster_id)
        create_acls(admin, topic_acl("User:dave", "dave-", "CREATE"))
    dave = quorum.add_token("User:dave")
    erin = quorum.add_token("User:erin")
    follower = quorum.nodes[a_follower(quorum)]
    with httpx.Client(timeout=10) as http:
        wait_until(lambda: http.post(follower.url + f"{API}/metadata", json={},
                                     headers=bearer(erin)).status_code == 200, "erin's token")
        # dave may create dave-* (only his ACL allows it: the leader saw dave, not the follower)
        mine = http.post(follower.url + f"{API}/create-topics", json=topic("dave-orders"),
                         headers={**bearer(dave), "Idempotency-Key": new_key()})
        assert mine.status_code == 200, mine.text
        assert mine.json()["topics"][0]["error_code"] == 0, mine.text
        theirs = http.post(follower.url + f"{API}/create-topics", json=topic("erin-orders"),
                           headers={**bearer(dave), "Idempotency-Key": new_key()})
        assert theirs.json()["topics"][0]["error_code"] == 29, theirs.text
        by_erin = http.post(follower.url + f"{API}/create-topics", json=topic("dave-x"),
                            headers={**bearer(erin), "Idempotency-Key": new_key()})
        assert by_erin.json()["topics"][0]["error_code"] == 29, by_erin.text


def test_a_forged_forwarded_principal_is_refused(quorum: LocalCluster) -> None:
    leader = quorum.nodes[wait_leader(quorum)]
    nobody = quorum.add_token("User:mallory")
    forged = {"X-Chunkraft-Principal": "User%3Aadmin", "X-Chunkraft-Principal-Host": "%2A",
              "X-Chunkraft-Principal-Signature": "0" * 64, "X-Chunkraft-Forwarded": "2",
              "Idempotency-Key": "ab" * 16}
    with httpx.Client(timeout=10) as http:
        for headers in (forged, {**forged, **bearer(nobody)}):
            answer = http.post(leader.url + f"{API}/create-acls", headers=headers, json={
                "creations": [cluster_acl("User:mallory", "ALL")]})
            body = assert_error(answer, 401, "SASL_AUTHENTICATION_FAILED")
            assert "Signature" in body["message"]
    with admin_client(quorum) as admin:
        described = admin.read("/describe-acls", {"principal_filter": "User:mallory"})[0]
        assert described["resources"] == []


# ---------------------------------------------------------------- client certificates (mTLS)


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A 3-node quorum on https with client certificates required."""
    cluster = LocalCluster(tmp_path_factory.mktemp("tls-quorum"), tls=True,
                           extra_properties=dict(BASE_PROPERTIES))
    try:
        cluster.prepare()
        cluster.start()
        cluster.wait_ready(timeout=READY_TIMEOUT)
        wait_converged(cluster, list(cluster.nodes), timeout=READY_TIMEOUT)
        yield cluster
    except BaseException:
        for node in cluster.nodes.values():
            print(f"---- controller {node.node_id}:\n{log_tail(node.log_path)}")
        raise
    finally:
        stop_cluster(cluster)


def test_a_client_certificate_authenticates_as_user_cn(tls_cluster: LocalCluster) -> None:
    cluster = tls_cluster
    url = cluster.nodes[a_follower(cluster)].url
    with httpx.Client(timeout=10, verify=cluster.client_context("frank")) as frank:
        refused = frank.get(url + f"{API}/quorum")
        error = assert_error(refused, 403, "CLUSTER_AUTHORIZATION_FAILED")
        assert "User:frank" in error["message"]
    with httpx.Client(timeout=10, verify=cluster.verify) as admin:
        assert admin.get(url + f"{API}/quorum").status_code == 200  # CN=admin, a super user
        # a bearer token decides over the certificate
        token = cluster.add_token("User:grace")
        wait_until(lambda: admin.post(url + f"{API}/metadata", json={},
                                      headers=bearer(token)).status_code == 200, "grace")
        as_grace = admin.get(url + f"{API}/quorum", headers=bearer(token))
        assert "User:grace" in assert_error(as_grace, 403,
                                            "CLUSTER_AUTHORIZATION_FAILED")["message"]


def test_without_a_trusted_certificate_there_is_no_connection(tls_cluster: LocalCluster,
                                                              tmp_path: Path) -> None:
    url = tls_cluster.nodes[1].url
    with pytest.raises(httpx.HTTPError):
        httpx.get(url + "/healthz", verify=tls_cluster.client_context(None), timeout=10)
    stranger_ca = make_ca("another CA")
    stranger = issue_certificate(stranger_ca, "admin")
    stranger.write(tmp_path / "admin.pem", tmp_path / "admin.key")
    context = ssl.create_default_context(cafile=str(tls_cluster.ca_path))
    context.load_cert_chain(str(tmp_path / "admin.pem"), str(tmp_path / "admin.key"))
    with pytest.raises(httpx.HTTPError):
        httpx.get(url + f"{API}/quorum", verify=context, timeout=10)
    # nor does a client that cannot verify the controller talk to it
    with pytest.raises(httpx.HTTPError):
        httpx.get(url + "/healthz", timeout=10)


def test_a_certificate_principal_survives_forwarding_over_https(
        tls_cluster: LocalCluster) -> None:
    cluster = tls_cluster
    with admin_client(cluster) as admin:
        admin.ensure_unfenced((1, 2, 3), cluster.cluster_id)
        create_acls(admin, topic_acl("User:heidi", "heidi-", "CREATE"))
    follower = cluster.nodes[a_follower(cluster)]
    with ClusterClient([follower.url], verify=cluster.client_context("heidi")) as heidi:
        mine = heidi.create_topics([("heidi-orders", 1, 3)], key=new_key())
        assert mine.acknowledged, mine.describe()
        assert mine.body is not None and mine.body["topics"][0]["error_code"] == 0, mine.body
        other = heidi.create_topics([("ivan-orders", 1, 3)], key=new_key())
        assert other.body is not None and other.body["topics"][0]["error_code"] == 29
    with admin_client(cluster) as admin:
        names = {t["name"] for t in admin.metadata()["topics"]}
    assert "heidi-orders" in names and "ivan-orders" not in names


def test_a_controller_without_a_way_to_authenticate_does_not_start(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "no-auth", size=1,
                           extra_properties={"auth.credentials.file": ""})
    cluster.prepare()
    cluster.start()
    try:
        process = cluster.nodes[1].process
        assert process is not None
        assert process.wait(timeout=60) == 1
    finally:
        stop_cluster(cluster)
    log = cluster.nodes[1].log_path.read_text()
    assert "no way to authenticate requests is configured" in log
    for choice in ("auth.credentials.file", "ssl.client.auth", "auth.allow.anonymous=true"):
        assert choice in log


def test_requested_client_certificates_leave_tokens_usable(tmp_path: Path) -> None:
    """``ssl.client.auth=requested``: a certificate, when sent, authenticates; without one, a
    token does, and nothing at all is a 401 (not a failed handshake)."""
    cluster = LocalCluster(tmp_path / "requested", size=1, tls=True, client_auth="requested",
                           extra_properties=dict(BASE_PROPERTIES))
    cluster.prepare()
    cluster.start()
    try:
        cluster.wait_ready(timeout=READY_TIMEOUT)
        url = cluster.nodes[1].url + f"{API}/quorum"
        anonymous = cluster.client_context(None)  # verifies the server, sends no certificate
        assert httpx.get(url, verify=anonymous, headers=cluster.headers,
                         timeout=10).status_code == 200
        assert_error(httpx.get(url, verify=anonymous, timeout=10), 401,
                     "SASL_AUTHENTICATION_FAILED")
        judy = httpx.get(url, verify=cluster.client_context("judy"), timeout=10)
        assert "User:judy" in assert_error(judy, 403, "CLUSTER_AUTHORIZATION_FAILED")["message"]
    finally:
        stop_cluster(cluster)
