"""The stock Kafka admin clients behind one small interface, for the e2e tests.

One adapter per client, each exposing the same operations where the client has the call:

    with open_admin("confluent-kafka", Login(servers, "alice", token)) as admin:
        admin.create_topic("orders", 3, 3, configs={"retention.ms": "1000"})
        admin.list_topics()  -> {"orders", ...}

=================  =======================================================================
kcat               ``kcat -L -J`` (Debian's): brokers and topics only
kafka-python       ``kafka.admin.KafkaAdminClient`` (3.0), every operation (DescribeConfigs
                   drops a resource's error code: a refused topic has no configurations)
confluent-kafka    ``confluent_kafka.admin.AdminClient`` (librdkafka), every operation
                   (DescribeAcls drops the answer's error code: a refusal lists nothing)
aiokafka           ``aiokafka.admin.AIOKafkaAdminClient``, on its own event loop: no ACLs,
                   no IncrementalAlterConfigs
kafkajs            ``tests/kafka_clients/kafkajs/admin.js`` through :func:`kafkajs` (a node
                   process per call): no IncrementalAlterConfigs
=================  =======================================================================

A Kafka error comes back as :class:`Refused`: the Kafka error name read from the client's own
exception (kafka-python's and aiokafka's error classes carry it, librdkafka's KafkaError its
name, kafkajs its ``type``), with that exception kept in ``raised``. A client that reports an
error per item without raising (aiokafka's CreateTopics, kafka-python's ACL calls) is turned
into the client's own exception for the code first. A failed SASL exchange is reported by
:meth:`AdminAdapter.authentication_failure`, in each client's own form.

Not thread-safe: one adapter per test. Every call is bounded in time (``TIMEOUT_S``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import subprocess
import warnings
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from tests.support.kafkajs import kafkajs

__all__ = [
    "ADMIN_CLIENTS",
    "CLIENTS",
    "Acl",
    "AclFilter",
    "AdminAdapter",
    "ClusterView",
    "Login",
    "Refused",
    "clients_with",
    "open_admin",
]

TIMEOUT_S = 10.0
"""Bound on one admin call of any client."""
AUTH_TIMEOUT_S = 3.0
"""How long a client is given to give up on a refused SASL exchange (kafka-python and
librdkafka retry their bootstrap until a deadline of their own)."""

SASL_AUTHENTICATION_FAILED = 58
"""Kafka's code, given by the adapters to the clients' own forms of it that carry no code
(librdkafka's ``_AUTHENTICATION``, kafkajs's KafkaJSSASLAuthenticationError, kcat's log)."""

T = TypeVar("T")


def _module(name: str) -> Any:
    """A client's module, untyped (kafka-python and aiokafka ship no types; confluent-kafka's
    stubs do not export its admin names): imported when first used, so that importing this
    module needs none of the clients."""
    return importlib.import_module(name)


@dataclass(frozen=True)
class Login:
    """Where and as whom: ``bootstrap`` is ``host:port,...``; SASL/PLAIN over plaintext."""

    bootstrap: str
    username: str
    password: str

    @property
    def servers(self) -> list[str]:
        return self.bootstrap.split(",")


@dataclass(frozen=True)
class ClusterView:
    """What a client says of the cluster: its id (None where the client does not say) and
    brokers (id -> (host, port))."""

    cluster_id: str | None
    brokers: dict[int, tuple[str, int]]


@dataclass(frozen=True)
class Acl:
    """One ACL binding, with Kafka's enum names."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


@dataclass(frozen=True)
class AclFilter:
    """An ACL filter: None matches any name, principal or host; ``ANY`` any enum value."""

    resource_type: str = "ANY"
    resource_name: str | None = None
    pattern_type: str = "ANY"
    principal: str | None = None
    host: str | None = None
    operation: str = "ANY"
    permission: str = "ANY"


class Refused(Exception):
    """The client reported Kafka error ``code``, which it calls ``name`` (kafka-python says
    INVALID_REPLICATION_ASSIGNMENT for Kafka's INVALID_REPLICA_ASSIGNMENT, 39); ``raised``
    is the client's own exception (or kafkajs's error object, as JSON)."""

    def __init__(self, client: str, code: int, name: str, raised: object,
                 message: str = "") -> None:
        super().__init__(f"{client}: {name} ({code}): {message or raised}")
        self.client = client
        self.code = code
        self.name = name
        self.raised = raised
        self.message = message


class AdminAdapter:
    """The operations of one client; each raises :class:`Refused` for a Kafka error and
    NotImplementedError where the client has no such call (see ``operations``)."""

    name: ClassVar[str]
    operations: ClassVar[frozenset[str]]

    def __init__(self, login: Login) -> None:
        self.login = login

    def close(self) -> None:
        """Releases the client's connections."""

    def list_topics(self) -> set[str]:
        raise NotImplementedError

    def list_brokers(self) -> dict[int, tuple[str, int]]:
        return self.describe_cluster().brokers

    def describe_cluster(self) -> ClusterView:
        raise NotImplementedError

    def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1, *,
                     configs: dict[str, str] | None = None,
                     assignments: dict[int, list[int]] | None = None,
                     validate_only: bool = False) -> None:
        raise NotImplementedError

    def create_partitions(self, topic: str, count: int, *,
                          assignments: list[list[int]] | None = None,
                          validate_only: bool = False) -> None:
        raise NotImplementedError

    def delete_topic(self, name: str) -> None:
        raise NotImplementedError

    def describe_configs(self, topic: str) -> dict[str, str]:
        """The topic's configurations as DescribeConfigs answers them (name -> value)."""
        raise NotImplementedError

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        """AlterConfigs (the legacy one: the keys given become the topic's only ones)."""
        raise NotImplementedError

    def incremental_alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        """IncrementalAlterConfigs, SET of each key."""
        raise NotImplementedError

    def create_acls(self, acls: list[Acl]) -> None:
        raise NotImplementedError

    def describe_acls(self, acl_filter: AclFilter) -> set[Acl]:
        raise NotImplementedError

    def delete_acls(self, acl_filter: AclFilter) -> set[Acl]:
        """Deletes the ACLs that match; the ones deleted."""
        raise NotImplementedError

    def authentication_failure(self) -> Refused:
        """Connects with ``login`` (a wrong password) and returns how the client reports the
        refused SASL exchange; AssertionError if it did not fail."""
        raise NotImplementedError


