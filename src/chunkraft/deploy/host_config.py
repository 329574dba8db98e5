"""Per-host configuration: the properties files an operator writes on each machine of a cluster.

One controller or broker per host, each reached at that host's own address (the same port
numbers on every host), and each started by systemd as::

    chunkraft controller --config /etc/chunkraft/controller.properties
    chunkraft broker --config /etc/chunkraft/broker.properties

:func:`render_controller_properties` and :func:`render_broker_properties` return the text of
those files; :func:`render_command_config` the admin tools' ``--command-config`` file of a
client host. Only real setting names are written (``docs/operations.md``, ``docs/broker.md``):
the loaders (:func:`~chunkraft.controller.config.load_controller_config`,
:func:`~chunkraft.broker_agent.config.load_broker_config`) read the result as it is.

Secrets stay out of the files: the Raft password is named by ``raft.password.file``, a broker's
token by ``broker.token.file``, and the admin's by ``bearer.token.file``; what the files hold is
addresses, ids and paths. Every address is a host's own: a wildcard (``0.0.0.0``, ``::``) or a
loopback address (``127.0.0.0/8``, ``::1``, ``localhost``) is refused with ValueError, since a
peer on another host can connect to neither. Paths must be absolute (a unit has no useful
working directory). Pure functions over immutable values: thread-safe, no I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chunkraft.broker_agent.settings import setting_named as broker_setting_named
from chunkraft.controller.settings import parse_cluster_id
from chunkraft.controller.settings import setting_named as controller_setting_named

__all__ = [
    "BROKER_PORT",
    "BROKER_PROPERTIES",
    "CONTROLLER_HTTP_PORT",
    "CONTROLLER_PROPERTIES",
    "RAFT_PORT",
    "BrokerPaths",
    "ClusterHosts",
    "ControllerHost",
    "ControllerPaths",
    "check_host_address",
    "render_broker_properties",
    "render_command_config",
    "render_controller_properties",
]

CONFIG_DIR = Path("/etc/chunkraft")
CREDENTIALS_DIR = CONFIG_DIR / "credentials"
"""Tokens and the credentials file, in a directory of the service user's own (deploy/systemd:
``chunkraft credentials add`` run as that user writes files the services can read)."""
CONTROLLER_PROPERTIES = CONFIG_DIR / "controller.properties"
"""Where a controller host keeps its file (the systemd unit's ``--config``)."""
BROKER_PROPERTIES = CONFIG_DIR / "broker.properties"
"""Where a broker host keeps its file (the systemd unit's ``--config``)."""
RAFT_PORT = 9093
CONTROLLER_HTTP_PORT = 9090
BROKER_PORT = 9092
ADMIN_PRINCIPAL = "User:admin"

# What the renderers write themselves: extra settings may not repeat (or contradict) them, and
# every address in a file comes from the checked host addresses.
_CONTROLLER_OWN = frozenset({
    "node.id", "cluster.id", "controller.quorum.voters", "controller.http.urls", "listeners",
    "advertised.listeners", "data.dir", "raft.password", "raft.password.file",
    "auth.credentials.file", "super.users"})
_BROKER_OWN = frozenset({
    "node.id", "cluster.id", "controller.quorum.bootstrap.servers", "listeners",
    "advertised.listeners", "log.dirs", "broker.token.file", "auth.credentials.file",
    "super.users", "broker.rack"})


def check_host_address(address: str, what: str = "address") -> str:
    """``address`` if another host can connect to it; ValueError naming ``what`` otherwise.

    Refused: an empty text, one with whitespace or a separator of the settings' lists
    (``,@/[]``), a wildcard (``0.0.0.0``, ``::``), a loopback address (``127.0.0.0/8``,
    ``::1``) and the name ``localhost``. A host name other than that is accepted (DNS is the
    operator's business); IPv6 addresses are returned compressed.
    """
    text = address.strip() if isinstance(address, str) else ""
    if not text or text != address or any(c in text for c in " \t\r\n,@/[]"):
        raise ValueError(f"{what} {address!r} is not a host name or IP address")
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        if text.lower().rstrip(".") == "localhost" or text.lower().endswith(".localhost"):
            raise ValueError(f"{what} {address!r} is the loopback name: other hosts cannot "
                             "reach it; give this host's own address") from None
        return text
    if ip.is_unspecified:
        raise ValueError(f"{what} {address} is a wildcard address: others cannot connect to "
                         "it; give this host's own address")
    if ip.is_loopback:
        raise ValueError(f"{what} {address} is a loopback address: other hosts cannot reach "
                         "it; give this host's own address")
    return str(ip)


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _check_port(port: int, what: str) -> None:
    if not 1 <= port <= 65535:
        raise ValueError(f"{what} {port} is outside 1 .. 65535")


def _check_absolute(path: Path, what: str) -> None:
    if not path.is_absolute():
        raise ValueError(f"{what} {path} is relative; a service has no useful working "
                         "directory, give an absolute path")


@dataclass(frozen=True)
class ControllerHost:
    """One controller: its node id and its host's own address (checked; immutable)."""

    node_id: int
    address: str

    def __post_init__(self) -> None:
        if not 0 <= self.node_id <= 2**31 - 1:
            raise ValueError(f"controller node id {self.node_id} is outside 0 .. 2^31-1")
        object.__setattr__(self, "address", check_host_address(
            self.address, f"controller {self.node_id}'s address"))


@dataclass(frozen=True)
class ClusterHosts:
    """What every host of one cluster shares: the cluster id, the controllers and the ports.

    Contract: building one checks the cluster id (a Kafka base64 uuid or hex), at least one
    controller, distinct node ids and addresses (one controller per host), ports in range and
    the Raft port apart from the controllers' HTTP port; ValueError otherwise. Immutable.
    """

    cluster_id: str
    controllers: tuple[ControllerHost, ...]
    raft_port: int = RAFT_PORT
    controller_http_port: int = CONTROLLER_HTTP_PORT
    broker_port: int = BROKER_PORT

    def __post_init__(self) -> None:
        parse_cluster_id(self.cluster_id)
        object.__setattr__(self, "controllers", tuple(self.controllers))
        if not self.controllers:
            raise ValueError("a cluster needs at least one controller host")
        ids = [c.node_id for c in self.controllers]
        if len(set(ids)) != len(ids):
            raise ValueError(f"controller node ids repeat: {ids}")
        addresses = [c.address.lower() for c in self.controllers]
        if len(set(addresses)) != len(addresses):
            raise ValueError(f"controller addresses repeat: {addresses}; one controller per "
                             "host")
        _check_port(self.raft_port, "raft port")
        _check_port(self.controller_http_port, "controller HTTP port")
        _check_port(self.broker_port, "broker port")
        if self.raft_port == self.controller_http_port:
            raise ValueError(f"the Raft port and the controllers' HTTP port are both "
                             f"{self.raft_port}")

    def controller(self, node_id: int) -> ControllerHost:
        """The controller ``node_id``; KeyError if there is none."""
        for host in self.controllers:
            if host.node_id == node_id:
                return host
        raise KeyError(node_id)

    def controller_url(self, node_id: int) -> str:
        """Controller ``node_id``'s HTTP API, ``http://address:port``."""
        address = self.controller(node_id).address
        return f"http://{_url_host(address)}:{self.controller_http_port}"

    @property
    def controller_urls(self) -> list[str]:
        """Every controller's HTTP API, in the order the controllers are listed."""
        return [self.controller_url(c.node_id) for c in self.controllers]

    @property
    def voters(self) -> str:
        """``controller.quorum.voters``: ``id@address:raft_port,...``, the same on every node."""
        return ",".join(f"{c.node_id}@{_url_host(c.address)}:{self.raft_port}"
                        for c in self.controllers)

    @property
    def http_urls(self) -> str:
        """``controller.http.urls``: ``id@http://address:port,...``."""
        return ",".join(f"{c.node_id}@{self.controller_url(c.node_id)}"
                        for c in self.controllers)

    @property
    def bootstrap_servers(self) -> str:
        """``controller.quorum.bootstrap.servers`` of a broker, and the admin tools'
        ``--bootstrap-server``: every controller's URL, comma-separated."""
        return ",".join(self.controller_urls)

    def broker_url(self, address: str) -> str:
        """The data-plane URL of a broker on the host at ``address``."""
        return f"http://{_url_host(check_host_address(address, 'broker address'))}:" \
               f"{self.broker_port}"


@dataclass(frozen=True)
class ControllerPaths:
    """The files a controller host has besides its properties file (absolute paths)."""

    data_dir: Path = Path("/var/lib/chunkraft/controller")
    raft_password_file: Path = CONFIG_DIR / "raft-password"
    credentials_file: Path = CREDENTIALS_DIR / "credentials.json"


@dataclass(frozen=True)
class BrokerPaths:
    """The files a broker host has besides its properties file (absolute paths)."""

    log_dir: Path = Path("/var/lib/chunkraft/broker")
    token_file: Path = CREDENTIALS_DIR / "broker.token"
    credentials_file: Path = CREDENTIALS_DIR / "credentials.json"


@dataclass
class _Lines:
    """Properties text under construction: a comment or ``key=value`` per line."""

    lines: list[str] = field(default_factory=list)

    def comment(self, text: str) -> None:
        self.lines.append(f"# {text}" if text else "")

    def set(self, key: str, value: object) -> None:
        text = str(value)
        if any(c in text for c in "\r\n") or text != text.strip():
            raise ValueError(f"{key}: {text!r} cannot be one properties line")
        self.lines.append(f"{key}={text}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _extra(lines: _Lines, extra: Mapping[str, str] | None, own: frozenset[str],
           named: Callable[[str], object | None], kind: str) -> None:
    if not extra:
        return
    lines.comment("")
    lines.comment("Tuning for this deployment.")
    for key, value in extra.items():
        if key in own:
            raise ValueError(f"{key} is written by the renderer from the host layout; it "
                             f"cannot be an extra {kind} setting")
        if named(key) is None:
            raise ValueError(f"{key} is not a {kind} setting (docs/operations.md, "
                             "docs/broker.md)")
        lines.set(key, value)


def render_controller_properties(cluster: ClusterHosts, node_id: int, *,
                                 paths: ControllerPaths = ControllerPaths(),
                                 super_users: Sequence[str] = (ADMIN_PRINCIPAL,),
                                 extra: Mapping[str, str] | None = None) -> str:
    """The ``controller.properties`` of controller ``node_id`` (one of ``cluster``'s).

    Its Raft port and HTTP listener bind the host's own address (never a wildcard), and
    ``controller.quorum.voters`` / ``controller.http.urls`` name every controller by its host's
    address, identical on every controller. ``extra`` adds other real controller settings
    (timings, limits); ValueError for an unknown one, one the renderer writes, a relative
    path or a node id that is not a controller of ``cluster`` (KeyError).
    """
    host = cluster.controller(node_id)
    for path, what in ((paths.data_dir, "data.dir"),
                       (paths.raft_password_file, "raft.password.file"),
                       (paths.credentials_file, "auth.credentials.file")):
        _check_absolute(path, what)
    lines = _Lines()
    lines.comment(f"chunkraft controller {node_id} on {host.address}: "
                  f"chunkraft controller --config {CONTROLLER_PROPERTIES}")
    lines.comment("Identity: the same cluster.id on every node, a different node.id on each.")
    lines.set("node.id", node_id)
    lines.set("cluster.id", cluster.cluster_id)
    lines.comment("")
    lines.comment("The quorum, identical on every controller; this node binds its own entry.")
    lines.set("controller.quorum.voters", cluster.voters)
    lines.set("raft.password.file", paths.raft_password_file)
    lines.comment("")
    lines.comment("This node's HTTP API on its host's address, and every controller's.")
    lines.set("listeners", cluster.controller_url(node_id))
    lines.set("controller.http.urls", cluster.http_urls)
    lines.comment("")
    lines.comment(f"Formatted once: chunkraft controller format --cluster-id "
                  f"{cluster.cluster_id} --data-dir {paths.data_dir} --node-id {node_id}")
    lines.set("data.dir", paths.data_dir)
    lines.comment("")
    lines.comment("Bearer tokens (digests; chunkraft credentials add) and the super users.")
    lines.set("auth.credentials.file", paths.credentials_file)
    if super_users:
        lines.set("super.users", ";".join(super_users))
    _extra(lines, extra, _CONTROLLER_OWN, controller_setting_named, "controller")
    return lines.text()


def render_broker_properties(cluster: ClusterHosts, broker_id: int, address: str, *,
                             paths: BrokerPaths = BrokerPaths(), rack: str | None = None,
                             super_users: Sequence[str] = (ADMIN_PRINCIPAL,),
                             extra: Mapping[str, str] | None = None) -> str:
    """The ``broker.properties`` of broker ``broker_id`` on the host at ``address``.

    Its data plane listens on ``address`` (registered with the controllers as is, so clients
    and other brokers connect to it), and it reaches the quorum through every controller's
    host address. The principal of the token in ``paths.token_file`` must be
    ``User:broker-<broker_id>`` with CLUSTER_ACTION on the cluster (an ACL the operator adds).
    ``extra`` adds other real broker settings; ValueError for an unknown one, one the renderer
    writes, a relative path or an address another host cannot reach.
    """
    if not 0 <= broker_id <= 2**31 - 1:
        raise ValueError(f"broker id {broker_id} is outside 0 .. 2^31-1")
    listener = cluster.broker_url(address)
    for path, what in ((paths.log_dir, "log.dirs"), (paths.token_file, "broker.token.file"),
                       (paths.credentials_file, "auth.credentials.file")):
        _check_absolute(path, what)
    lines = _Lines()
    lines.comment(f"chunkraft broker {broker_id} on {address}: "
                  f"chunkraft broker --config {BROKER_PROPERTIES}")
    lines.set("node.id", broker_id)
    lines.set("cluster.id", cluster.cluster_id)
    if rack:
        lines.set("broker.rack", rack)
    lines.comment("")
    lines.comment("The controllers (any of them serves a broker) and this host's listener.")
    lines.set("controller.quorum.bootstrap.servers", cluster.bootstrap_servers)
    lines.set("listeners", listener)
    lines.comment("")
    lines.set("log.dirs", paths.log_dir)
    lines.comment("")
    lines.comment(f"Its own token (principal User:broker-{broker_id}), and the tokens it "
                  "accepts.")
    lines.set("broker.token.file", paths.token_file)
    lines.set("auth.credentials.file", paths.credentials_file)
    if super_users:
        lines.set("super.users", ";".join(super_users))
    _extra(lines, extra, _BROKER_OWN, broker_setting_named, "broker")
    return lines.text()


def render_command_config(token_file: Path) -> str:
    """A client host's ``--command-config`` file for the admin tools and the clients: it names
    the file that holds the admin's token (``bearer.token.file``), never the token itself."""
    _check_absolute(token_file, "bearer.token.file")
    lines = _Lines()
    lines.comment("chunkraft admin tools: --command-config (the token stays in its own file)")
    lines.set("bearer.token.file", token_file)
    return lines.text()

