"""Where a registered broker is reached: one rule for the controllers and the brokers alike.

A module of its own, outside ``chunkraft.api`` and ``chunkraft.broker_agent``, so each side
imports only this: importing anything under ``chunkraft.api.v3`` loads the whole REST
package, half a second of every broker's start-up (which counts against a restarted broker's
3 s to be registered and unfenced).
"""

from __future__ import annotations

from chunkraft.records import RegisterBrokerRecord

__all__ = ["broker_url"]


def broker_url(registration: RegisterBrokerRecord) -> str | None:
    """The base URL of a broker's HTTP API: its HTTP or HTTPS listener if it registered one,
    else its first listener; None if it registered none."""
    endpoints = registration.end_points
    if not endpoints:
        return None
    chosen = next((e for e in endpoints if e.name.upper() in ("HTTP", "HTTPS")), endpoints[0])
    scheme = "https" if chosen.name.upper() == "HTTPS" else "http"
    host = f"[{chosen.host}]" if ":" in chosen.host else chosen.host
    return f"{scheme}://{host}:{chosen.port}"