# ------------------------------------------------------------------ kcat


class KcatAdmin(AdminAdapter):
    """``kcat -L -J``: Metadata for every topic, as a process per call."""

    name = "kcat"
    operations = frozenset({"list_topics", "list_brokers", "authentication_failure"})

    def _kcat(self, *extra: str) -> subprocess.CompletedProcess[str]:
        settings = ["-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=PLAIN",
                    "-X", f"sasl.username={self.login.username}",
                    "-X", f"sasl.password={self.login.password}"]
        return subprocess.run(["kcat", *settings, "-b", self.login.bootstrap, "-L", "-J",
                               "-m", str(int(AUTH_TIMEOUT_S)), *extra],
                              capture_output=True, text=True, timeout=TIMEOUT_S + 5,
                              stdin=subprocess.DEVNULL, check=False)

    def metadata(self) -> dict[str, Any]:
        done = self._kcat()
        if done.returncode != 0:
            raise AssertionError(f"kcat -L exited {done.returncode}: {done.stderr[-2000:]}")
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    def partition_counts(self) -> dict[str, int]:
        """Each topic kcat lists (without an error) -> its number of partitions."""
        return {t["topic"]: len(t["partitions"]) for t in self.metadata()["topics"]
                if not t.get("error")}

    def list_topics(self) -> set[str]:
        return set(self.partition_counts())

    def list_brokers(self) -> dict[int, tuple[str, int]]:
        brokers = {}
        for broker in self.metadata()["brokers"]:
            host, _, port = str(broker["name"]).rpartition(":")
            brokers[int(broker["id"])] = (host, int(port))
        return brokers

    def authentication_failure(self) -> Refused:
        done = self._kcat()
        assert done.returncode != 0, f"kcat -L succeeded with a wrong password: {done.stdout}"
        # librdkafka's log line for a SaslAuthenticate answered SASL_AUTHENTICATION_FAILED
        assert "SASL authentication error" in done.stderr, done.stderr[-2000:]
        return Refused(self.name, SASL_AUTHENTICATION_FAILED, "SASL authentication error",
                       done.stderr, done.stderr)


# ------------------------------------------------------------------ kafka-python


