"""Authentication (chunkraft.api.authentication): the middleware, tokens, certificates, and
principals forwarded between controllers, in-process over httpx's ASGI transport."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from chunkraft.api.authentication import (
    EXEMPT_PATHS,
    PRINCIPAL_HEADER,
    PRINCIPAL_HOST_HEADER,
    SIGNATURE_HEADER,
    AuthenticationFailed,
    AuthenticationMiddleware,
    Authenticator,
    certificate_principal,
    forwarding_key,
    install_authentication,
    principal_of,
    sign_principal,
)
from chunkraft.error_codes import Errors
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from chunkraft.security.principal import Principal
from tests.unit.api.support import FollowerRaft, running_node, start_brokers

KEY = forwarding_key("raft-password")
LEADER_URL = "http://leader.invalid:9090"


class Context:
    def __init__(self, authenticator: Authenticator | None) -> None:
        self.authenticator = authenticator


def echo_app(authenticator: Authenticator | None) -> FastAPI:
    """An app whose every route answers the principal the middleware found."""
    app = FastAPI()
    app.state.context = Context(authenticator)
    install_authentication(app)

    async def whoami(request: Request) -> JSONResponse:
        principal = principal_of(request)
        return JSONResponse({"name": principal.name, "host": principal.host})

    app.add_api_route("/whoami", whoami, methods=["GET"])
    for path in EXEMPT_PATHS - {"/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect"}:
        app.add_api_route(path, whoami, methods=["GET"], operation_id=path.strip("/"))
    return app


def call(app: FastAPI, path: str = "/whoami", **kwargs: Any) -> httpx.Response:
    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=("10.0.0.7", 5555))
        async with httpx.AsyncClient(transport=transport, base_url="http://controller") as http:
            return await http.get(path, **kwargs)

    return asyncio.run(run())


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "credentials.json"
    return path, add_token(path, "User:alice")


def authenticator(path: Path, **options: Any) -> Authenticator:
    return Authenticator(credentials=CredentialStore(path), forwarding_key=KEY, **options)


def test_a_bearer_token_authenticates_its_principal_from_the_client_host(
        tokens: tuple[Path, str]) -> None:
    path, token = tokens
    answer = call(echo_app(authenticator(path)), headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200
    assert answer.json() == {"name": "User:alice", "host": "10.0.0.7"}
    lower = call(echo_app(authenticator(path)), headers={"Authorization": f"bearer  {token}"})
    assert lower.json()["name"] == "User:alice"


@pytest.mark.parametrize(("headers", "message", "challenge"), [
    ({}, "authentication required: send Authorization: Bearer <token>", 'Bearer realm="chunkraft"'),
    ({"Authorization": "Bearer crt_nope"}, "invalid bearer token", 'error="invalid_token"'),
    ({"Authorization": "Basic YWxpY2U6cHc="}, "must be 'Bearer <token>'",
     'error="invalid_request"'),
    ({"Authorization": "Bearer "}, "must be 'Bearer <token>'", 'error="invalid_request"'),
])
def test_missing_or_bad_credentials_are_a_401_with_the_error_body(
        tokens: tuple[Path, str], headers: dict[str, str], message: str, challenge: str) -> None:
    answer = call(echo_app(authenticator(tokens[0])), headers=headers)
    assert answer.status_code == 401
    body = answer.json()
    assert body["error_code"] == 58 and body["error_name"] == "SASL_AUTHENTICATION_FAILED"
    assert message in body["message"]
    assert challenge in answer.headers["www-authenticate"]
    assert answer.headers["www-authenticate"].startswith("Bearer")


def test_health_and_docs_need_no_credentials(tokens: tuple[Path, str]) -> None:
    app = echo_app(authenticator(tokens[0]))
    for path in ("/healthz", "/readyz"):
        answer = call(app, path)
        assert answer.status_code == 200 and answer.json()["name"] == "User:ANONYMOUS"
    assert call(app, "/openapi.json").status_code == 200
    assert call(app, "/docs").status_code == 200


def test_anonymous_only_when_allowed(tokens: tuple[Path, str]) -> None:
    app = echo_app(authenticator(tokens[0], allow_anonymous=True))
    assert call(app).json() == {"name": "User:ANONYMOUS", "host": "10.0.0.7"}
    # a bad token is still refused: anonymity is for requests without credentials
    assert call(app, headers={"Authorization": "Bearer crt_nope"}).status_code == 401


def test_without_an_authenticator_everyone_is_anonymous() -> None:
    answer = call(echo_app(None))
    assert answer.status_code == 200 and answer.json()["name"] == "User:ANONYMOUS"


def test_tokens_are_refused_without_a_credentials_file() -> None:
    app = echo_app(Authenticator(certificates=True))
    answer = call(app, headers={"Authorization": "Bearer crt_x"})
    assert answer.status_code == 401
    assert "no auth.credentials.file" in answer.json()["message"]
    assert "present a client certificate" in call(app).json()["message"]


def scope(headers: list[tuple[bytes, bytes]], tls: dict[str, Any] | None = None,
          path: str = "/controller/v1/create-topics") -> dict[str, Any]:
    value: dict[str, Any] = {"type": "http", "path": path, "headers": headers,
                             "client": ("10.0.0.9", 1)}
    if tls is not None:
        value["extensions"] = {"tls": tls}
    return value


def test_a_verified_client_certificate_is_user_cn() -> None:
    with_certificates = Authenticator(certificates=True)
    tls = {"client_cert_name": "CN=alice,OU=ops,O=Example", "client_cert_error": None}
    assert with_certificates.authenticate(scope([], tls)) == Principal("User:alice", "10.0.0.9")
    # a token wins over the certificate (a CLI on a host with a certificate, as a user)
    with pytest.raises(AuthenticationFailed, match=r"no auth\.credentials\.file"):
        with_certificates.authenticate(scope([(b"authorization", b"Bearer crt_x")], tls))
    # no certificate, or certificates not enabled: no principal from TLS
    with pytest.raises(AuthenticationFailed):
        with_certificates.authenticate(scope([], {"client_cert_name": None}))
    with pytest.raises(AuthenticationFailed):
        Authenticator(credentials=None).authenticate(scope([], tls))
    with pytest.raises(AuthenticationFailed):
        with_certificates.authenticate(scope([], {**tls, "client_cert_error": "expired"}))


@pytest.mark.parametrize(("subject", "principal"), [
    ("CN=alice", "User:alice"),
    ("CN=broker-1,OU=kafka,O=Example\\, Inc.", "User:broker-1"),
    ("O=Example,CN=ctl 2", "User:ctl 2"),
    ("CN=a\\,b+SN=x", "User:a,b"),
    ("O=Example", None),
])
def test_certificate_principal(subject: str, principal: str | None) -> None:
    assert certificate_principal(subject) == principal


def forwarded_headers(principal: Principal, key: bytes = KEY, idempotency: str = "ab" * 16,
                      path: str = "/controller/v1/create-topics") -> list[tuple[bytes, bytes]]:
    from urllib.parse import quote

    return [(PRINCIPAL_HEADER.lower().encode(), quote(principal.name, safe="").encode()),
            (PRINCIPAL_HOST_HEADER.lower().encode(), quote(principal.host, safe="").encode()),
            (SIGNATURE_HEADER.lower().encode(),
             sign_principal(key, principal, idempotency, path).encode()),
            (b"idempotency-key", idempotency.encode())]


def test_a_signed_forwarded_principal_is_trusted_as_it_was_on_the_follower() -> None:
    node = Authenticator(forwarding_key=KEY)
    alice = Principal("User:CN=alice, O=x ü", "10.1.1.1")
    assert node.authenticate(scope(forwarded_headers(alice))) == alice


@pytest.mark.parametrize("tamper", ["key", "path", "idempotency", "principal", "unsigned"])
def test_a_forged_forwarded_principal_is_refused(tamper: str) -> None:
    node = Authenticator(forwarding_key=KEY, allow_anonymous=True)
    alice = Principal("User:alice", "10.1.1.1")
    headers = forwarded_headers(
        alice, key=forwarding_key("guess") if tamper == "key" else KEY,
        path="/controller/v1/delete-topics" if tamper == "path" else
        "/controller/v1/create-topics")
    if tamper == "idempotency":
        headers[-1] = (b"idempotency-key", b"cd" * 16)
    if tamper == "principal":
        headers[0] = (headers[0][0], b"User%3Aadmin")
    if tamper == "unsigned":
        headers = headers[:2]
    with pytest.raises(AuthenticationFailed):
        node.authenticate(scope(headers))
    # and never accepted by a node that has no forwarding key
    with pytest.raises(AuthenticationFailed, match="only accepted from another controller"):
        Authenticator(allow_anonymous=True).authenticate(scope(forwarded_headers(alice)))


def test_the_middleware_passes_other_scope_types() -> None:
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    middleware = AuthenticationMiddleware(inner, Authenticator())
    asyncio.run(middleware({"type": "lifespan"}, None, None))  # type: ignore[arg-type]
    assert seen == ["lifespan"]


def test_a_write_forwarded_by_a_follower_runs_as_the_followers_principal(
        tokens: tuple[Path, str]) -> None:
    """End to end in-process: a token the follower checked becomes a signed principal the
    leader trusts (alice, a super user, may create the topic; bob may not). The token goes
    along only so the leader can ask a broker as the caller (a chunk cut); the leader runs the
    write as the signed principal."""
    path, alice = tokens
    bob = add_token(path, "User:bob")
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request)

    def topic(name: str) -> dict[str, Any]:
        return {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}]}

    async def scenario() -> None:
        async with running_node(node_id=1, authenticator=authenticator(path),
                                authorizer=Authorizer(["User:alice"]),
                                forwarding_key=KEY) as leader:
            leader.http.headers["Authorization"] = f"Bearer {alice}"
            await start_brokers(leader)
            to_leader = httpx.AsyncClient(transport=httpx.ASGITransport(app=leader.app),
                                          event_hooks={"request": [record]})
            async with running_node(FollowerRaft(2, leader=1),
                                    controller_urls={1: LEADER_URL, 2: "http://follower"},
                                    forward_client=to_leader,
                                    authenticator=authenticator(path),
                                    forwarding_key=KEY) as follower:
                answer = await follower.post("create-topics", topic("by-alice"),
                                             headers={"Authorization": f"Bearer {alice}"})
                assert answer.status_code == 200, answer.text
                assert answer.json()["topics"][0]["error_code"] == 0, answer.text
                forwarded = seen[-1]
                assert forwarded.headers["authorization"] == f"Bearer {alice}"
                assert forwarded.headers[PRINCIPAL_HEADER] == "User%3Aalice"
                refused = await follower.post("create-topics", topic("by-bob"),
                                              headers={"Authorization": f"Bearer {bob}"})
                assert refused.status_code == 200, refused.text
                assert refused.json()["topics"][0]["error_code"] == (
                    Errors.TOPIC_AUTHORIZATION_FAILED.code), refused.text
                assert seen[-1].headers[PRINCIPAL_HEADER] == "User%3Abob"
            await to_leader.aclose()

    asyncio.run(scenario())
