"""Prometheus metrics of a controller node: ``GET /metrics``.

STUB (being built): ``install_metrics`` will add the request middleware and the route.
"""

from __future__ import annotations

from fastapi import FastAPI

__all__ = ["install_metrics"]


def install_metrics(app: FastAPI) -> None:
    """Adds the request-metrics middleware and ``GET /metrics`` to ``app``."""