class _ErrorRecords(logging.Handler):
    """The exceptions given as arguments of the log records of one logger (clients that log
    a failed connection and retry instead of raising)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        self.errors.extend(arg for arg in args if isinstance(arg, BaseException))


@contextlib.contextmanager
def _logged_errors(logger_name: str) -> Iterator[_ErrorRecords]:
    logger = logging.getLogger(logger_name)
    handler = _ErrorRecords()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _errno_refused(client: str, error: BaseException) -> Refused:
    """kafka-python's and aiokafka's errors: the class carries the code (``errno``) and the
    name (``message``)."""
    return Refused(client, int(getattr(error, "errno", None) or -1),
                   str(getattr(error, "message", type(error).__name__)), error, str(error))


def _kafka_python_refused(error: BaseException) -> Refused:
    return _errno_refused("kafka-python", error)


class KafkaPythonAdmin(AdminAdapter):
    """kafka-python's KafkaAdminClient: a client per adapter, opened at once."""

    name = "kafka-python"
    operations = frozenset({
        "list_topics", "list_brokers", "describe_cluster", "create_topic", "create_partitions",
        "delete_topic", "describe_configs", "alter_configs", "incremental_alter_configs",
        "create_acls", "describe_acls", "delete_acls", "authentication_failure"})

    def __init__(self, login: Login, *, connect: bool = True) -> None:
        super().__init__(login)
        self._client: Any = self._open(TIMEOUT_S) if connect else None

    def _open(self, timeout: float) -> Any:
        return _module("kafka.admin").KafkaAdminClient(
            bootstrap_servers=self.login.bootstrap, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN", sasl_plain_username=self.login.username,
            sasl_plain_password=self.login.password, request_timeout_ms=int(timeout * 1000),
            bootstrap_timeout_ms=int(timeout * 1000), client_id="chunkraft-e2e")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        kafka_errors = _module("kafka.errors")
        try:
            return getattr(self._client, method)(*args, **kwargs)
        except kafka_errors.KafkaError as error:
            raise _kafka_python_refused(error) from error

    @staticmethod
    def _check(error: Any) -> None:
        kafka_errors = _module("kafka.errors")
        if isinstance(error, type):
            error = error()
        if isinstance(error, kafka_errors.KafkaError) and error.errno:
            raise _kafka_python_refused(error)

    def list_topics(self) -> set[str]:
        return set(self._call("list_topics"))

    def describe_cluster(self) -> ClusterView:
        answer = self._call("describe_cluster")
        return ClusterView(answer["cluster_id"], {
            b["broker_id"]: (b["host"], b["port"]) for b in answer["brokers"]})

    def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1, *,
                     configs: dict[str, str] | None = None,
                     assignments: dict[int, list[int]] | None = None,
                     validate_only: bool = False) -> None:
        spec: dict[str, Any] = {"num_partitions": partitions,
                                "replication_factor": replication_factor,
                                "configs": configs or {}}
        if assignments is not None:
            spec["assignments"] = assignments
        self._call("create_topics", {name: spec}, validate_only=validate_only)

    def create_partitions(self, topic: str, count: int, *,
                          assignments: list[list[int]] | None = None,
                          validate_only: bool = False) -> None:
        spec: Any = count if assignments is None else {"count": count,
                                                        "assignments": assignments}
        self._call("create_partitions", {topic: spec}, validate_only=validate_only)

    def delete_topic(self, name: str) -> None:
        self._call("delete_topics", [name])

    def describe_configs(self, topic: str) -> dict[str, str]:
        admin = _module("kafka.admin")
        answer = self._call("describe_configs",
                            [admin.ConfigResource(admin.ConfigResourceType.TOPIC, topic)],
                            config_filter="all")
        return {k: v["value"] for k, v in answer["topic"][topic].items()}

    def _alter(self, topic: str, configs: dict[str, str], incremental: bool) -> None:
        admin = _module("kafka.admin")
        resource = admin.ConfigResource(admin.ConfigResourceType.TOPIC, topic, configs=configs)
        answer = self._call("alter_configs", [resource],
                            incremental=incremental, raise_on_unknown=False)
        result = answer["topic"][topic]
        if result != "OK":
            # kafka-python gives the error as text ("[Error 40] InvalidConfigurationError:
            # ..."): back to its own class by the code
            kafka_errors = _module("kafka.errors")
            code = int(str(result).split("]")[0].removeprefix("[Error "))
            raise _kafka_python_refused(kafka_errors.for_code(code)(str(result)))

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        self._alter(topic, configs, incremental=False)

    def incremental_alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        self._alter(topic, configs, incremental=True)

    @staticmethod
    def _acl(acl: Acl) -> Any:
        admin = _module("kafka.admin")
        return admin.ACL(acl.principal, acl.host, admin.ACLOperation[acl.operation],
                         admin.ACLPermissionType[acl.permission],
                         admin.ResourcePattern(admin.ResourceType[acl.resource_type],
                                               acl.resource_name,
                                               admin.ACLResourcePatternType[acl.pattern_type]))

    @staticmethod
    def _filter(acl_filter: AclFilter) -> Any:
        admin = _module("kafka.admin")
        pattern = admin.ResourcePatternFilter(
            admin.ResourceType[acl_filter.resource_type], acl_filter.resource_name,
            admin.ACLResourcePatternType[acl_filter.pattern_type])
        return admin.ACLFilter(acl_filter.principal, acl_filter.host,
                               admin.ACLOperation[acl_filter.operation],
                               admin.ACLPermissionType[acl_filter.permission], pattern)

    @staticmethod
    def _binding(acl: Any) -> Acl:
        pattern = acl.resource_pattern
        return Acl(pattern.resource_type.name, pattern.resource_name, pattern.pattern_type.name,
                   acl.principal, acl.host, acl.operation.name, acl.permission_type.name)

    def create_acls(self, acls: list[Acl]) -> None:
        answer = self._call("create_acls", [self._acl(acl) for acl in acls])
        for error in answer["failed"]:  # the error classes (its docstring says pairs)
            self._check(error)

    def describe_acls(self, acl_filter: AclFilter) -> set[Acl]:
        acls, error = self._call("describe_acls", self._filter(acl_filter))
        self._check(error)
        return {self._binding(acl) for acl in acls}

    def delete_acls(self, acl_filter: AclFilter) -> set[Acl]:
        deleted: set[Acl] = set()
        for _filter, matches, error in self._call("delete_acls", [self._filter(acl_filter)]):
            self._check(error)
            for match in matches:
                acl, acl_error = match if isinstance(match, tuple) else (match, None)
                self._check(acl_error)
                deleted.add(self._binding(acl))
        return deleted

    def authentication_failure(self) -> Refused:
        kafka_errors = _module("kafka.errors")
        # kafka-python retries a refused bootstrap until its deadline, then raises
        # KafkaTimeoutError; the SaslAuthenticationFailedError of each attempt is logged.
        with _logged_errors("kafka") as logged:
            try:
                client = self._open(AUTH_TIMEOUT_S)
            except kafka_errors.KafkaTimeoutError as timeout:
                sasl = [e for e in logged.errors
                        if isinstance(e, kafka_errors.SaslAuthenticationFailedError)]
                assert sasl, f"no SASL failure among {logged.errors!r} ({timeout})"
                return _kafka_python_refused(sasl[0])
        client.close()
        raise AssertionError("kafka-python bootstrapped with a wrong password")


