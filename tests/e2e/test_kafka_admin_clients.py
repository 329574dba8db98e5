"""The stock Kafka clients administer a real chunkraft cluster.

One module, one cluster: 3 controllers and 3 broker agents on 127.0.0.1, every node with a
SASL_PLAINTEXT Kafka listener. Each case runs with each client that has the call (kcat,
kafka-python, confluent-kafka, aiokafka, kafkajs: tests/support/kafka_admin_clients.py), and is
checked over the REST API (as the admin) and by kcat, not only by the client that made it:

- brokers and topics listed (kcat -L as printed, and -J); DescribeCluster's id is REST's;
- CreateTopics with RF 3 and configs; validate only creates nothing;
- CreatePartitions validate only, then real; fewer partitions, a repeated broker and a
  replication factor over the brokers refused with the client's own exception for
  INVALID_PARTITIONS / INVALID_REPLICA_ASSIGNMENT / INVALID_REPLICATION_FACTOR;
- DescribeConfigs, AlterConfigs and IncrementalAlterConfigs; a bad value is INVALID_CONFIG;
- Create / Describe / DeleteAcls; DeleteTopics;
- a wrong password is SASL_AUTHENTICATION_FAILED in each client's own form; a principal
  without ACLs sees no topic;
- one principal gets the same answer over REST and over the Kafka port for each operation;
- bootstrap through a controller's listener; DescribeCluster v1 with endpoint type 2 and
  CreateTopics straight to the active controller, with chunkraft's codec on a raw socket.

Every wait is bounded (``WAIT_S``); each test has its own topics and principals.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from chunkraft.error_codes import Errors
from chunkraft.local.local_cluster import LocalCluster
from chunkraft.records.uuids import kafka_uuid_str
from tests.support.brokers import broker_cluster, wait_until
from tests.support.kafka_admin_clients import (
    CLIENTS,
    Acl,
    AclFilter,
    AdminAdapter,
    KcatAdmin,
    Login,
    Refused,
    clients_with,
    open_admin,
)
from tests.support.kafka_raw import RawKafka

pytestmark = pytest.mark.slow

WAIT_S = 15.0
"""Bound on every wait for a change to reach the brokers' images or a controller's."""
BROKERS = {0, 1, 2}
CONTROLLERS = {1, 2, 3}
RETENTION = "retention.ms"


# ------------------------------------------------------------------ the module's cluster


@dataclass
class Kit:
    """The module's cluster, an httpx client authenticated as the admin, and helpers."""

    cluster: LocalCluster
    http: httpx.Client
    cluster_id: str = ""
    tokens: dict[str, str] = field(default_factory=dict)

    # -- logins

    def login(self, username: str = "admin", password: str | None = None, *,
              bootstrap: str | None = None) -> Login:
        """SASL/PLAIN as ``username`` (the principal ``User:<username>``)."""
        if password is None:
            password = (self.cluster.admin_token if username == "admin"
                        else self.tokens[username])
        return Login(bootstrap or self.cluster.kafka_bootstrap_servers, username, password)

    def add_principal(self, username: str) -> str:
        """A token for ``User:<username>``, once every controller's REST API and every
        node's Kafka listener accept it (each re-reads the credentials file within about a
        second)."""
        token = self.cluster.add_token(f"User:{username}")
        self.tokens[username] = token
        ports = [b.kafka_port for b in self.cluster.broker_nodes.values()] + [
            n.kafka_port for n in self.cluster.nodes.values()]

        def accepted() -> bool:
            for url in self.cluster.urls:
                answer = httpx.get(f"{url}/v3/clusters", timeout=5,
                                   headers={"authorization": f"Bearer {token}"})
                if answer.status_code != 200:
                    return False
            for port in ports:
                try:
                    RawKafka("127.0.0.1", port, username, token).close()
                except ConnectionRefusedError:
                    return False
            return True

        wait_until(accepted, f"the token of User:{username} accepted everywhere", WAIT_S, 0.2)
        return token

    # -- REST, as the admin unless a token is given

    def rest(self, method: str, path: str, *, token: str | None = None,
             url: str | None = None, **kwargs: Any) -> httpx.Response:
        """``method`` on ``/v3/clusters/<id><path>`` of the first controller (or ``url``)."""
        headers = {"authorization": f"Bearer {token}"} if token else None
        return self.http.request(method, f"{url or self.cluster.urls[0]}/v3/clusters/"
                                 f"{self.cluster_id}{path}", headers=headers, **kwargs)

    def rest_create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                          configs: dict[str, str] | None = None) -> None:
        answer = self.rest("POST", "/topics", json={
            "topic_name": name, "partitions_count": partitions,
            "replication_factor": replication_factor,
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]})
        assert answer.status_code == 201, answer.text

    def rest_topic(self, name: str, url: str | None = None) -> dict[str, Any] | None:
        """The topic as a controller describes it; None when it has no such topic."""
        answer = self.rest("GET", f"/topics/{name}", url=url)
        if answer.status_code == 404:
            return None
        assert answer.status_code == 200, answer.text
        topic: dict[str, Any] = answer.json()
        return topic

    def wait_rest_topic(self, name: str, partitions: int) -> dict[str, Any]:
        """The topic over REST once the first controller has it with ``partitions``
        partitions (a write through the Kafka port commits on the leader first)."""
        seen: list[dict[str, Any] | None] = [None]

        def there() -> bool:
            seen[0] = self.rest_topic(name)
            return seen[0] is not None and seen[0]["partitions_count"] == partitions

        try:
            wait_until(there, f"{name} over REST with {partitions} partitions", WAIT_S, 0.1)
        except AssertionError as late:
            raise AssertionError(f"{late}; REST shows {seen[0]}") from None
        assert seen[0] is not None
        return seen[0]

    def wait_rest_config(self, topic: str, name: str, value: str) -> None:
        seen: list[str] = []

        def there() -> bool:
            seen.append(self.rest_config(topic, name))
            return seen[-1] == value

        try:
            wait_until(there, f"{topic}'s {name} = {value} over REST", WAIT_S, 0.1)
        except AssertionError as late:
            raise AssertionError(f"{late}; REST shows {seen[-1:]}") from None

    def rest_partitions(self, name: str) -> list[dict[str, Any]]:
        answer = self.rest("GET", f"/topics/{name}/partitions")
        assert answer.status_code == 200, answer.text
        partitions: list[dict[str, Any]] = answer.json()["data"]
        return partitions

    def rest_config(self, topic: str, name: str) -> str:
        answer = self.rest("GET", f"/topics/{topic}/configs/{name}")
        assert answer.status_code == 200, answer.text
        return str(answer.json()["value"])

    def rest_acls(self, principal: str) -> set[Acl]:
        answer = self.rest("GET", f"/acls?principal={quote(principal)}")
        assert answer.status_code == 200, answer.text
        return {Acl(a["resource_type"], a["resource_name"], a["pattern_type"], a["principal"],
                    a["host"], a["operation"], a["permission"]) for a in answer.json()["data"]}

    def on_every_controller(self, check: Callable[[str], bool], what: str) -> None:
        """Waits until ``check(url)`` holds on every controller."""
        wait_until(lambda: all(check(url) for url in self.cluster.urls), what, WAIT_S, 0.1)

    # -- kcat, the brokers' view

    def kcat(self, login: Login | None = None) -> KcatAdmin:
        return KcatAdmin(login or self.login())

    def wait_kcat_partitions(self, topic: str, count: int | None) -> None:
        """Waits until kcat -L shows ``topic`` with ``count`` partitions (None: not at all)."""
        kcat = self.kcat()
        seen: dict[str, int] = {}

        def shown() -> bool:
            seen.clear()
            seen.update(kcat.partition_counts())
            return seen.get(topic) == count

        try:
            wait_until(shown, f"kcat -L shows {topic} with {count} partitions", WAIT_S, 0.2)
        except AssertionError as late:
            raise AssertionError(f"{late}; kcat shows {seen.get(topic)}") from None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-admin")) as running:
        yield running


