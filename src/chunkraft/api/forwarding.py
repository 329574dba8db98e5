"""Forwarding a write that reached a follower to the quorum's leader.

The follower keeps the request's idempotency key (generating one if the client sent none), so
if the leader dies mid-request a retry can never apply twice. A forwarded request carries
``X-Chunkraft-Forwarded``; a node that is not the leader either answers it with 421 instead of
forwarding again, so requests never bounce between nodes.

The client's credentials are not passed on: the follower authenticated the request, and sends
the principal in ``X-Chunkraft-Principal`` (and its host in ``X-Chunkraft-Principal-Host``)
signed with the controllers' forwarding key, so the leader authorizes the write as that
principal whether it came with a token or a client certificate the leader never saw. It also
sends its own origin (``X-Chunkraft-Forwarded-Origin``), so the links of the leader's answer
(``self``, ``next``, related resources) name the controller the client asked.

A forward waits for the leader's answer only while that node is still the leader the follower
knows: when an election names another one (the old leader was cut off, say: its connection
answers nothing until the request timeout), the forward is given up at once with a retriable
503 NOT_CONTROLLER naming both, so the client's retry, with the same idempotency key, reaches
the new leader within a second instead of after the whole request timeout.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import quote

import httpx
from fastapi import Request, Response

from chunkraft.api.authentication import (
    ORIGIN_HEADER,
    PRINCIPAL_HEADER,
    PRINCIPAL_HOST_HEADER,
    SIGNATURE_HEADER,
    principal_of,
    sign_principal,
)
from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import error_response
from chunkraft.error_codes import Errors

__all__ = ["FORWARDED_HEADER", "IDEMPOTENCY_HEADER", "OFFSET_HEADER", "forward_to_leader"]

FORWARDED_HEADER = "X-Chunkraft-Forwarded"
IDEMPOTENCY_HEADER = "Idempotency-Key"
OFFSET_HEADER = "X-Metadata-Offset"
_PASSED_HEADERS = ("content-type", "authorization")
"""Authorization goes along so the leader can forward it in turn (a chunk cut asks the
leader broker as the admin); the signed principal header, not the token, names the caller."""
LEADER_WAIT = 3.0
"""How long a follower waits for an election to name a leader before answering 503."""
LEADER_CHECK_INTERVAL = 0.05
"""How often a follower looks whether the leader it forwarded to is still the one it knows."""


async def forward_to_leader(
    context: ControllerContext, request: Request, body: bytes, key: bytes
) -> Response:
    """The leader's answer to this request, or 421 / 503 when there is no leader to ask."""
    if request.headers.get(FORWARDED_HEADER):
        return error_response(
            Errors.NOT_CONTROLLER,
            f"node {context.node_id} is not the leader (the request was already forwarded)",
            421,
        )
    deadline = time.monotonic() + LEADER_WAIT
    leader = context.controller.leader_id()
    while (leader is None or leader == context.node_id) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        leader = context.controller.leader_id()
        if leader == context.node_id and context.controller.is_leader():
            return error_response(Errors.NOT_CONTROLLER, "this node just became the leader; "
                                  "retry", 503)
    leader_url = None if leader is None else context.controller_url(leader)
    if leader is None or leader == context.node_id or leader_url is None:
        return error_response(Errors.NOT_CONTROLLER,
                              "the controller quorum has no leader at the moment; retry", 503)
    headers = {name: value for name, value in request.headers.items()
               if name.lower() in _PASSED_HEADERS}
    headers[IDEMPOTENCY_HEADER] = key.hex()
    headers[FORWARDED_HEADER] = str(context.node_id)
    principal = principal_of(request)
    headers[PRINCIPAL_HEADER] = quote(principal.name, safe="")  # a CN may be any Unicode
    headers[PRINCIPAL_HOST_HEADER] = quote(principal.host, safe="")
    headers[ORIGIN_HEADER] = str(request.base_url).rstrip("/")  # the answer's links name us
    headers[SIGNATURE_HEADER] = sign_principal(context.forwarding_key, principal, key.hex(),
                                               request.scope["path"])
    # The path as decoded, encoded again: a path parameter may hold any character (a config
    # key asked for is checked by the leader), and httpx refuses a URL with control characters.
    url = leader_url + quote(request.url.path, safe="/:@!$&'()*+,;=")
    if request.url.query:
        url += "?" + request.url.query
    forward = asyncio.ensure_future(context.client().request(request.method, url,
                                                             content=body, headers=headers))
    try:
        while not forward.done():
            await asyncio.wait({forward}, timeout=LEADER_CHECK_INTERVAL)
            now = context.controller.leader_id()
            if not forward.done() and now is not None and now != leader:
                forward.cancel()
                return error_response(
                    Errors.NOT_CONTROLLER,
                    f"the leader changed from node {leader} to node {now} while the request "
                    f"was forwarded; retry with the same {IDEMPOTENCY_HEADER}", 503)
        answer = forward.result()
    except httpx.HTTPError as error:
        return error_response(
            Errors.NOT_CONTROLLER,
            f"forwarding to the leader, node {leader}, failed ({type(error).__name__}); retry "
            f"with the same {IDEMPOTENCY_HEADER}", 503)
    finally:
        if not forward.done():
            forward.cancel()  # the client went away: the forward goes with it
    passed = {name: value for name, value in answer.headers.items()
              if name.lower() in ("content-type", OFFSET_HEADER.lower())}
    return Response(content=answer.content, status_code=answer.status_code, headers=passed)
