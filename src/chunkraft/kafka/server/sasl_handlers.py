"""The SASL exchange's two APIs on a Kafka listener, and the bare token of SaslHandshake v0.

SaslHandshake (17) v0-1 names the mechanism; SaslAuthenticate (36) v0-2 carries the client's
message (:class:`~chunkraft.kafka.server.sasl.KafkaAuthenticator` judges it). PLAIN and
OAUTHBEARER both finish in one round. A failure answers SASL_AUTHENTICATION_FAILED and closes
the connection after the answer; a handshake on a listener without SASL, a second handshake,
or an authenticate without a handshake answers ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

import logging
from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.server.connection import RAW_SASL
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest, KafkaSession
from chunkraft.kafka.server.sasl import KafkaAuthenticator, SaslFailure

__all__ = ["raw_sasl_token", "sasl_handlers"]

_log = logging.getLogger(__name__)
_MECHANISM = "sasl_mechanism"


def sasl_handlers(authenticator: KafkaAuthenticator) -> list[ApiHandler]:
    """SaslHandshake 0-1 and SaslAuthenticate 0-2, judged by ``authenticator``."""

    async def handshake(request: KafkaRequest) -> dict[str, Any]:
        session = request.session
        mechanisms = list(authenticator.mechanisms)
        mechanism = str(request.body.get("mechanism") or "")
        if not session.security_protocol.startswith("SASL_") or session.principal is not None \
                or _MECHANISM in session.extras:
            return {"error_code": Errors.ILLEGAL_SASL_STATE.code, "mechanisms": mechanisms}
        if mechanism not in mechanisms:
            session.extras["close_after_answer"] = True
            return {"error_code": Errors.UNSUPPORTED_SASL_MECHANISM.code,
                    "mechanisms": mechanisms}
        session.extras[_MECHANISM] = mechanism
        if request.version == 0:
            session.extras[RAW_SASL] = mechanism
        return {"error_code": 0, "mechanisms": mechanisms}

    async def authenticate(request: KafkaRequest) -> dict[str, Any]:
        session = request.session
        mechanism = session.extras.get(_MECHANISM)
        if mechanism is None or session.principal is not None:
            return {"error_code": Errors.ILLEGAL_SASL_STATE.code,
                    "error_message": "SaslAuthenticate without a SaslHandshake first",
                    "auth_bytes": b""}
        message = bytes(request.body.get("auth_bytes") or b"")
        try:
            _authenticated(authenticator, session, mechanism, message)
        except SaslFailure as failure:
            session.extras["close_after_answer"] = True
            return {"error_code": Errors.SASL_AUTHENTICATION_FAILED.code,
                    "error_message": str(failure), "auth_bytes": b""}
        return {"error_code": 0, "auth_bytes": b"", "session_lifetime_ms": 0}

    return [ApiHandler(17, 0, 1, handshake, before_authentication=True),
            ApiHandler(36, 0, 2, authenticate, before_authentication=True)]


def _authenticated(authenticator: KafkaAuthenticator, session: KafkaSession, mechanism: str,
                   message: bytes) -> None:
    try:
        principal, token = authenticator.authenticate(mechanism, message, session.peer_host)
    except SaslFailure as failure:
        _log.info("Kafka listener %s: SASL/%s authentication from %s failed: %s",
                  session.listener, mechanism, session.peer_host, failure)
        raise
    session.principal, session.token, session.mechanism = principal, token, mechanism


async def raw_sasl_token(authenticator: KafkaAuthenticator, session: KafkaSession,
                         mechanism: str, token: bytes) -> bytes | None:
    """The bare answer to a bare SASL token (after SaslHandshake v0): empty when it
    authenticated, None when it did not (the connection closes)."""
    try:
        _authenticated(authenticator, session, mechanism, token)
    except SaslFailure:
        return None
    return b""