# ------------------------------------------------------------------ confluent-kafka


def _confluent_refused(error: Any) -> Refused:
    """A KafkaException (or its KafkaError) as a refusal: librdkafka's error name."""
    from confluent_kafka import KafkaError, KafkaException

    raised = error
    if isinstance(error, KafkaException):
        error = error.args[0]
    assert isinstance(error, KafkaError), error
    return Refused("confluent-kafka", error.code(), error.name(), raised, error.str())


class ConfluentAdmin(AdminAdapter):
    """confluent-kafka's AdminClient; each future waited on for ``TIMEOUT_S`` at most."""

    name = "confluent-kafka"
    operations = KafkaPythonAdmin.operations

    def __init__(self, login: Login) -> None:
        super().__init__(login)
        self.client_errors: list[Any] = []
        self._client = self._open()

    def _open(self) -> Any:
        admin = _module("confluent_kafka.admin")
        return admin.AdminClient({
            "bootstrap.servers": self.login.bootstrap, "security.protocol": "sasl_plaintext",
            "sasl.mechanisms": "PLAIN", "sasl.username": self.login.username,
            "sasl.password": self.login.password, "client.id": "chunkraft-e2e",
            "error_cb": self.client_errors.append, "log_level": 0})

    def _result(self, future: Any) -> Any:
        from confluent_kafka import KafkaException

        try:
            return future.result(timeout=TIMEOUT_S)
        except KafkaException as error:
            raise _confluent_refused(error) from error

    def _one(self, futures: dict[Any, Any]) -> Any:
        (future,) = futures.values()
        return self._result(future)

    def list_topics(self) -> set[str]:
        from confluent_kafka import KafkaException

        try:
            metadata = self._client.list_topics(timeout=TIMEOUT_S)
        except KafkaException as error:
            raise _confluent_refused(error) from error
        return {name for name, topic in metadata.topics.items() if topic.error is None}

    def describe_cluster(self) -> ClusterView:
        answer = self._result(self._client.describe_cluster(request_timeout=TIMEOUT_S))
        return ClusterView(answer.cluster_id,
                           {node.id: (node.host, node.port) for node in answer.nodes})

    def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1, *,
                     configs: dict[str, str] | None = None,
                     assignments: dict[int, list[int]] | None = None,
                     validate_only: bool = False) -> None:
        admin = _module("confluent_kafka.admin")
        if assignments is not None:  # librdkafka wants the count with an assignment
            topic = admin.NewTopic(name, len(assignments), replica_assignment=[
                assignments[p] for p in sorted(assignments)], config=configs or {})
        else:
            topic = admin.NewTopic(name, partitions, replication_factor, config=configs or {})
        self._one(self._client.create_topics([topic], validate_only=validate_only,
                                             operation_timeout=TIMEOUT_S,
                                             request_timeout=TIMEOUT_S))

    def create_partitions(self, topic: str, count: int, *,
                          assignments: list[list[int]] | None = None,
                          validate_only: bool = False) -> None:
        admin = _module("confluent_kafka.admin")
        partitions = (admin.NewPartitions(topic, count) if assignments is None
                      else admin.NewPartitions(topic, count, assignments))
        self._one(self._client.create_partitions(
            [partitions], validate_only=validate_only,
            operation_timeout=TIMEOUT_S, request_timeout=TIMEOUT_S))

    def delete_topic(self, name: str) -> None:
        self._one(self._client.delete_topics([name], operation_timeout=TIMEOUT_S,
                                             request_timeout=TIMEOUT_S))

    def describe_configs(self, topic: str) -> dict[str, str]:
        admin = _module("confluent_kafka.admin")
        entries = self._one(self._client.describe_configs(
            [admin.ConfigResource("TOPIC", topic)], request_timeout=TIMEOUT_S))
        return {name: entry.value for name, entry in entries.items()}

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        admin = _module("confluent_kafka.admin")
        with warnings.catch_warnings():  # deprecated in favour of the incremental call
            warnings.simplefilter("ignore", DeprecationWarning)
            futures = self._client.alter_configs(
                [admin.ConfigResource("TOPIC", topic, set_config=configs)],
                request_timeout=TIMEOUT_S)
        self._one(futures)

    def incremental_alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        admin = _module("confluent_kafka.admin")
        entries = [admin.ConfigEntry(name, value,
                                     incremental_operation=admin.AlterConfigOpType.SET)
                   for name, value in configs.items()]
        self._one(self._client.incremental_alter_configs(
            [admin.ConfigResource("TOPIC", topic, incremental_configs=entries)],
            request_timeout=TIMEOUT_S))

    @staticmethod
    def _binding(acl: Any) -> Acl:
        return Acl(acl.restype.name, acl.name, acl.resource_pattern_type.name, acl.principal,
                   acl.host, acl.operation.name, acl.permission_type.name)

    def create_acls(self, acls: list[Acl]) -> None:
        admin = _module("confluent_kafka.admin")
        bindings = [admin.AclBinding(admin.ResourceType[a.resource_type], a.resource_name,
                                     admin.ResourcePatternType[a.pattern_type], a.principal,
                                     a.host, admin.AclOperation[a.operation],
                                     admin.AclPermissionType[a.permission]) for a in acls]
        for future in self._client.create_acls(bindings, request_timeout=TIMEOUT_S).values():
            self._result(future)

    @staticmethod
    def _filter(acl_filter: AclFilter) -> Any:
        admin = _module("confluent_kafka.admin")
        return admin.AclBindingFilter(admin.ResourceType[acl_filter.resource_type],
                                      acl_filter.resource_name,
                                      admin.ResourcePatternType[acl_filter.pattern_type],
                                      acl_filter.principal, acl_filter.host,
                                      admin.AclOperation[acl_filter.operation],
                                      admin.AclPermissionType[acl_filter.permission])

    def describe_acls(self, acl_filter: AclFilter) -> set[Acl]:
        found = self._result(self._client.describe_acls(self._filter(acl_filter),
                                                        request_timeout=TIMEOUT_S))
        return {self._binding(acl) for acl in found}

    def delete_acls(self, acl_filter: AclFilter) -> set[Acl]:
        deleted = self._one(self._client.delete_acls([self._filter(acl_filter)],
                                                     request_timeout=TIMEOUT_S))
        return {self._binding(acl) for acl in deleted}

    def authentication_failure(self) -> Refused:
        from confluent_kafka import KafkaError, KafkaException

        # librdkafka reports a SaslAuthenticate answered SASL_AUTHENTICATION_FAILED to the
        # error callback as _AUTHENTICATION ("SASL authentication error: <the broker's
        # message>"); the call itself only times out.
        with contextlib.suppress(KafkaException):
            self._client.list_topics(timeout=AUTH_TIMEOUT_S)
            raise AssertionError("confluent-kafka listed topics with a wrong password")
        self._client.poll(1.0)  # serves the error callbacks
        failures = [e for e in self.client_errors if e.code() == KafkaError._AUTHENTICATION]
        assert failures, f"no _AUTHENTICATION among {self.client_errors}"
        assert "SASL authentication error" in failures[0].str(), failures[0].str()
        return Refused(self.name, SASL_AUTHENTICATION_FAILED, failures[0].name(), failures[0],
                       failures[0].str())


