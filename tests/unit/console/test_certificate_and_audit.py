"""The console with client certificates (a TLS extension in the ASGI scope, as uvicorn's
protocol of chunkraft.api.tls sets it) and its audit report route, in-process."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx

from chunkraft.api.authentication import Authenticator, forwarding_key
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from tests.unit.api.support import running_node

FORM = {"content-type": "application/x-www-form-urlencoded"}


def with_certificate(app: Any, holder: dict[str, str | None]) -> Any:
    """``app`` whose requests came over TLS with the client certificate ``holder["subject"]``
    (verified), or with none."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and holder["subject"] is not None:
            scope = {**scope, "extensions": {**scope.get("extensions", {}), "tls": {
                "client_cert_name": holder["subject"], "client_cert_error": None}}}
        await app(scope, receive, send)

    return wrapped


def test_a_certificate_logs_in_and_its_session_needs_the_same_certificate() -> None:
    async def main() -> None:
        authenticator = Authenticator(certificates=True, forwarding_key=forwarding_key("x"))
        holder: dict[str, str | None] = {"subject": None}
        async with running_node(authenticator=authenticator,
                                authorizer=Authorizer(["User:carol"])) as node:
            transport = httpx.ASGITransport(app=with_certificate(node.app, holder))
            async with httpx.AsyncClient(transport=transport, base_url="http://c1") as http:
                page = await http.get("/ui/login")
                assert "Log in as" not in page.text  # no certificate presented
                refused = await http.post("/ui/login", content="method=certificate",
                                          headers=FORM)
                assert refused.status_code == 401
                holder["subject"] = "CN=carol,O=ops"
                page = await http.get("/ui/login")
                assert "Log in as User:carol" in page.text
                assert 'name="token"' not in page.text  # no credentials file: no tokens
                done = await http.post("/ui/login", content="method=certificate&next=/ui",
                                       headers=FORM)
                assert done.status_code == 303 and done.headers["location"] == "/ui"
                cluster = await http.get("/ui/api/cluster")
                assert cluster.status_code == 200 and cluster.json()["quorum"] is not None
                holder["subject"] = "CN=mallory"  # another certificate, the same cookie
                assert (await http.get("/ui/api/cluster")).status_code == 401
                holder["subject"] = None
                assert (await http.get("/ui")).status_code == 303

    asyncio.run(main())


def test_the_newest_audit_report_is_served_to_who_may_describe_the_cluster(
        tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    tokens = {name: add_token(path, f"User:{name}") for name in ("admin", "alice")}
    exports = tmp_path / "exports"
    (exports / "audit").mkdir(parents=True)
    (exports / "audit" / "report.html").write_text("<html><body>audit findings</body></html>")

    async def main() -> None:
        authenticator = Authenticator(credentials=CredentialStore(path),
                                      forwarding_key=forwarding_key("x"))
        async with running_node(authenticator=authenticator, export_dir=exports,
                                authorizer=Authorizer(["User:admin"])) as node:
            for name, allowed in (("admin", True), ("alice", False)):
                node.http.cookies.clear()
                login = await node.http.post("/ui/login", content=f"token={tokens[name]}",
                                             headers=FORM)
                assert login.status_code == 303
                page = await node.http.get("/ui/audit")
                assert 'data-report="/ui/audit/report.html"' in page.text
                csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
                assert csrf is not None
                served = await node.http.get("/ui/audit/report.html")
                if allowed:
                    assert served.status_code == 200 and "audit findings" in served.text
                    assert "sandbox" in served.headers["content-security-policy"]
                else:
                    assert served.status_code == 403
                    assert served.json()["error_name"] == "CLUSTER_AUTHORIZATION_FAILED"

    asyncio.run(main())
