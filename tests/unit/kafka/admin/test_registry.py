"""admin_handlers: the keys, version ranges and privacy ApiVersions will advertise, and each
handler bound to the gateway it was given."""

from __future__ import annotations

import asyncio
from typing import Any

from chunkraft.kafka.admin.common import ROUTES, AdminApi
from chunkraft.kafka.admin.registry import admin_handlers
from chunkraft.kafka.codec.messages import api_specs
from chunkraft.protocol.acls import CreateAclsResponse
from tests.unit.kafka.admin.support import FakeGateway, from_ours

EXPECTED = {
    19: (2, 7, False), 20: (1, 6, False), 37: (0, 3, False),
    32: (1, 4, False), 33: (0, 2, False), 44: (0, 1, False),
    29: (1, 3, False), 30: (1, 3, False), 31: (1, 3, False),
    17000: (0, 0, True), 17001: (0, 0, True),
}


def test_the_keys_and_ranges_are_exactly_the_served_ones() -> None:
    handlers = admin_handlers(FakeGateway({}))
    assert {h.api_key: (h.min_version, h.max_version, h.private) for h in handlers} == EXPECTED
    assert len(handlers) == len(EXPECTED)
    assert not any(h.before_authentication for h in handlers)


def test_every_range_is_inside_the_definitions_valid_versions() -> None:
    for handler in admin_handlers(FakeGateway({})):
        spec = api_specs()[handler.api_key]
        for version in (handler.min_version, handler.max_version):
            assert version in spec.request.valid and version in spec.response.valid


def test_a_handler_runs_over_the_gateway_it_was_bound_to() -> None:
    gateway = FakeGateway({ROUTES[AdminApi.CREATE_ACLS]: CreateAclsResponse()})
    (handler,) = [h for h in admin_handlers(gateway) if h.api_key == AdminApi.CREATE_ACLS]
    request = from_ours(AdminApi.CREATE_ACLS, "CreateAcls", 3, {"creations": []})

    async def handle() -> dict[str, Any]:
        return await handler.handle(request)

    response = asyncio.run(handle())
    assert response == {"throttle_time_ms": 0, "results": []}
    assert gateway.calls == [(ROUTES[AdminApi.CREATE_ACLS], {"creations": []})]
