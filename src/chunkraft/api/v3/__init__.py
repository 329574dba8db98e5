"""The admin REST API, Confluent REST v3 style: ``/v3/clusters/{cluster_id}/...``.

STUB (being built): ``router`` is included by the app.
"""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["router"]

router = APIRouter(prefix="/v3")
