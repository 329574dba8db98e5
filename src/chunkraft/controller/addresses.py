"""Addresses in controller settings: Raft voters, the HTTP listener, and every controller's URL.

Forms, as an operator writes them::

    controller.quorum.voters  1@127.0.0.1:9093,2@127.0.0.1:9094,3@[::1]:9095
    listeners                 http://127.0.0.1:9090
    controller.http.urls      1@http://127.0.0.1:9090,2@http://127.0.0.1:9091

An IPv6 host is written in brackets. Parsers raise ValueError with a message that names the
offending entry; the caller adds the setting's name and where it came from.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "MAX_NODE_ID",
    "ControllerUrl",
    "Listener",
    "Voter",
    "is_wildcard",
    "parse_controller_urls",
    "parse_host_port",
    "parse_listener",
    "parse_node_id",
    "parse_voters",
]

MAX_NODE_ID = 2**31 - 1
"""Node ids are Kafka's int32 broker / controller ids."""

# A host is a name or an address: no spaces and none of the characters that separate entries.
_HOST = re.compile(r"[^\s/@,\[\]]+")
_DIGITS = re.compile(r"[0-9]+")
_WILDCARDS = frozenset({"0.0.0.0", "::"})


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class Voter(NamedTuple):
    """A member of the Raft quorum: its node id and the host:port of its Raft port."""

    node_id: int
    host: str
    port: int

    @property
    def address(self) -> str:
        """``host:port`` as pysyncobj takes it (it splits at the last colon: no IPv6 brackets)."""
        return f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.node_id}@{_bracketed(self.host)}:{self.port}"


class Listener(NamedTuple):
    """An HTTP endpoint: scheme (``http``), host and port."""

    scheme: str
    host: str
    port: int

    @property
    def url(self) -> str:
        """The endpoint as a URL, ``http://host:port`` (IPv6 host in brackets)."""
        return f"{self.scheme}://{_bracketed(self.host)}:{self.port}"

    def __str__(self) -> str:
        return self.url


class ControllerUrl(NamedTuple):
    """Where a controller's HTTP API answers: its node id and its URL (``http://host:port``)."""

    node_id: int
    url: str

    def __str__(self) -> str:
        return f"{self.node_id}@{self.url}"


def is_wildcard(host: str) -> bool:
    """Whether ``host`` means "every interface", an address a peer cannot connect to."""
    return host in _WILDCARDS


def parse_node_id(text: str) -> int:
    """A node id, 0 .. 2^31-1."""
    if not _DIGITS.fullmatch(text):
        raise ValueError(f"node id {text!r} is not a non-negative integer")
    value = int(text)
    if value > MAX_NODE_ID:
        raise ValueError(f"node id {value} is above {MAX_NODE_ID}")
    return value


def parse_host_port(text: str) -> tuple[str, int]:
    """``host:port`` or ``[ipv6]:port`` -> (host, port), port 1 .. 65535."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1 : close + 2] != ":":
            raise ValueError(f"{text!r} is not [ipv6-address]:port")
        host, port_text = text[1:close], text[close + 2 :]
        if not host or not _HOST.fullmatch(host):
            raise ValueError(f"{text!r} has no valid host between the brackets")
    else:
        host, colon, port_text = text.rpartition(":")
        if not colon:
            raise ValueError(f"{text!r} is not host:port")
        if ":" in host:
            raise ValueError(f"{text!r}: write an IPv6 host in brackets, [{host}]:{port_text}")
        if not _HOST.fullmatch(host):
            raise ValueError(f"{text!r} has no valid host before the port")
    if not _DIGITS.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r}: port must be a number from 1 to 65535")
    return host, int(port_text)


def _entries(text: str) -> list[str]:
    entries = [entry.strip() for entry in text.split(",")]
    for index, entry in enumerate(entries, start=1):
        if not entry:
            raise ValueError(f"entry {index} of {len(entries)} is empty")
    return entries


def _split_id(entry: str, form: str) -> tuple[int, str]:
    node_text, at, rest = entry.partition("@")
    if not at:
        raise ValueError(f"{entry!r} is not {form}")
    try:
        return parse_node_id(node_text.strip()), rest.strip()
    except ValueError as error:
        raise ValueError(f"{entry!r}: {error}") from None


def parse_voters(text: str) -> tuple[Voter, ...]:
    """``id@host:port,...`` -> voters in the order written; ValueError on a bad or repeated one.

    Two voters with the same id, or the same host and port, are refused.
    """
    voters: list[Voter] = []
    for entry in _entries(text):
        node_id, address = _split_id(entry, "id@host:port")
        try:
            host, port = parse_host_port(address)
        except ValueError as error:
            raise ValueError(f"voter {entry!r}: {error}") from None
        if is_wildcard(host):
            raise ValueError(f"voter {entry!r}: {host} is not an address a peer can connect to")
        voter = Voter(node_id, host, port)
        for other in voters:
            if other.node_id == voter.node_id:
                raise ValueError(f"node id {node_id} is given twice: {other} and {voter}")
            if (other.host.lower(), other.port) == (host.lower(), port):
                raise ValueError(f"{other} and {voter} have the same address")
        voters.append(voter)
    return tuple(voters)


def parse_listener(text: str) -> Listener:
    """``http://host:port`` or ``https://host:port`` -> Listener. Only one listener."""
    if "," in text:
        raise ValueError(f"{text!r}: only one listener is supported")
    scheme, sep, rest = text.partition("://")
    if not sep:
        raise ValueError(f"{text!r} is not http://host:port")
    scheme = scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"{text!r}: only http:// and https:// listeners are supported")
    rest = rest.removesuffix("/")
    if "/" in rest:
        raise ValueError(f"{text!r}: a listener has no path, only {scheme}://host:port")
    try:
        host, port = parse_host_port(rest)
    except ValueError as error:
        raise ValueError(f"{text!r}: {error}") from None
    return Listener(scheme, host, port)


def parse_controller_urls(text: str) -> tuple[ControllerUrl, ...]:
    """``id@http://host:port,...`` -> ControllerUrl in the order written; a repeated id refused."""
    urls: list[ControllerUrl] = []
    for entry in _entries(text):
        node_id, url_text = _split_id(entry, "id@http://host:port")
        try:
            listener = parse_listener(url_text)
        except ValueError as error:
            raise ValueError(f"{entry!r}: {error}") from None
        if is_wildcard(listener.host):
            raise ValueError(f"{entry!r}: {listener.host} is not an address one can connect to")
        for other in urls:
            if other.node_id == node_id:
                raise ValueError(f"node id {node_id} is given twice: {other} and {entry}")
        urls.append(ControllerUrl(node_id, listener.url))
    return tuple(urls)