@pytest.fixture(scope="module")
def kit(cluster: LocalCluster) -> Iterator[Kit]:
    with httpx.Client(timeout=10, headers=cluster.headers) as http:
        answer = http.get(f"{cluster.urls[0]}/v3/clusters")
        assert answer.status_code == 200, answer.text
        (listed,) = answer.json()["data"]
        yield Kit(cluster, http, listed["cluster_id"])


@pytest.fixture
def admin(kit: Kit, request: pytest.FixtureRequest) -> Iterator[AdminAdapter]:
    """The test's client (its ``client`` parameter) as the admin, on the brokers."""
    with open_admin(request.getfixturevalue("client"), kit.login()) as adapter:
        yield adapter


def refusal(call: Callable[[], object]) -> Refused:
    """The refusal ``call`` must end in."""
    with pytest.raises(Refused) as refused:
        call()
    return refused.value


def assert_refused(call: Callable[[], object], error: Errors) -> Refused:
    refused = refusal(call)
    assert refused.code == error.code, f"expected {error.name} ({error.code}), got {refused}"
    return refused


# ------------------------------------------------------------------ 1. brokers and topics


@pytest.mark.parametrize("client", CLIENTS)
def test_every_client_lists_the_three_brokers_at_their_kafka_ports(
        kit: Kit, admin: AdminAdapter, client: str) -> None:
    expected = {b: ("127.0.0.1", node.kafka_port)
                for b, node in kit.cluster.broker_nodes.items()}
    assert set(expected) == BROKERS
    assert admin.list_brokers() == expected


