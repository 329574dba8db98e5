"""``/v3/clusters/{cluster_id}/brokers[/{broker_id}]``: registered brokers, by id.

Any authenticated principal may read them. An unknown broker id is a 404 BROKER_NOT_AVAILABLE.
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Request, Response

from chunkraft.api.errors import error_response
from chunkraft.api.parameters import BrokerIdPath, MinOffset, PageSize, PageToken, WaitMs
from chunkraft.api.v3.common import (
    ERROR_RESPONSES,
    Links,
    at_offset,
    json_answer,
    read_image,
)
from chunkraft.api.v3.encoding import broker_dict, list_json
from chunkraft.api.v3.models import KafkaBroker, KafkaBrokerList
from chunkraft.api.v3.pagination import DEFAULT_PAGE_SIZE, paginate
from chunkraft.error_codes import Errors

__all__ = ["router"]

router = APIRouter(tags=["v3 brokers"])


@router.get("/clusters/{cluster_id}/brokers", summary="Registered brokers, by id",
            response_model=None, responses={200: {"model": KafkaBrokerList}, **ERROR_RESPONSES})
async def list_brokers(request: Request, cluster_id: str, min_offset: MinOffset = -1,
                       wait_ms: WaitMs = 5000, page_size: PageSize = DEFAULT_PAGE_SIZE,
                       page_token: PageToken = None) -> Response:
    image = await read_image(request, cluster_id, min_offset, wait_ms)
    if isinstance(image, Response):
        return image
    links = Links(request, cluster_id)
    registrations = image.brokers.registrations
    page = paginate(request, sorted(registrations), int, page_size, page_token)
    if isinstance(page, Response):
        return page
    items = [json.dumps(broker_dict(links, registrations[b]), separators=(",", ":"))
             for b in page.items]
    return json_answer(list_json("KafkaBrokerList", links.brokers(), page.next, image.offset,
                                 items), image.offset)


@router.get("/clusters/{cluster_id}/brokers/{broker_id}", summary="One registered broker",
            response_model=None, responses={200: {"model": KafkaBroker}, **ERROR_RESPONSES})
async def get_broker(request: Request, cluster_id: str, broker_id: BrokerIdPath,
                     min_offset: MinOffset = -1, wait_ms: WaitMs = 5000) -> Response:
    image = await read_image(request, cluster_id, min_offset, wait_ms)
    if isinstance(image, Response):
        return image
    broker = image.brokers.get(broker_id)
    if broker is None:
        return at_offset(error_response(Errors.BROKER_NOT_AVAILABLE,
                                        f"broker {broker_id} is not registered", 404),
                         image.offset)
    return json_answer(broker_dict(Links(request, cluster_id), broker, image.offset),
                       image.offset)