# ------------------------------------------------------------------ aiokafka


def _aiokafka_refused(error: BaseException) -> Refused:
    return _errno_refused("aiokafka", error)


class AiokafkaAdmin(AdminAdapter):
    """aiokafka's AIOKafkaAdminClient, driven on an event loop of the adapter's own."""

    name = "aiokafka"
    operations = frozenset({
        "list_topics", "list_brokers", "describe_cluster", "create_topic", "create_partitions",
        "delete_topic", "describe_configs", "alter_configs", "authentication_failure"})

    def __init__(self, login: Login, *, connect: bool = True) -> None:
        super().__init__(login)
        self._loop = asyncio.new_event_loop()
        self._client: Any = None
        if connect:
            try:
                self._client = self._new_client()
                self._run(self._client.start())
            except BaseException:
                self.close()
                raise

    def _new_client(self) -> Any:
        async def make() -> Any:  # aiokafka binds its client to the running loop
            return _module("aiokafka.admin").AIOKafkaAdminClient(
                bootstrap_servers=self.login.bootstrap, security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN", sasl_plain_username=self.login.username,
                sasl_plain_password=self.login.password, client_id="chunkraft-e2e",
                request_timeout_ms=int(TIMEOUT_S * 1000))

        return self._run(make())

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(asyncio.wait_for(call, TIMEOUT_S + 5))

    def close(self) -> None:
        try:
            if self._client is not None:
                self._run(self._client.close())
                self._client = None
        finally:
            self._loop.close()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        aiokafka_errors = _module("aiokafka.errors")
        try:
            return self._run(getattr(self._client, method)(*args, **kwargs))
        except aiokafka_errors.KafkaError as error:
            raise _aiokafka_refused(error) from error

    @staticmethod
    def _check(code: int, message: str | None) -> None:
        aiokafka_errors = _module("aiokafka.errors")
        if code:
            raise _aiokafka_refused(aiokafka_errors.for_code(code)(message))

    def list_topics(self) -> set[str]:
        return set(self._call("list_topics"))

    def describe_cluster(self) -> ClusterView:
        answer = self._call("describe_cluster")
        return ClusterView(answer["cluster_id"], {
            b["node_id"]: (b["host"], b["port"]) for b in answer["brokers"]})

    def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1, *,
                     configs: dict[str, str] | None = None,
                     assignments: dict[int, list[int]] | None = None,
                     validate_only: bool = False) -> None:
        topic = _module("aiokafka.admin").NewTopic(
            name, partitions, replication_factor, replica_assignments=assignments,
            topic_configs=configs or {})
        answer = self._call("create_topics", [topic], validate_only=validate_only,
                            timeout_ms=int(TIMEOUT_S * 1000))
        for result in answer.topic_errors:  # aiokafka answers per topic, without raising
            self._check(result[1], result[2] if len(result) > 2 else None)

    def create_partitions(self, topic: str, count: int, *,
                          assignments: list[list[int]] | None = None,
                          validate_only: bool = False) -> None:
        partitions = _module("aiokafka.admin").NewPartitions(count, assignments)
        self._call("create_partitions", {topic: partitions},
                   validate_only=validate_only, timeout_ms=int(TIMEOUT_S * 1000))

    def delete_topic(self, name: str) -> None:
        answer = self._call("delete_topics", [name], timeout_ms=int(TIMEOUT_S * 1000))
        for result in answer.topic_error_codes:
            self._check(result[1], None)

    def describe_configs(self, topic: str) -> dict[str, str]:
        configs = _module("aiokafka.admin.config_resource")
        (answer,) = self._call("describe_configs", [
            configs.ConfigResource(configs.ConfigResourceType.TOPIC, topic)])
        (resource,) = answer.resources
        self._check(resource[0], resource[1])
        return {entry[0]: entry[1] for entry in resource[4]}

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        resources = _module("aiokafka.admin.config_resource")
        (answer,) = self._call("alter_configs", [resources.ConfigResource(
            resources.ConfigResourceType.TOPIC, topic, configs=configs)])
        for resource in answer.resources:
            self._check(resource[0], resource[1])

    def authentication_failure(self) -> Refused:
        aiokafka_errors = _module("aiokafka.errors")
        # aiokafka logs each refused connection ("Unable connect to ...: [Error 58]
        # SaslAuthenticationFailed") and raises KafkaConnectionError once none bootstraps.
        client = self._new_client()
        with _logged_errors("aiokafka") as logged:
            try:
                self._run(client.start())
            except aiokafka_errors.KafkaConnectionError as refused:
                sasl = [e for e in logged.errors
                        if isinstance(e, aiokafka_errors.SaslAuthenticationFailed)]
                assert sasl, f"no SASL failure among {logged.errors!r} ({refused})"
                return _aiokafka_refused(sasl[0])
            finally:
                self._run(client.close())
        raise AssertionError("aiokafka bootstrapped with a wrong password")


