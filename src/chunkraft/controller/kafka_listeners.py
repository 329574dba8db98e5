"""Listeners in Kafka's syntax: one HTTP listener and any number of Kafka-protocol listeners.

An operator writes them as Kafka does, comma-separated in ``listeners`` (and
``advertised.listeners``)::

    listeners  http://127.0.0.1:9090,SASL_PLAINTEXT://127.0.0.1:9092,SSL://:9093

``http://`` and ``https://`` entries are the REST and RPC surface (exactly one); every other
entry is ``NAME://host:port`` of a Kafka-protocol listener, whose security protocol is its name
when the name is one of ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL``, or what
``listener.security.protocol.map`` (``NAME:PROTOCOL,...``) maps it to. An empty host binds every
interface, as in Kafka. Names are unique, and so are ports.

Parsers raise ValueError with a message naming the offending entry; the configuration adds the
setting's name and where it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from chunkraft.controller.addresses import (
    Listener,
    parse_host_port,
    parse_listener,
    parse_node_id,
)

__all__ = [
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "KafkaListener",
    "ListenerEntry",
    "advertised_kafka",
    "kafka_listeners",
    "parse_kafka_endpoints",
    "parse_listener_entries",
    "parse_mechanisms",
    "parse_protocol_map",
    "rest_listener",
]

SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
"""Kafka's security protocols and their ids (Kafka's ``SecurityProtocol``)."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


class ListenerEntry(NamedTuple):
    """One entry of ``listeners`` as written: an HTTP listener (``http`` set) or a Kafka one."""

    name: str
    host: str
    port: int
    http: Listener | None = None


class KafkaListener(NamedTuple):
    """A Kafka-protocol listener: its name, security protocol, host and port."""

    name: str
    security_protocol: str
    host: str
    port: int

    @property
    def address(self) -> str:
        """``host:port`` (an IPv6 host in brackets), Kafka's bootstrap-server form."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def protocol_id(self) -> int:
        return SECURITY_PROTOCOLS[self.security_protocol]

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def __str__(self) -> str:
        return f"{self.name}://{self.address}"


def parse_listener_entries(text: str) -> tuple[ListenerEntry, ...]:
    """``listeners`` as written -> its entries, in order; names and ports checked unique."""
    entries: list[ListenerEntry] = []
    for raw in (part.strip() for part in text.split(",")):
        if not raw:
            raise ValueError(f"{text!r} has an empty entry")
        name, sep, rest = raw.partition("://")
        if not sep:
            raise ValueError(f"{raw!r} is not http://host:port (nor a Kafka listener, "
                             "NAME://host:port)")
        if name.lower() in ("http", "https"):
            http = parse_listener(raw)
            entry = ListenerEntry(name.upper(), http.host, http.port, http)
        else:
            if not _NAME.fullmatch(name):
                raise ValueError(f"{raw!r}: {name!r} is not a listener name (letters, digits, "
                                 "_ . -, starting with a letter)")
            rest = rest.removesuffix("/")
            host_port = f"0.0.0.0{rest}" if rest.startswith(":") else rest
            try:
                host, port = parse_host_port(host_port)
            except ValueError as error:
                raise ValueError(f"{raw!r}: {error}") from None
            entry = ListenerEntry(name.upper(), host, port)
        if entry.http is not None and rest_listener(tuple(entries)) is not None:
            raise ValueError(f"{text!r}: only one http:// or https:// listener")
        for other in entries:
            if other.name == entry.name:
                raise ValueError(f"listener name {entry.name} is given twice")
            if other.port == entry.port and entry.port != 0:
                raise ValueError(f"port {entry.port} is given twice ({other.name} and "
                                 f"{entry.name})")
        entries.append(entry)
    return tuple(entries)


def parse_protocol_map(text: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL}."""
    mapping: dict[str, str] = {}
    for raw in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, protocol = raw.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not _NAME.fullmatch(name):
            raise ValueError(f"{raw!r} is not NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"{raw!r}: {protocol or '(empty)'} is not one of "
                             f"{', '.join(SECURITY_PROTOCOLS)}")
        mapping[name] = protocol
    return mapping


def rest_listener(entries: tuple[ListenerEntry, ...]) -> Listener | None:
    """The HTTP listener among ``entries``, or None."""
    return next((entry.http for entry in entries if entry.http is not None), None)


def kafka_listeners(entries: tuple[ListenerEntry, ...],
                    protocol_map: Mapping[str, str]) -> tuple[KafkaListener, ...]:
    """The Kafka listeners among ``entries``, each with its security protocol."""
    found = []
    for entry in entries:
        if entry.http is not None:
            continue
        protocol = protocol_map.get(entry.name)
        if protocol is None:
            if entry.name not in SECURITY_PROTOCOLS:
                raise ValueError(
                    f"listener {entry.name}://{entry.host}:{entry.port}: {entry.name} is not a "
                    "security protocol; map it in listener.security.protocol.map "
                    f"({entry.name}:SASL_PLAINTEXT, say)")
            protocol = entry.name
        found.append(KafkaListener(entry.name, protocol, entry.host, entry.port))
    return tuple(found)


SASL_MECHANISMS = ("PLAIN", "OAUTHBEARER")
"""The SASL mechanisms a Kafka listener can offer."""


def parse_mechanisms(text: str) -> tuple[str, ...]:
    """``sasl.enabled.mechanisms``: ``PLAIN,OAUTHBEARER`` -> ("PLAIN", "OAUTHBEARER")."""
    found: list[str] = []
    for raw in (part.strip().upper() for part in text.split(",") if part.strip()):
        if raw not in SASL_MECHANISMS:
            raise ValueError(f"{raw!r} is not one of {', '.join(SASL_MECHANISMS)}")
        if raw not in found:
            found.append(raw)
    if not found:
        raise ValueError("name at least one mechanism")
    return tuple(found)


def parse_kafka_endpoints(text: str) -> tuple[tuple[int, str, int], ...]:
    """``id@host:port,...`` (every controller's Kafka listener, for ``--bootstrap-controller``
    answers) -> ((id, host, port), ...); a repeated id refused."""
    found: list[tuple[int, str, int]] = []
    for raw in (part.strip() for part in text.split(",") if part.strip()):
        node, sep, rest = raw.partition("@")
        if not sep or not node.isdigit():
            raise ValueError(f"{raw!r} is not id@host:port")
        try:
            node_id = parse_node_id(node)
            host, port = parse_host_port(rest)
        except ValueError as error:
            raise ValueError(f"{raw!r}: {error}") from None
        if any(entry[0] == node_id for entry in found):
            raise ValueError(f"node id {node_id} is given twice")
        found.append((node_id, host, port))
    return tuple(found)


def advertised_kafka(listeners: tuple[KafkaListener, ...],
                     advertised: tuple[KafkaListener, ...]) -> tuple[KafkaListener, ...]:
    """Each Kafka listener as others reach it: its ``advertised.listeners`` entry of the same
    name, else itself (refused when it binds every interface: nobody can connect there)."""
    by_name = {entry.name: entry for entry in advertised}
    unknown = set(by_name) - {entry.name for entry in listeners}
    if unknown:
        raise ValueError(f"advertised listener {', '.join(sorted(unknown))} is not among the "
                         "listeners")
    result = []
    for entry in listeners:
        shown = by_name.get(entry.name, entry)
        if shown.host in ("0.0.0.0", "::"):
            raise ValueError(f"listener {entry} binds every interface: give "
                             f"{entry.name}://<reachable host>:{entry.port} in "
                             "advertised.listeners")
        result.append(shown)
    return tuple(result)
