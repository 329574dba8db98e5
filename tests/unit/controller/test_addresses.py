"""Voter, listener and controller-URL forms (chunkraft.controller.addresses)."""

from __future__ import annotations

import pytest

from chunkraft.controller.addresses import (
    ControllerUrl,
    Listener,
    Voter,
    is_wildcard,
    parse_controller_urls,
    parse_host_port,
    parse_listener,
    parse_node_id,
    parse_voters,
)


def test_voters_keep_their_order_and_spaces_are_dropped() -> None:
    voters = parse_voters(" 3@c:9095, 1@a.example:9093 ,2@[fe80::1]:9094")
    assert voters == (Voter(3, "c", 9095), Voter(1, "a.example", 9093), Voter(2, "fe80::1", 9094))
    assert [str(v) for v in voters] == ["3@c:9095", "1@a.example:9093", "2@[fe80::1]:9094"]
    assert voters[2].address == "fe80::1:9094"


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [("h:1", "h", 1), ("10.0.0.1:65535", "10.0.0.1", 65535), ("[::1]:9093", "::1", 9093)],
)
def test_host_port(text: str, host: str, port: int) -> None:
    assert parse_host_port(text) == (host, port)


@pytest.mark.parametrize("text", ["h", ":1", "h:", "h:1x", "[::1]", "[]:1", "a b:1", "h:00000"])
def test_bad_host_port(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text).replace("[", r"\[").replace("]", r"\]")):
        parse_host_port(text)


def test_node_ids() -> None:
    assert parse_node_id("0") == 0
    assert parse_node_id("2147483647") == 2**31 - 1
    for text in ("", "+1", "1.0", "2147483648", "\u0661"):
        with pytest.raises(ValueError):
            parse_node_id(text)


def test_listener() -> None:
    assert parse_listener("HTTP://[::1]:80/") == Listener("http", "::1", 80)
    assert parse_listener("http://[::1]:80").url == "http://[::1]:80"
    assert str(Listener("http", "h", 1)) == "http://h:1"
    assert parse_listener("HTTPS://127.0.0.1:8443") == Listener("https", "127.0.0.1", 8443)


def test_controller_urls_are_normalized() -> None:
    assert parse_controller_urls("1@HTTP://a:1/, 2@http://[::1]:2") == (
        ControllerUrl(1, "http://a:1"),
        ControllerUrl(2, "http://[::1]:2"),
    )


def test_wildcards() -> None:
    assert is_wildcard("0.0.0.0") and is_wildcard("::")
    assert not is_wildcard("127.0.0.1") and not is_wildcard("localhost")