# ------------------------------------------------------------------ kafkajs


class KafkajsAdmin(AdminAdapter):
    """kafkajs's admin client, one ``node admin.js`` process per call."""

    name = "kafkajs"
    operations = frozenset({
        "list_topics", "list_brokers", "describe_cluster", "create_topic", "create_partitions",
        "delete_topic", "describe_configs", "alter_configs", "create_acls", "describe_acls",
        "delete_acls", "authentication_failure"})

    def _run(self, op: str, args: dict[str, Any] | None = None) -> Any:
        answer = kafkajs({"brokers": self.login.servers,
                          "sasl": {"mechanism": "plain", "username": self.login.username,
                                   "password": self.login.password},
                          "op": op, "args": args or {}}, timeout=3 * TIMEOUT_S)
        if not answer["ok"]:
            raise self._refused(answer["error"])
        return answer["result"]

    def _refused(self, error: dict[str, Any]) -> Refused:
        """kafkajs's error as a refusal: its ``type``, or that of the one error an aggregate
        (KafkaJSAggregateError, per-topic errors of CreateTopics) holds."""
        if error.get("name") == "KafkaJSNumberOfRetriesExceeded" and error.get("cause"):
            error = error["cause"]  # retries 0: the one attempt's error
        inner = error.get("errors") or []
        if error.get("type") is None and len(inner) == 1:
            error, whole = inner[0], error
        else:
            whole = error
        code = error.get("code")
        return Refused(self.name, code if isinstance(code, int) else -1,
                       str(error.get("type") or error.get("name")), whole,
                       str(error.get("message")))

    @staticmethod
    def _check(code: int, message: str | None) -> None:
        # kafkajs hands a few answers back untouched, error codes included
        if code:
            from chunkraft.error_codes import Errors

            raise Refused("kafkajs", code, Errors.for_code(code).name, {"code": code},
                          message or "")

    def list_topics(self) -> set[str]:
        return set(self._run("listTopics"))

    def describe_cluster(self) -> ClusterView:
        answer = self._run("describeCluster")
        return ClusterView(answer["clusterId"], {
            b["nodeId"]: (b["host"], b["port"]) for b in answer["brokers"]})

    def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1, *,
                     configs: dict[str, str] | None = None,
                     assignments: dict[int, list[int]] | None = None,
                     validate_only: bool = False) -> None:
        topic: dict[str, Any] = {"topic": name, "numPartitions": partitions,
                                 "replicationFactor": replication_factor,
                                 "configEntries": [{"name": k, "value": v}
                                                   for k, v in (configs or {}).items()]}
        if assignments is not None:
            topic["replicaAssignment"] = [{"partition": p, "replicas": r}
                                          for p, r in sorted(assignments.items())]
        # kafkajs then waits for the topic's leaders in Metadata, which a validated-only
        # topic never has: not for validate_only
        created = self._run("createTopics", {"topics": [topic], "validateOnly": validate_only,
                                             "waitForLeaders": not validate_only,
                                             "timeout": int(TIMEOUT_S * 1000)})
        if created is False:  # kafkajs's form of TOPIC_ALREADY_EXISTS for every topic
            raise Refused(self.name, 36, "TOPIC_ALREADY_EXISTS", created,
                          "createTopics returned false: the topic exists")

    def create_partitions(self, topic: str, count: int, *,
                          assignments: list[list[int]] | None = None,
                          validate_only: bool = False) -> None:
        partitions: dict[str, Any] = {"topic": topic, "count": count}
        if assignments is not None:
            partitions["assignments"] = assignments
        self._run("createPartitions", {"topicPartitions": [partitions],
                                       "validateOnly": validate_only,
                                       "timeout": int(TIMEOUT_S * 1000)})

    def delete_topic(self, name: str) -> None:
        self._run("deleteTopics", {"topics": [name], "timeout": int(TIMEOUT_S * 1000)})

    def describe_configs(self, topic: str) -> dict[str, str]:
        answer = self._run("describeConfigs", {"resources": [{"type": "TOPIC", "name": topic}],
                                               "includeSynonyms": False})
        (resource,) = answer["resources"]
        self._check(resource["errorCode"], resource["errorMessage"])
        return {e["configName"]: e["configValue"] for e in resource["configEntries"]}

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        answer = self._run("alterConfigs", {"resources": [{
            "type": "TOPIC", "name": topic,
            "configEntries": [{"name": k, "value": v} for k, v in configs.items()]}]})
        for resource in answer["resources"]:
            self._check(resource["errorCode"], resource["errorMessage"])

    _PATTERNS: ClassVar[dict[int, str]] = {1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
    _RESOURCES: ClassVar[dict[int, str]] = {1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER",
                                            5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN",
                                            7: "USER"}
    _OPERATIONS: ClassVar[dict[int, str]] = {
        1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
        8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
        12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS"}
    _PERMISSIONS: ClassVar[dict[int, str]] = {1: "ANY", 2: "DENY", 3: "ALLOW"}

    def _binding(self, resource: dict[str, Any], acl: dict[str, Any]) -> Acl:
        return Acl(self._RESOURCES[resource["resourceType"]], resource["resourceName"],
                   self._PATTERNS[resource["resourcePatternType"]], acl["principal"],
                   acl["host"], self._OPERATIONS[acl["operation"]],
                   self._PERMISSIONS[acl["permissionType"]])

    @staticmethod
    def _filter(acl_filter: AclFilter) -> dict[str, Any]:
        found: dict[str, Any] = {"resourceType": acl_filter.resource_type,
                                 "resourcePatternType": acl_filter.pattern_type,
                                 "operation": acl_filter.operation,
                                 "permissionType": acl_filter.permission}
        for key, value in (("resourceName", acl_filter.resource_name),
                           ("principal", acl_filter.principal), ("host", acl_filter.host)):
            if value is not None:
                found[key] = value
        return found

    def create_acls(self, acls: list[Acl]) -> None:
        self._run("createAcls", {"acl": [
            {"resourceType": a.resource_type, "resourceName": a.resource_name,
             "resourcePatternType": a.pattern_type, "principal": a.principal, "host": a.host,
             "operation": a.operation, "permissionType": a.permission} for a in acls]})

    def describe_acls(self, acl_filter: AclFilter) -> set[Acl]:
        answer = self._run("describeAcls", self._filter(acl_filter))
        return {self._binding(resource, acl) for resource in answer["resources"]
                for acl in resource["acls"]}

    def delete_acls(self, acl_filter: AclFilter) -> set[Acl]:
        answer = self._run("deleteAcls", {"filters": [self._filter(acl_filter)]})
        deleted: set[Acl] = set()
        for response in answer["filterResponses"]:
            self._check(response["errorCode"], response["errorMessage"])
            for match in response["matchingAcls"]:
                self._check(match["errorCode"], match["errorMessage"])
                deleted.add(self._binding(match, match))
        return deleted

    def authentication_failure(self) -> Refused:
        try:
            self._run("listTopics")
        except Refused as refused:
            error = refused.raised
            assert isinstance(error, dict) and \
                error["name"] == "KafkaJSSASLAuthenticationError", error
            # kafkajs's SASL authenticators throw this error for a SaslAuthenticate answered
            # SASL_AUTHENTICATION_FAILED, with the broker's message
            return Refused(self.name, SASL_AUTHENTICATION_FAILED, refused.name, error,
                           refused.message)
        raise AssertionError("kafkajs listed topics with a wrong password")


ADMIN_CLIENTS: dict[str, type[AdminAdapter]] = {
    adapter.name: adapter for adapter in (KcatAdmin, KafkaPythonAdmin, ConfluentAdmin,
                                          AiokafkaAdmin, KafkajsAdmin)}
CLIENTS = tuple(ADMIN_CLIENTS)
"""Every client, in a stable order (the tests' parameters)."""


def clients_with(*operations: str) -> list[str]:
    """The clients that have every one of ``operations``."""
    return [name for name, adapter in ADMIN_CLIENTS.items()
            if set(operations) <= adapter.operations]


@contextlib.contextmanager
def open_admin(client: str, login: Login, *, connect: bool = True) -> Iterator[AdminAdapter]:
    """An adapter of ``client`` for ``login``, closed at the end. ``connect`` False: a client
    that would connect at once does not (for :meth:`AdminAdapter.authentication_failure`)."""
    adapter_type = ADMIN_CLIENTS[client]
    adapter: AdminAdapter
    if adapter_type in (KafkaPythonAdmin, AiokafkaAdmin):
        adapter = adapter_type(login, connect=connect)
    else:
        adapter = adapter_type(login)
    try:
        yield adapter
    finally:
        adapter.close()

