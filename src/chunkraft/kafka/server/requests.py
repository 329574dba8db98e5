"""What a Kafka request handler is given and what it gives back.

A connection (:mod:`chunkraft.kafka.server.connection`) decodes each frame's header and body
with the codec and hands the handler of its API key a :class:`KafkaRequest`: the header, the
body as a dict (Kafka's field names in snake_case, see :mod:`chunkraft.kafka.schema.specs`)
and the connection's :class:`KafkaSession` (who is asking, on which listener). The handler
returns the response body as a dict for the same API key and version (or that body already
encoded); the connection writes it behind the response header. Handlers never read frames and
never close a connection: an exception is logged and closes that connection only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.codec.messages import RequestHeader
from chunkraft.security.principal import Principal

__all__ = [
    "ApiHandler",
    "Handle",
    "KafkaRequest",
    "KafkaRequestError",
    "KafkaSession",
]


@dataclass
class KafkaSession:
    """One client connection's identity: set once its authentication completes.

    ``principal`` is None until then (only ApiVersions and the SASL exchange are served).
    ``token`` is the bearer token the client authenticated with (SASL PLAIN's password,
    OAUTHBEARER's token), kept so a broker can forward an admin request to the controllers as
    that client; None for a client certificate or an anonymous listener. ``listener`` is the
    listener's name (``SASL_PLAINTEXT``, say): Metadata answers every broker's endpoint on the
    listener of the same name, as Kafka does. ``peer_host`` is the client's address (for ACLs
    that name hosts).
    """

    listener: str
    security_protocol: str
    peer_host: str
    principal: Principal | None = None
    token: str | None = None
    mechanism: str | None = None
    client_software: tuple[str, str] | None = None
    """(name, version) from ApiVersions v3+, for logs."""
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KafkaRequest:
    """A decoded request: header, body (snake_case dict) and the connection's session."""

    header: RequestHeader
    body: dict[str, Any]
    session: KafkaSession

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def principal(self) -> Principal:
        """The authenticated principal (handlers only run after authentication)."""
        if self.session.principal is None:
            raise RuntimeError("a handler ran on a connection that is not authenticated")
        return self.session.principal


class KafkaRequestError(Exception):
    """The whole request failed with ``error``: the handler's API answers it the way Kafka does
    for a request-level error (:func:`chunkraft.kafka.admin.errors.whole_request_error`)."""

    def __init__(self, error: Errors, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


Handle = Callable[[KafkaRequest], Awaitable[dict[str, Any] | bytes | None]]
"""A handler's answer: the response body as a dict, or already encoded at the request's
version (a Metadata answer written from kept per-topic bytes), or None for no answer at all
(a Produce with acks=0, which Kafka never answers)."""


@dataclass(frozen=True, slots=True)
class ApiHandler:
    """An API key this listener serves, over versions ``min_version``..``max_version``.

    ``private`` keys (chunkraft's own, 17000 and up) are listed in ApiVersions only to a
    client that asked for them (kafka-python's ``api_versions()`` raises on a key it does not
    know). ``before_authentication`` marks the few APIs a connection may use before it has
    authenticated (ApiVersions, SaslHandshake, SaslAuthenticate).
    """

    api_key: int
    min_version: int
    max_version: int
    handle: Handle
    private: bool = False
    before_authentication: bool = False