@pytest.mark.parametrize("client", clients_with("describe_cluster"))
def test_describe_cluster_names_the_cluster_id_of_the_rest_api(
        kit: Kit, admin: AdminAdapter, client: str) -> None:
    view = admin.describe_cluster()
    assert view.cluster_id == kit.cluster_id
    assert set(view.brokers) == BROKERS


def test_kcat_lists_brokers_and_topics_as_the_cluster_prints_it(kit: Kit) -> None:
    kit.rest_create_topic("kcat-printed", partitions=2)
    kit.wait_kcat_partitions("kcat-printed", 2)
    done = subprocess.run(["kcat", "-F", str(kit.cluster.kafka_client_properties_path), "-b",
                           kit.cluster.kafka_bootstrap_servers, "-L", "-m", "10"],
                          capture_output=True, text=True, timeout=20, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert " 3 brokers:" in done.stdout, done.stdout
    for broker_id, node in kit.cluster.broker_nodes.items():
        assert f"broker {broker_id} at 127.0.0.1:{node.kafka_port}" in done.stdout
    assert ' topic "kcat-printed" with 2 partitions:' in done.stdout, done.stdout
    for partition in kit.rest_partitions("kcat-printed"):
        replicas = ",".join(str(b) for b in partition["replica_ids"])
        assert (f"partition {partition['partition_id']}, leader {partition['leader_id']}, "
                f"replicas: {replicas}") in done.stdout, done.stdout


# ------------------------------------------------------------------ 2. create topics


@pytest.mark.parametrize("client", clients_with("create_topic"))
def test_create_topics_with_rf_3_and_configs(kit: Kit, admin: AdminAdapter,
                                             client: str) -> None:
    name = f"created-{client}"
    admin.create_topic(name, 2, 3, configs={RETENTION: "123456"})
    topic = kit.wait_rest_topic(name, 2)
    assert topic["replication_factor"] == 3, topic
    for partition in kit.rest_partitions(name):
        assert sorted(partition["replica_ids"]) == sorted(BROKERS), partition
    assert kit.rest_config(name, RETENTION) == "123456"
    kit.wait_kcat_partitions(name, 2)
    assert_refused(lambda: admin.create_topic(name, 2, 3), Errors.TOPIC_ALREADY_EXISTS)


@pytest.mark.parametrize("client", clients_with("create_topic"))
def test_create_topics_validate_only_creates_nothing(kit: Kit, admin: AdminAdapter,
                                                     client: str) -> None:
    name = f"validated-{client}"
    admin.create_topic(name, 2, 3, configs={RETENTION: "123456"}, validate_only=True)
    # validating still refuses what creating would
    assert_refused(lambda: admin.create_topic(name, 2, 5, validate_only=True),
                   Errors.INVALID_REPLICATION_FACTOR)
    # a later write, committed once every controller has it, orders the reads after both
    kit.rest_create_topic(f"after-{name}")
    kit.on_every_controller(lambda url: kit.rest_topic(f"after-{name}", url) is not None,
                            f"after-{name} on every controller")
    for url in kit.cluster.urls:
        assert kit.rest_topic(name, url) is None, f"{name} exists on {url}"
    kit.wait_kcat_partitions(f"after-{name}", 1)
    assert name not in admin.list_topics()


# ------------------------------------------------------------------ 3. create partitions


@pytest.mark.parametrize("client", clients_with("create_partitions"))
def test_create_partitions_validate_only_then_real_then_refused(
        kit: Kit, admin: AdminAdapter, client: str) -> None:
    name = f"grown-{client}"
    kit.rest_create_topic(name, partitions=2)
    admin.create_partitions(name, 4, validate_only=True)
    topic = kit.rest_topic(name)
    assert topic is not None and topic["partitions_count"] == 2, topic

    admin.create_partitions(name, 4)
    kit.wait_rest_topic(name, 4)
    kit.wait_kcat_partitions(name, 4)

    assert_refused(lambda: admin.create_partitions(name, 3), Errors.INVALID_PARTITIONS)
    assert_refused(lambda: admin.create_partitions(name, 4), Errors.INVALID_PARTITIONS)
    assert_refused(lambda: admin.create_partitions(name, 5, assignments=[[0, 0, 1]]),
                   Errors.INVALID_REPLICA_ASSIGNMENT)
    assert_refused(lambda: admin.create_partitions(name, 5, assignments=[[0, 1]]),
                   Errors.INVALID_REPLICA_ASSIGNMENT)
    topic = kit.rest_topic(name)
    assert topic is not None and topic["partitions_count"] == 4, topic


@pytest.mark.parametrize("client", clients_with("create_topic"))
def test_create_topics_with_a_bad_replication_or_assignment_is_refused(
        kit: Kit, admin: AdminAdapter, client: str) -> None:
    name = f"refused-{client}"
    assert_refused(lambda: admin.create_topic(name, 1, 5), Errors.INVALID_REPLICATION_FACTOR)
    assert_refused(lambda: admin.create_topic(name, assignments={0: [1, 1, 2]}),
                   Errors.INVALID_REPLICA_ASSIGNMENT)
    assert_refused(lambda: admin.create_topic(name, 0, 3), Errors.INVALID_PARTITIONS)
    assert kit.rest_topic(name) is None


# ------------------------------------------------------------------ 4. configs


@pytest.mark.parametrize("client", clients_with("alter_configs"))
def test_describe_and_alter_configs(kit: Kit, admin: AdminAdapter, client: str) -> None:
    name = f"configured-{client}"
    kit.rest_create_topic(name, configs={RETENTION: "123456"})
    configs = admin.describe_configs(name)
    assert configs[RETENTION] == "123456"
    assert configs["cleanup.policy"] == "delete"

    admin.alter_configs(name, {RETENTION: "222222"})
    assert admin.describe_configs(name)[RETENTION] == "222222"
    kit.wait_rest_config(name, RETENTION, "222222")
    assert_refused(lambda: admin.alter_configs(name, {RETENTION: "soon"}),
                   Errors.INVALID_CONFIG)
    assert_refused(lambda: admin.alter_configs(name, {"cleanup.policy": "compact"}),
                   Errors.INVALID_CONFIG)
    assert kit.rest_config(name, RETENTION) == "222222"

    if "incremental_alter_configs" in admin.operations:
        admin.incremental_alter_configs(name, {RETENTION: "333333"})
        assert admin.describe_configs(name)[RETENTION] == "333333"
        kit.wait_rest_config(name, RETENTION, "333333")
        assert_refused(lambda: admin.incremental_alter_configs(name, {RETENTION: "soon"}),
                       Errors.INVALID_CONFIG)
        assert kit.rest_config(name, RETENTION) == "333333"


# ------------------------------------------------------------------ 5. ACLs


@pytest.mark.parametrize("client", clients_with("create_acls", "describe_acls", "delete_acls"))
def test_create_describe_and_delete_acls(kit: Kit, admin: AdminAdapter, client: str) -> None:
    principal = f"User:acl-{client}"
    acls = {Acl("TOPIC", f"acl-topic-{client}", "LITERAL", principal, "*", "READ", "ALLOW"),
            Acl("TOPIC", "acl-prefix-", "PREFIXED", principal, "*", "WRITE", "ALLOW"),
            Acl("GROUP", "acl-group", "LITERAL", principal, "*", "READ", "DENY")}
    admin.create_acls(sorted(acls, key=str))
    assert admin.describe_acls(AclFilter(principal=principal)) == acls
    assert admin.describe_acls(AclFilter("TOPIC", principal=principal, operation="READ")) == {
        a for a in acls if a.resource_type == "TOPIC" and a.operation == "READ"}
    assert kit.rest_acls(principal) == acls

    topics = {a for a in acls if a.resource_type == "TOPIC"}
    assert admin.delete_acls(AclFilter("TOPIC", principal=principal)) == topics
    assert admin.describe_acls(AclFilter(principal=principal)) == acls - topics
    assert kit.rest_acls(principal) == acls - topics
    assert admin.delete_acls(AclFilter(principal=principal)) == acls - topics
    assert kit.rest_acls(principal) == set()


# ------------------------------------------------------------------ 6. delete topics


@pytest.mark.parametrize("client", clients_with("delete_topic"))
def test_delete_topics(kit: Kit, admin: AdminAdapter, client: str) -> None:
    name = f"doomed-{client}"
    kit.rest_create_topic(name, partitions=2)
    kit.wait_kcat_partitions(name, 2)
    admin.delete_topic(name)
    wait_until(lambda: kit.rest_topic(name) is None, f"{name} gone over REST", WAIT_S, 0.1)
    kit.wait_kcat_partitions(name, None)
    wait_until(lambda: name not in admin.list_topics(), f"{client} no longer lists {name}",
               WAIT_S, 0.2)
    assert_refused(lambda: admin.delete_topic(name), Errors.UNKNOWN_TOPIC_OR_PARTITION)


# ------------------------------------------------------------------ 7, 8. authentication


@pytest.mark.parametrize("client", CLIENTS)
def test_a_wrong_password_is_sasl_authentication_failed(kit: Kit, client: str) -> None:
    wrong = kit.login("admin", "crt_" + "x" * 43)
    with open_admin(client, wrong, connect=False) as adapter:
        refused = adapter.authentication_failure()
    assert refused.code == Errors.SASL_AUTHENTICATION_FAILED.code, refused
    assert "invalid credentials" in refused.message, refused  # the server's reason, relayed


@pytest.fixture(scope="module")
def nobody(kit: Kit) -> Login:
    """A principal with a token and no ACL at all; a topic exists that it may not see."""
    kit.rest_create_topic("hidden-from-nobody")
    kit.wait_kcat_partitions("hidden-from-nobody", 1)
    kit.add_principal("nobody")
    return kit.login("nobody")


@pytest.mark.parametrize("client", CLIENTS)
def test_a_principal_without_acls_sees_no_topics(kit: Kit, nobody: Login, client: str) -> None:
    with open_admin(client, nobody) as adapter:
        assert adapter.list_topics() == set()
        assert set(adapter.list_brokers()) == BROKERS  # any authenticated principal
    answer = kit.rest("GET", "/topics", token=nobody.password)
    assert answer.status_code == 200 and answer.json()["data"] == [], answer.text


# ------------------------------------------------------------------ 9. REST <-> Kafka


@pytest.mark.parametrize("client", CLIENTS)
def test_a_topic_made_over_rest_is_seen_by_every_client(kit: Kit, admin: AdminAdapter,
                                                        client: str) -> None:
    name = f"rest-made-{client}"
    kit.rest_create_topic(name, partitions=3)
    wait_until(lambda: name in admin.list_topics(), f"{client} lists {name}", WAIT_S, 0.2)
    kit.wait_kcat_partitions(name, 3)


# ------------------------------------------------------------------ 10. one principal, two ports


@dataclass(frozen=True)
class Carol:
    """``User:carol``: DESCRIBE on one topic, DESCRIBE_CONFIGS on another, nothing else."""

    login: Login
    described: str
    configs_readable: str


@pytest.fixture(scope="module")
def carol(kit: Kit) -> Carol:
    described, readable = "carol-described", "carol-configs"
    kit.rest_create_topic(described, configs={RETENTION: "111111"})
    kit.rest_create_topic(readable, configs={RETENTION: "222222"})
    for topic, operation in ((described, "DESCRIBE"), (readable, "DESCRIBE_CONFIGS")):
        answer = kit.rest("POST", "/acls", json={
            "resource_type": "TOPIC", "resource_name": topic, "pattern_type": "LITERAL",
            "principal": "User:carol", "host": "*", "operation": operation,
            "permission": "ALLOW"})
        assert answer.status_code == 201, answer.text
    kit.add_principal("carol")
    kit.wait_kcat_partitions(readable, 1)
    return Carol(kit.login("carol"), described, readable)


def rest_outcome(answer: httpx.Response) -> str:
    """``NONE`` for a 2xx, else the error name of the body."""
    if answer.is_success:
        return "NONE"
    return str(answer.json()["error_name"])


CLIENT_FORMS = {
    # librdkafka reads DescribeAcls' top-level error code and drops it: a refusal reaches the
    # caller as a successful, empty listing (rd_kafka_DescribeAclsResponse_parse, still so in
    # 2.16). The test checks the listing is empty and asks the server itself with RawKafka.
    ("confluent-kafka", "describe_acls"): "NONE",
    # kafka-python 3.0 reads DescribeConfigs' results without their error codes: a refused
    # resource comes back with no configurations (_describe_configs_process_responses).
    ("kafka-python", "describe_configs"): "NONE",
}
"""A client's own answer where it cannot report what the server said."""


def kafka_outcome(call: Callable[[], object]) -> str:
    """``NONE`` when ``call`` succeeds, else Kafka's name of the error code it got."""
    try:
        call()
    except Refused as refused:
        return Errors.for_code(refused.code).name if refused.code >= 0 else refused.name
    return "NONE"


@pytest.mark.parametrize("client", clients_with("create_topic"))
def test_one_principal_gets_the_same_answer_over_rest_and_kafka(
        kit: Kit, carol: Carol, client: str) -> None:
    token, described, readable = carol.login.password, carol.described, carol.configs_readable
    new = f"carol-new-{client}"
    acl = Acl("TOPIC", described, "LITERAL", "User:carol", "*", "ALTER", "ALLOW")
    rest_acl = {"resource_type": "TOPIC", "resource_name": described,
                "pattern_type": "LITERAL", "principal": "User:carol", "host": "*",
                "operation": "ALTER", "permission": "ALLOW"}
    tried: list[tuple[str, str, str, str]] = []  # operation, expected, REST, Kafka
    described_acls: list[set[Acl]] = []  # what a client that does not refuse lists
    leaked: list[dict[str, str]] = []  # the configurations such a client shows her
    with open_admin(client, carol.login) as adapter:
        def compare(operation: str, expected: str, rest: Callable[[], httpx.Response],
                    kafka: Callable[[], object]) -> None:
            needs = operation.split(" ")[0]
            if needs in adapter.operations:
                got = kafka_outcome(kafka)
                if got == CLIENT_FORMS.get((client, needs)):
                    got = expected
                tried.append((operation, expected, rest_outcome(rest()), got))

        compare("create_topic", "TOPIC_AUTHORIZATION_FAILED",
                lambda: kit.rest("POST", "/topics", token=token, json={
                    "topic_name": new, "partitions_count": 1, "replication_factor": 3}),
                lambda: adapter.create_topic(new, 1, 3))
        compare("create_partitions", "TOPIC_AUTHORIZATION_FAILED",
                lambda: kit.rest("PATCH", f"/topics/{described}", token=token,
                                 json={"partitions_count": 3}),
                lambda: adapter.create_partitions(described, 3))
        compare("describe_configs (DESCRIBE only)", "TOPIC_AUTHORIZATION_FAILED",
                lambda: kit.rest("GET", f"/topics/{described}/configs", token=token),
                lambda: leaked.append(adapter.describe_configs(described)))
        compare("describe_configs (DESCRIBE_CONFIGS)", "NONE",
                lambda: kit.rest("GET", f"/topics/{readable}/configs", token=token),
                lambda: adapter.describe_configs(readable))
        compare("alter_configs", "TOPIC_AUTHORIZATION_FAILED",
                lambda: kit.rest("PUT", f"/topics/{readable}/configs/{RETENTION}",
                                 token=token, json={"value": "1000"}),
                lambda: adapter.alter_configs(readable, {RETENTION: "1000"}))
        compare("incremental_alter_configs", "TOPIC_AUTHORIZATION_FAILED",
                lambda: kit.rest("POST", f"/topics/{readable}/configs:alter", token=token,
                                 json={"data": [{"name": RETENTION, "value": "1000"}]}),
                lambda: adapter.incremental_alter_configs(readable, {RETENTION: "1000"}))
        compare("delete_topic", "TOPIC_AUTHORIZATION_FAILED",
                lambda: kit.rest("DELETE", f"/topics/{described}", token=token),
                lambda: adapter.delete_topic(described))
        compare("create_acls", "CLUSTER_AUTHORIZATION_FAILED",
                lambda: kit.rest("POST", "/acls", token=token, json=rest_acl),
                lambda: adapter.create_acls([acl]))
        compare("describe_acls", "CLUSTER_AUTHORIZATION_FAILED",
                lambda: kit.rest("GET", "/acls?principal=User:carol", token=token),
                lambda: described_acls.append(
                    adapter.describe_acls(AclFilter(principal="User:carol"))))
        compare("delete_acls", "CLUSTER_AUTHORIZATION_FAILED",
                lambda: kit.rest("DELETE", "/acls?resource_type=TOPIC&principal=User:carol",
                                 token=token),
                lambda: adapter.delete_acls(AclFilter("TOPIC", principal="User:carol")))
        compare("describe_cluster", "NONE",
                lambda: kit.rest("GET", "", token=token), adapter.describe_cluster)

        # what each side shows her
        listed = kit.rest("GET", "/topics", token=token).json()["data"]
        shown_rest = {t["topic_name"] for t in listed}
        shown_kafka = adapter.list_topics()
        readable_rest = {c["name"]: c["value"] for c in kit.rest(
            "GET", f"/topics/{readable}/configs", token=token).json()["data"]}
        readable_kafka = adapter.describe_configs(readable)

    different = [t for t in tried if not t[1] == t[2] == t[3]]
    assert not different, "operation, expected, REST, Kafka: " + "; ".join(
        map(str, different))
    assert described_acls in ([], [set()]), described_acls  # never her two ACLs
    assert leaked in ([], [{}]), leaked  # never the topic's configurations
    assert shown_rest == shown_kafka == {described}
    assert readable_rest[RETENTION] == readable_kafka[RETENTION] == "222222"
    assert kit.rest_topic(new) is None
    assert kit.rest_config(readable, RETENTION) == "222222"
    topic = kit.rest_topic(described)
    assert topic is not None and topic["partitions_count"] == 1


def test_what_the_clients_drop_is_refused_on_the_wire(kit: Kit, carol: Carol) -> None:
    """What the server answers carol, whatever a client makes of it (librdkafka drops
    DescribeAcls' error code, kafka-python DescribeConfigs'), from a broker and every controller:
    CLUSTER_AUTHORIZATION_FAILED for the ACL requests, TOPIC_AUTHORIZATION_FAILED for the
    configurations of a topic she may only describe."""
    refused = Errors.CLUSTER_AUTHORIZATION_FAILED.code
    any_filter = {"resource_type_filter": 1, "resource_name_filter": None,
                  "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                  "operation": 1, "permission_type": 1}
    # Every controller: the leader validates the operation itself (an in-process route that
    # raises the refusal), a follower forwards it; each must answer it, never close.
    ports = [kit.cluster.broker_nodes[0].kafka_port,
             *(node.kafka_port for node in kit.cluster.nodes.values())]
    for port in ports:
        with RawKafka("127.0.0.1", port, "carol", carol.login.password) as raw:
            described = raw.call("DescribeAcls", 3, any_filter)
            created = raw.call("CreateAcls", 3, {"creations": [{
                "resource_type": 2, "resource_name": carol.described,
                "resource_pattern_type": 3, "principal": "User:carol", "host": "*",
                "operation": 7, "permission_type": 3}]})
            deleted = raw.call("DeleteAcls", 3, {"filters": [any_filter]})
            configs = raw.call("DescribeConfigs", 4, {"resources": [
                {"resource_type": 2, "resource_name": name, "configuration_keys": None}
                for name in (carol.described, carol.configs_readable)]})
        (hidden, shown) = configs["results"]
        assert (hidden["error_code"], hidden["configs"]) == (
            Errors.TOPIC_AUTHORIZATION_FAILED.code, []), hidden
        assert shown["error_code"] == 0 and RETENTION in {
            c["name"] for c in shown["configs"]}, shown
        assert (described["error_code"], described["resources"]) == (refused, []), described
        assert [r["error_code"] for r in created["results"]] == [refused], created
        assert [(r["error_code"], r["matching_acls"]) for r in deleted["filter_results"]] == [
            (refused, [])], deleted
    assert len(kit.rest_acls("User:carol")) == 2


# ------------------------------------------------------------------ 11. controllers


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_an_admin_client_bootstrapped_from_a_controller_creates_a_topic(
        kit: Kit, client: str) -> None:
    login = kit.login(bootstrap=kit.cluster.kafka_bootstrap_controllers)
    name = f"via-controller-{client}"
    with open_admin(client, login) as adapter:
        adapter.create_topic(name, 2, 3)
        assert adapter.describe_cluster().cluster_id == kit.cluster_id
    kit.wait_rest_topic(name, 2)
    kit.wait_kcat_partitions(name, 2)


def test_describe_cluster_v1_on_a_controller_lists_the_controllers(kit: Kit) -> None:
    leader = kit.cluster.leader_id()
    controllers = {n: node.kafka_port for n, node in kit.cluster.nodes.items()}
    assert set(controllers) == CONTROLLERS
    for node_id, port in controllers.items():
        with RawKafka("127.0.0.1", port, "admin", kit.cluster.admin_token) as raw:
            answer = raw.call("DescribeCluster", 1, {"endpoint_type": 2,
                                                     "include_cluster_authorized_operations":
                                                     False})
        assert answer["error_code"] == 0, (node_id, answer)
        assert answer["endpoint_type"] == 2
        assert answer["cluster_id"] == kit.cluster_id
        assert {b["broker_id"]: (b["host"], b["port"]) for b in answer["brokers"]} == {
            n: ("127.0.0.1", p) for n, p in controllers.items()}, (node_id, answer)
        assert answer["controller_id"] == leader, (node_id, leader, answer)
    broker_port = kit.cluster.broker_nodes[0].kafka_port
    with RawKafka("127.0.0.1", broker_port, "admin", kit.cluster.admin_token) as raw:
        brokers = raw.call("DescribeCluster", 1, {"endpoint_type": 1})
        asked_controllers = raw.call("DescribeCluster", 1, {"endpoint_type": 2})
    assert brokers["error_code"] == 0 and {b["broker_id"] for b in brokers["brokers"]} == BROKERS
    assert asked_controllers["error_code"] in (Errors.MISMATCHED_ENDPOINT_TYPE.code,
                                               Errors.UNSUPPORTED_ENDPOINT_TYPE.code)
    assert asked_controllers["brokers"] == []


def test_create_topics_sent_to_the_active_controller_runs_there(kit: Kit) -> None:
    leader = kit.cluster.leader_id()
    assert leader is not None
    port = kit.cluster.nodes[leader].kafka_port
    with RawKafka("127.0.0.1", port, "admin", kit.cluster.admin_token) as raw:
        answer = raw.call("CreateTopics", 7, {"topics": [{
            "name": "raw-on-controller", "num_partitions": 2, "replication_factor": 3,
            "assignments": [], "configs": [{"name": RETENTION, "value": "654321"}]}],
            "timeout_ms": 10_000, "validate_only": False})
    (result,) = answer["topics"]
    assert result["error_code"] == 0, result
    assert (result["num_partitions"], result["replication_factor"]) == (2, 3)
    topic = kit.wait_rest_topic("raw-on-controller", 2)
    assert topic["topic_id"] == kafka_uuid_str(result["topic_id"]), (topic, result)
    assert kit.rest_config("raw-on-controller", RETENTION) == "654321"
    kit.wait_kcat_partitions("raw-on-controller", 2)


@pytest.mark.parametrize("target", ["brokers", "controllers"])
def test_kafka_python_describes_the_metadata_quorum(kit: Kit, target: str) -> None:
    """kafka-python's ``describe_metadata_quorum()`` (DescribeQuorum) through a broker, which
    asks the controllers, and through a controller: the leader, its epoch and three voters,
    as the REST quorum answer has them."""
    from kafka.admin import KafkaAdminClient

    cluster = kit.cluster
    servers = (cluster.kafka_bootstrap_servers if target == "brokers"
               else cluster.kafka_bootstrap_controllers)
    client = KafkaAdminClient(bootstrap_servers=servers, security_protocol="SASL_PLAINTEXT",
                              sasl_mechanism="PLAIN", sasl_plain_username="admin",
                              sasl_plain_password=cluster.admin_token, request_timeout_ms=20_000)
    try:
        answer = client.describe_metadata_quorum()
    finally:
        client.close()
    (topic,) = answer["topics"]
    (partition,) = topic["partitions"]
    rest = kit.http.get(f"{cluster.urls[0]}/controller/v1/quorum").json()
    assert topic["topic_name"] == "__cluster_metadata"
    assert partition["leader_id"] == rest["leader_id"]
    assert partition["leader_epoch"] == rest["epoch"]
    assert sorted(v["replica_id"] for v in partition["current_voters"]) == [1, 2, 3]
    assert all(v["log_end_offset"] > 0 for v in partition["current_voters"])
