"""What ``chunkraft produce`` and ``chunkraft consume`` share: broker URLs, credentials and
Kafka-style ``--property`` / ``--producer-property`` / ``--consumer-property`` words.

The console clients talk to the brokers' data plane (``/broker/v1/...``), not to the
controllers: ``--bootstrap-server`` names broker URLs, as kafka-console-producer's does. Their
credentials come from the same ``--command-config`` file as the admin tools' (a bearer token
and TLS files), or the ``CHUNKRAFT_TOKEN`` environment variable.
"""

from __future__ import annotations

import argparse
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chunkraft.cli.input_files import load_command_config
from chunkraft.cli.output import ToolError
from chunkraft.client.admin import split_bootstrap

__all__ = [
    "ClientCredentials",
    "add_broker_connection_arguments",
    "boolean",
    "bootstrap_urls",
    "client_options",
    "integer",
    "load_credentials",
    "parse_properties_words",
    "property_flag",
    "text_value",
    "unescape",
]

@dataclass(frozen=True)
class ClientCredentials:
    """What a Producer or Consumer is built with: ``token=`` and ``verify=``."""

    token: str | None
    verify: ssl.SSLContext | bool


def add_broker_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap-server`` (broker URLs) and ``--command-config``."""
    parser.add_argument("--bootstrap-server", dest="bootstrap", metavar="URL[,URL...]",
                        required=True,
                        help="broker data-plane URLs, comma-separated (http://127.0.0.1:9092,"
                             "...); any of them will do, the rest are learnt from metadata")
    parser.add_argument("--command-config", metavar="FILE",
                        help="properties file with credentials: bearer.token=... or "
                             "bearer.token.file=..., ssl.ca.file=, ssl.certificate.file=, "
                             "ssl.key.file= (default: the CHUNKRAFT_TOKEN environment variable)")


def bootstrap_urls(text: str) -> list[str]:
    """``--bootstrap-server``'s URLs; ToolError for anything that is not http(s)://."""
    try:
        return split_bootstrap(text)
    except ValueError as error:
        raise ToolError(str(error)) from None


def load_credentials(path: str | None) -> ClientCredentials:
    """The token and TLS settings of ``--command-config`` (InputFileError or CommandConfigError
    if unusable).

    Without TLS files, https URLs are checked against the system's CAs (httpx's default)."""
    config = load_command_config(path)
    tls = config.ca_file is not None or config.certificate_file is not None
    return ClientCredentials(config.token, config.ssl_context() if tls else True)


def property_flag(parser: argparse.ArgumentParser, flag: str, help_text: str) -> None:
    """A repeatable ``--flag KEY=VALUE`` option (several pairs per word are fine too)."""
    parser.add_argument(flag, action="append", default=[], metavar="KEY=VALUE", nargs="+",
                        help=help_text)


def parse_properties_words(groups: Iterable[Iterable[str]], known: Iterable[str],
                           flag: str) -> dict[str, str]:
    """``[["parse.key=true", "key.separator=:"]]`` -> ``{"parse.key": "true", ...}``.

    ToolError for a word without ``=`` or a key not in ``known`` (a misspelt key would
    otherwise be ignored without a word)."""
    allowed = set(known)
    values: dict[str, str] = {}
    for words in groups:
        for word in words:
            key, sep, value = word.partition("=")
            key = key.strip()
            if not sep or not key:
                raise ToolError(f"{flag} {word!r}: expected KEY=VALUE")
            if key not in allowed:
                raise ToolError(f"{flag} {word!r}: unknown key {key!r} "
                                f"(known: {', '.join(sorted(allowed))})")
            values[key] = value
    return values


def unescape(text: str) -> str:
    r"""``\t``, ``\n``, ``\r`` and ``\\`` in a property value, as Kafka's tools read them."""
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char != "\\":
            out.append(char)
            continue
        following = next(chars, "\\")
        out.append({"t": "\t", "n": "\n", "r": "\r"}.get(following, following))
    return "".join(out)


def boolean(text: str, key: str) -> bool:
    """``true`` / ``false`` (any case); ToolError otherwise."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ToolError(f"property {key}={text!r}: expected true or false")
    return lowered == "true"


def integer(text: str, key: str) -> int:
    """An integer; ToolError otherwise."""
    try:
        return int(text.strip())
    except ValueError:
        raise ToolError(f"property {key}={text!r}: expected an integer") from None


def client_options(values: Mapping[str, str],
                   table: Mapping[str, tuple[str, Callable[[str, str], Any]]]
                   ) -> dict[str, Any]:
    """Kafka client property names -> the Python client's keyword arguments, converted
    (``{"linger.ms": "10"}`` with ``{"linger.ms": ("linger_ms", integer)}`` -> ``{"linger_ms":
    10}``)."""
    options: dict[str, Any] = {}
    for key, text in values.items():
        name, convert = table[key]
        options[name] = convert(text, key)
    return options


def text_value(text: str, key: str) -> str:
    """The text as is (a converter for :func:`client_options`)."""
    return text
