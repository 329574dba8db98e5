"""LocalCluster: a quorum of controller processes on 127.0.0.1, for the run command and tests.

Each node is a real ``chunkraft controller --config`` process with its own formatted data dir,
Raft port and HTTP port; nothing is shared but the cluster id, the Raft password (generated
unless given) and the credentials file. The launcher only ever signals processes it started, by
their PID. Each runs in a session of its own, so a Ctrl-C in the launcher's terminal reaches the
launcher alone, which then stops the brokers (a controlled shutdown needs the quorum) before the
controllers.

Credentials: :meth:`LocalCluster.prepare` writes ``credentials.json`` (token digests, named by
every node's ``auth.credentials.file``) and keeps the tokens themselves in ``tokens.json``
(mode 0600) under ``base_dir``: ``User:admin`` (a super user) and ``User:broker-0`` ..
``User:broker-N`` (``brokers``, 5 by default, so tests can register brokers as themselves). It
also writes ``admin.properties``, a command-config file for the CLI (``bearer.token=...``).

Broker agents: ``broker_count`` (3 by default) ``chunkraft broker --config`` processes, ids
0 .. n-1 (their own id space), each with a log dir, a properties file, a token file (its
principal ``User:broker-<id>``) and a log under ``base_dir/broker-<id>``. They are started only
when asked (:meth:`LocalCluster.start_brokers`, :meth:`LocalCluster.start_broker`), after the
quorum is ready: :meth:`LocalCluster.grant_broker_acls` first gives each broker principal
CLUSTER_ACTION on the cluster (what registering, heartbeating and reading the metadata stream
need). :meth:`LocalCluster.wait_brokers_ready` waits until each runs registered and unfenced.

Logs: each node's output is appended to ``base_dir/controller-<id>/controller.log`` or
``base_dir/broker-<id>/broker.log``, each start marked by a ``=== <UTC time> ... ===`` line.
Settings: ``extra_properties`` / ``broker_properties`` go into every controller's / broker's
properties file, ``node_properties`` / ``broker_node_properties`` into one node's (winning).

Kafka (``kafka=True``, the default): every node also has a Kafka listener on 127.0.0.1
(:mod:`chunkraft.local.local_kafka`), and ``kafka-client.properties`` holds the admin's
SASL/PLAIN settings for stock clients.

TLS (``tls=True``): ``prepare`` makes a private CA under ``base_dir/tls`` and a certificate per
node (CN ``controller-N``, subjectAltName 127.0.0.1) and for the admin (CN ``admin``); every
node serves https with ``ssl.client.auth`` = ``client_auth`` (``required`` by default), and
:attr:`LocalCluster.ssl_context` verifies the nodes and presents the admin's certificate.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from chunkraft.controller.storage import format_storage, random_cluster_id
from chunkraft.local.local_credentials import add_local_token, local_tokens
from chunkraft.local.local_kafka import (
    bootstrap_list,
    client_settings,
    give_kafka_ports,
    kafka_protocol,
    ports_in_use,
    properties_text,
)
from chunkraft.local.local_tls import issue_local, local_client_context
from chunkraft.local.node_process import (
    BrokerProcess,
    ControllerProcess,
    free_ports,
    log_tail,
    spawn_node,
    write_private,
)
from chunkraft.local.node_properties import NodeTls, broker_properties, controller_properties
from chunkraft.local.steady_leader import LeadershipSample, sample_leadership
from chunkraft.records.uuids import parse_kafka_uuid

__all__ = [
    "ADMIN_PRINCIPAL",
    "BrokerProcess",
    "ControllerProcess",
    "LocalCluster",
    "free_ports",
    "write_private",
]

ADMIN_PRINCIPAL = "User:admin"
CREDENTIALS_FILE = "credentials.json"
TOKENS_FILE = "tokens.json"
COMMAND_CONFIG_FILE = "admin.properties"


@dataclass
class LocalCluster:
    """``size`` controller processes under ``base_dir``; see the module docstring."""

    base_dir: Path
    size: int = 3
    cluster_id: str = field(default_factory=random_cluster_id)
    password: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    extra_properties: dict[str, str] = field(default_factory=dict)
    nodes: dict[int, ControllerProcess] = field(default_factory=dict)
    brokers: int = 5
    """Broker principals ``User:broker-0`` .. ``User:broker-<brokers>`` get a token (at least
    one per broker agent)."""
    broker_count: int = 3
    """How many broker agents (ids 0 .. n-1) the cluster can start."""
    broker_properties: dict[str, str] = field(default_factory=dict)
    """Extra properties of every broker agent's file."""
    broker_nodes: dict[int, BrokerProcess] = field(default_factory=dict)
    node_properties: dict[int, dict[str, str]] = field(default_factory=dict)
    """Extra properties of one controller's file, by node id (over ``extra_properties``)."""
    broker_node_properties: dict[int, dict[str, str]] = field(default_factory=dict)
    """Extra properties of one broker's file, by broker id (over ``broker_properties``)."""
    tokens: dict[str, str] = field(default_factory=dict, repr=False)
    """Principal -> its bearer token (the first one made for it)."""
    tls: bool = False
    """Serve https, with certificates from a private CA (see the module docstring)."""
    kafka: bool = True
    """Give every node a Kafka listener (SASL_PLAINTEXT, or SASL_SSL with ``tls``)."""
    client_auth: str = "required"
    """``ssl.client.auth`` of every node when ``tls`` is on."""
    _ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    joining: set[int] = field(default_factory=set)
    """Controllers added with :meth:`add_controller`: formatted to join a running quorum."""

    def __post_init__(self) -> None:
        self.base_dir = Path(self.base_dir)
        if not self.nodes:
            ports = free_ports(2 * self.size)
            for index in range(self.size):
                node_id = index + 1
                node_dir = self.base_dir / f"controller-{node_id}"
                self.nodes[node_id] = ControllerProcess(
                    node_id, ports[index], ports[self.size + index], node_dir / "data",
                    node_dir / "controller.properties", node_dir / "controller.log",
                    scheme="https" if self.tls else "http")
        if not self.broker_nodes:
            for broker_id, port in zip(range(self.broker_count),
                                       free_ports(self.broker_count, avoid=ports_in_use(
                                           list(self.nodes.values()))), strict=True):
                self.broker_nodes[broker_id] = self._broker_process(broker_id, port)
        if self.kafka:
            give_kafka_ports([*self.nodes.values(), *self.broker_nodes.values()])

    @property
    def kafka_protocol(self) -> str:
        """The security protocol of every node's Kafka listener."""
        return kafka_protocol(self.tls)

    @property
    def kafka_bootstrap_servers(self) -> str:
        """The brokers' Kafka listeners, ``host:port,...`` (Kafka's ``bootstrap.servers``)."""
        return bootstrap_list(self.broker_nodes.values())

    @property
    def kafka_bootstrap_controllers(self) -> str:
        """The controllers' Kafka listeners (KIP-919's ``bootstrap.controllers``)."""
        return bootstrap_list(self.nodes.values())

    @property
    def kafka_client_properties_path(self) -> Path:
        """librdkafka's properties for the admin (``kcat -F``, confluent-kafka)."""
        return self.base_dir / "kafka-client.properties"

    def kafka_client_settings(self) -> dict[str, str]:
        """The admin's Kafka client settings, librdkafka's names: SASL/PLAIN as User:admin."""
        return client_settings(ADMIN_PRINCIPAL, self.admin_token, self.tls, self.ca_path)

    def _broker_process(self, broker_id: int, port: int) -> BrokerProcess:
        broker_dir = self.base_dir / f"broker-{broker_id}"
        return BrokerProcess(broker_id, port, broker_dir / "logs",
                             broker_dir / "broker.properties", broker_dir / "broker.log",
                             broker_dir / "token", scheme="https" if self.tls else "http")

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes.values()]

    @property
    def console_url(self) -> str:
        """The web console of the first controller (every controller serves one at ``/ui``)."""
        return self.urls[0] + "/ui"

    def console_hint(self) -> str:
        """The line the demos print about the web console."""
        return (f"  web console: {self.console_url}  (log in with the admin's bearer.token, in "
                f"{self.command_config_path})")

    @property
    def credentials_path(self) -> Path:
        return self.base_dir / CREDENTIALS_FILE

    @property
    def tokens_path(self) -> Path:
        return self.base_dir / TOKENS_FILE

    @property
    def command_config_path(self) -> Path:
        """A CLI command-config file (``--command-config``) authenticating as the admin."""
        return self.base_dir / COMMAND_CONFIG_FILE

    @property
    def tls_dir(self) -> Path:
        return self.base_dir / "tls"

    @property
    def ca_path(self) -> Path:
        return self.tls_dir / "ca.pem"

    def certificate_paths(self, common_name: str) -> tuple[Path, Path]:
        """The certificate and key files of ``common_name`` (issued by :meth:`issue`)."""
        return self.tls_dir / f"{common_name}.pem", self.tls_dir / f"{common_name}.key"

    def issue(self, common_name: str, *, addresses: tuple[str, ...] = ()) -> tuple[Path, Path]:
        """A certificate for ``common_name`` from the cluster's CA (made if missing); its
        certificate and key paths."""
        return issue_local(self.tls_dir, f"chunkraft local CA {self.cluster_id}",
                           self.certificate_paths(common_name), common_name, addresses)

    def client_context(self, common_name: str | None = "admin") -> ssl.SSLContext:
        """An SSL context that verifies the nodes with the cluster's CA and presents the
        certificate of ``common_name`` (issued if missing; None: no client certificate)."""
        if common_name is not None and not self.certificate_paths(common_name)[0].exists():
            self.issue(common_name)
        return local_client_context(
            self.ca_path, None if common_name is None else self.certificate_paths(common_name))

    @property
    def verify(self) -> ssl.SSLContext | bool:
        """httpx's ``verify=`` for calls to the nodes as the admin: True over http; over
        https, an SSL context with the CA and the admin's certificate (made once)."""
        if not self.tls:
            return True
        if self._ssl_context is None:
            self._ssl_context = self.client_context("admin")
        return self._ssl_context

    @property
    def admin_token(self) -> str:
        """The bearer token of ``User:admin``, a super user (after :meth:`prepare`)."""
        return self.token(ADMIN_PRINCIPAL)

    @property
    def headers(self) -> dict[str, str]:
        """HTTP headers that authenticate a request as the admin."""
        return {"authorization": f"Bearer {self.admin_token}"}

    def token(self, principal: str) -> str:
        """The bearer token of ``principal`` (``User:admin``, ``User:broker-1``...)."""
        self._load_credentials()
        try:
            return self.tokens[principal]
        except KeyError:
            raise KeyError(f"no token for {principal}; add one with add_token") from None

    def add_token(self, principal: str, description: str = "") -> str:
        """A new token for ``principal``, appended to the credentials file (every node honours
        it within about a second); it becomes :meth:`token`'s answer if it is the first."""
        self._load_credentials()
        return add_local_token(self.credentials_path, self.tokens_path, self.tokens, principal,
                               description)

    def _load_credentials(self) -> None:
        """Reads ``tokens.json`` kept from an earlier run, or makes every token anew."""
        if not self.tokens:
            self.tokens = local_tokens(self.credentials_path, self.tokens_path,
                                       [ADMIN_PRINCIPAL, *self._broker_principals()])

    def _broker_principals(self) -> list[str]:
        last = max(self.brokers, self.broker_count - 1)
        return [f"User:broker-{n}" for n in range(0, last + 1)]

    def _write_command_config(self) -> None:
        text = f"bearer.token={self.admin_token}\n"
        if self.tls:
            certificate, key = self.certificate_paths("admin")
            text += (f"ssl.ca.file={self.ca_path}\nssl.certificate.file={certificate}\n"
                     f"ssl.key.file={key}\n")
        write_private(self.command_config_path, text)

    def _prepare_tls(self) -> None:
        """The CA and the admin's certificate, made once (the nodes' come with their files)."""
        if not self.certificate_paths("admin")[0].exists():
            self.issue("admin")

    def prepare(self) -> None:
        """Formats every data dir, makes the credentials (once) and writes every node's
        properties file and the admin's command-config file (idempotent)."""
        if self.tls:
            self._prepare_tls()
        if self.kafka:
            # nodes added since construction
            give_kafka_ports([*self.nodes.values(), *self.broker_nodes.values()])
        quorum = list(self.nodes.values())
        for node in quorum:
            node.config_path.parent.mkdir(parents=True, exist_ok=True)
            format_storage(node.data_dir, parse_kafka_uuid(self.cluster_id), node.node_id,
                           ignore_formatted=True, joining=node.node_id in self.joining)
            properties = controller_properties(
                node, quorum, cluster_id=self.cluster_id, password=self.password,
                credentials_path=self.credentials_path, super_user=ADMIN_PRINCIPAL,
                kafka_protocol=self.kafka_protocol,
                tls=self._node_tls(f"controller-{node.node_id}"),
                extra={**self.extra_properties, **self.node_properties.get(node.node_id, {})})
            write_private(node.config_path, properties_text(properties))  # the Raft password
        self._load_credentials()
        self._write_command_config()
        if self.kafka:
            write_private(self.kafka_client_properties_path,  # it holds the admin's token
                          properties_text(self.kafka_client_settings()))
        self._prepare_brokers()

    def _node_tls(self, common_name: str) -> NodeTls | None:
        """The TLS settings of the node with certificate ``common_name`` (issued if missing),
        or None without TLS."""
        if not self.tls:
            return None
        if not self.certificate_paths(common_name)[0].exists():
            self.issue(common_name, addresses=("127.0.0.1", "localhost"))
        certificate, key = self.certificate_paths(common_name)
        return NodeTls(certificate, key, self.ca_path, self.client_auth)

    def _prepare_brokers(self) -> None:
        bootstrap = ",".join(self.urls)
        for broker in self.broker_nodes.values():
            broker.config_path.parent.mkdir(parents=True, exist_ok=True)
            write_private(broker.token_path, self.token(f"User:broker-{broker.broker_id}") + "\n")
            properties = broker_properties(
                broker, cluster_id=self.cluster_id, bootstrap=bootstrap,
                credentials_path=self.credentials_path, super_user=ADMIN_PRINCIPAL,
                kafka_protocol=self.kafka_protocol,
                tls=self._node_tls(f"broker-{broker.broker_id}"),
                extra={**self.broker_properties,
                       **self.broker_node_properties.get(broker.broker_id, {})})
            write_private(broker.config_path, properties_text(properties))

    def broker_url(self, broker_id: int) -> str:
        """The data-plane URL of broker ``broker_id``."""
        return self.broker_nodes[broker_id].url

    def grant_broker_acls(self, timeout: float = 30.0) -> None:
        """CLUSTER_ACTION on the cluster for every broker agent's principal, and CREATE, WRITE,
        READ, DESCRIBE on topics PREFIXED ``__`` (the coordinators create and use the internal
        topics ``__transaction_state`` and ``__consumer_offsets``). Idempotent: an existing ACL
        is not written again. The quorum must be up."""
        creations = [{"resource_type": "CLUSTER", "resource_name": "kafka-cluster",
                      "principal": f"User:broker-{broker_id}", "operation": "CLUSTER_ACTION",
                      "permission_type": "ALLOW"} for broker_id in self.broker_nodes]
        creations += [{"resource_type": "TOPIC", "resource_name": "__",
                       "resource_pattern_type": "PREFIXED",
                       "principal": f"User:broker-{broker_id}",
                       "operation": operation, "permission_type": "ALLOW"}
                      for broker_id in self.broker_nodes
                      for operation in ("CREATE", "WRITE", "READ", "DESCRIBE")]
        if not creations:
            return
        from chunkraft.client.controller_rpc import ControllerRpcClient

        with ControllerRpcClient(self.urls, token=self.admin_token, retry_for=timeout,
                                 verify=self.verify) as client:
            client.call("/controller/v1/create-acls", {"creations": creations})

    def start_broker(self, broker_id: int) -> None:
        """Starts broker ``broker_id`` (its config must be prepared) unless it runs."""
        broker = self.broker_nodes[broker_id]
        if broker.running:
            return
        broker.process = spawn_node("broker", broker.config_path, broker.log_path,
                                f"broker {broker_id}")

    def start_brokers(self, *, grant: bool = True) -> None:
        """Grants the brokers' ACLs (``grant``) and starts every stopped broker."""
        if grant:
            self.grant_broker_acls()
        for broker_id in self.broker_nodes:
            self.start_broker(broker_id)

    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL: no controlled shutdown, no flush."""
        broker = self.broker_nodes[broker_id]
        if broker.process is not None:
            with contextlib.suppress(ProcessLookupError):
                broker.process.kill()
            broker.process.wait(timeout=10)
            broker.process = None

    def stop_broker(self, broker_id: int, timeout: float = 40.0) -> int | None:
        """SIGTERM (a controlled shutdown) and wait, SIGKILL after ``timeout``; the exit
        status (None if it was not running)."""
        broker = self.broker_nodes[broker_id]
        if broker.process is None:
            return None
        if broker.process.poll() is None:
            broker.process.send_signal(signal.SIGTERM)
        try:
            status = broker.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            broker.process.kill()
            status = broker.process.wait(timeout=10)
        broker.process = None
        return status

    def stop_brokers(self, timeout: float = 40.0) -> None:
        """SIGTERM every running broker at once, then wait for each."""
        for broker in self.broker_nodes.values():
            if broker.process is not None and broker.process.poll() is None:
                broker.process.send_signal(signal.SIGTERM)
        for broker_id in self.broker_nodes:
            self.stop_broker(broker_id, timeout)

    def broker_status(self, broker_id: int, *, with_hash: bool = False,
                      timeout: float = 2.0) -> dict[str, Any] | None:
        """Broker ``broker_id``'s ``/broker/v1/status`` answer, or None if it does not
        answer."""
        try:
            answer = httpx.get(f"{self.broker_url(broker_id)}/broker/v1/status",
                               params={"hash": "true"} if with_hash else None,
                               timeout=timeout, headers=self.headers, verify=self.verify)
            return dict(answer.json()) if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    def wait_brokers_ready(self, broker_ids: list[int] | None = None,
                           timeout: float = 60.0) -> None:
        """Waits until each running broker (or each of ``broker_ids``) is registered and
        unfenced; RuntimeError if one exits, TimeoutError naming the laggards."""
        targets = list(self.broker_nodes) if broker_ids is None else broker_ids
        deadline = time.monotonic() + timeout
        pending = list(targets)
        while time.monotonic() < deadline:
            for broker_id in list(pending):
                process = self.broker_nodes[broker_id].process
                if process is not None and process.poll() is not None:
                    raise RuntimeError(
                        f"broker {broker_id} exited with status {process.returncode}; see "
                        f"{self.broker_nodes[broker_id].log_path}")
                status = self.broker_status(broker_id, timeout=1.0)
                if status is not None and status.get("broker_epoch", -1) >= 0 \
                        and not status.get("fenced", True):
                    pending.remove(broker_id)
            if not pending:
                return
            time.sleep(0.1)
        raise TimeoutError(f"brokers {pending} were not registered and unfenced within "
                           f"{timeout} s; logs under {self.base_dir}")

    def start(self, node_id: int | None = None) -> None:
        """Starts one node, or every stopped node."""
        targets = [self.nodes[node_id]] if node_id is not None else list(self.nodes.values())
        for node in targets:
            if node.running:
                continue
            node.process = spawn_node("controller", node.config_path, node.log_path,
                                  f"controller {node.node_id}")

    def kill(self, node_id: int) -> None:
        """SIGKILL: the node gets no chance to flush or say goodbye."""
        node = self.nodes[node_id]
        if node.process is not None:
            with contextlib.suppress(ProcessLookupError):
                node.process.kill()
            node.process.wait(timeout=10)
            node.process = None

    def stop(self, node_id: int | None = None, timeout: float = 15.0) -> None:
        """SIGTERM and wait (SIGKILL after ``timeout``)."""
        targets = [self.nodes[node_id]] if node_id is not None else list(self.nodes.values())
        for node in targets:
            if node.process is not None and node.process.poll() is None:
                node.process.send_signal(signal.SIGTERM)
        for node in targets:
            if node.process is None:
                continue
            try:
                node.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(timeout=10)
            node.process = None

    def status(self, node_id: int, timeout: float = 2.0) -> dict[str, object] | None:
        """The node's ``/controller/v1/quorum`` answer, or None if it does not answer."""
        try:
            answer = httpx.get(f"{self.nodes[node_id].url}/controller/v1/quorum?hash=true",
                               timeout=timeout, headers=self.headers, verify=self.verify)
            return dict(answer.json()) if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    def leadership(self, timeout: float = 2.0) -> LeadershipSample:
        """What every running controller says of the leader and its changes (steady_leader)."""
        return sample_leadership({n.node_id: n.url for n in self.nodes.values() if n.running},
                                 headers=self.headers, verify=self.verify, timeout=timeout)

    def leader_id(self, timeout: float = 2.0) -> int | None:
        """The leader every running node that answers agrees on, or None."""
        seen = set()
        for node in self.nodes.values():
            if not node.running:
                continue
            status = self.status(node.node_id, timeout)
            if status is not None:
                seen.add(status.get("leader_id"))
        if len(seen) == 1:
            leader = seen.pop()
            return leader if isinstance(leader, int) else None
        return None

    def wait_ready(self, timeout: float = 30.0) -> int:
        """Waits until every running node is ready and agrees on a leader; returns its id.
        TimeoutError says what each node last answered, and the end of its log."""
        deadline = time.monotonic() + timeout
        said: dict[int, str] = {}
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                if node.running:
                    said[node.node_id] = self._readiness(node)
            if all(text == "ready" for text in said.values()):
                leader = self.leader_id()
                if leader is not None:
                    return leader
            for node in self.nodes.values():
                if node.process is not None and node.process.poll() is not None:
                    raise RuntimeError(f"controller {node.node_id} exited with status "
                                       f"{node.process.returncode}; see {node.log_path}")
            time.sleep(0.1)
        raise TimeoutError(f"the quorum was not ready within {timeout} s; logs under "
                           f"{self.base_dir}\n" + "\n".join(
                               f"  controller {node_id}: {text}; log ends: "
                               f"{log_tail(self.nodes[node_id].log_path)}"
                               for node_id, text in sorted(said.items())))

    def _readiness(self, node: ControllerProcess) -> str:
        """``ready``, or why the node is not (its /readyz reason, or why it did not answer)."""
        try:
            answer = httpx.get(f"{node.url}/readyz", timeout=1.0, verify=self.verify)
        except httpx.HTTPError as error:
            return f"no answer ({type(error).__name__})"
        if answer.status_code == 200:
            return "ready"
        try:
            return f"not ready: {answer.json().get('reason')}"
        except ValueError:
            return f"HTTP {answer.status_code}"

    def add_controller(self, node_id: int | None = None) -> ControllerProcess:
        """A new controller (next id by default) on new ports, its data dir formatted to join
        the running quorum; every controller's file is rewritten to list it (and no longer
        the ones :meth:`forget_controller` dropped), as an operator would. Not started, and
        not a voter until ``chunkraft quorum add-controller`` adds it."""
        node_id = max(self.nodes, default=0) + 1 if node_id is None else node_id
        if node_id in self.nodes:
            raise ValueError(f"controller {node_id} exists already")
        given = ports_in_use([*self.nodes.values(), *self.broker_nodes.values()])
        raft_port, http_port = free_ports(2, avoid=given)
        node_dir = self.base_dir / f"controller-{node_id}"
        self.nodes[node_id] = ControllerProcess(
            node_id, raft_port, http_port, node_dir / "data", node_dir / "controller.properties",
            node_dir / "controller.log", scheme="https" if self.tls else "http")
        self.joining.add(node_id)
        self.prepare()
        return self.nodes[node_id]

    def forget_controller(self, node_id: int) -> ControllerProcess:
        """Drops controller ``node_id`` (stopped first if this launcher runs it) from this
        cluster and from every other controller's and broker's file; its directory stays."""
        self.stop(node_id)
        node = self.nodes.pop(node_id)
        self.prepare()
        return node

    def __enter__(self) -> LocalCluster:
        self.prepare()
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_brokers()  # first: a controlled shutdown needs the quorum
        self.stop()
