"""Fetches what an export is made of over HTTP: a controller's snapshot, a broker's state.

``GET /controller/v1/snapshot`` (CLUSTER_ACTION) streams the committed image as snapshot
batches; it is saved under its snapshot name (``<end>-<epoch>.checkpoint``) in a hidden
directory next to the export, exported, and removed. ``GET /broker/v1/local-replicas``
(DESCRIBE) answers JSON. Both use the admin tools' credentials (``--command-config``). A
refusal raises :class:`DownloadError` carrying the Kafka error name and code the server gave.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from chunkraft.client.admin import split_bootstrap
from chunkraft.client.command_config import CommandConfig
from chunkraft.export.manifest import ExportError, Manifest
from chunkraft.export.snapshot_export import export_snapshot
from chunkraft.records.files import snapshot_name

__all__ = ["DownloadError", "download_snapshot", "export_from_controller", "fetch_json"]


class DownloadError(ExportError):
    """A server refused or failed a download; ``status``/``error_name``/``error_code`` are
    what it answered (None when no server answered)."""

    def __init__(self, message: str, status: int | None = None, error_name: str | None = None,
                 error_code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_name = error_name
        self.error_code = error_code


def _client(url: str, config: CommandConfig, timeout: float) -> httpx.Client:
    verify: Any = config.ssl_context() if url.startswith("https://") else True
    return httpx.Client(timeout=timeout, headers=config.headers(), verify=verify)


def _refusal(url: str, answer: httpx.Response) -> DownloadError:
    answer.read()
    try:
        body = answer.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "error_code" in body:
        name = str(body.get("error_name") or "UNKNOWN_SERVER_ERROR")
        code = int(body["error_code"])
        message = str(body.get("message") or "")
        return DownloadError(f"{url}: HTTP {answer.status_code} {name} (error code {code})"
                             + (f": {message}" if message else ""),
                             answer.status_code, name, code)
    text = answer.text.strip().replace("\n", " ")[:200]
    return DownloadError(f"{url}: HTTP {answer.status_code} {answer.reason_phrase}"
                         + (f": {text}" if text else ""), answer.status_code)


@contextlib.contextmanager
def _first_answer(bootstrap: str, path: str, config: CommandConfig,
                  timeout: float) -> Iterator[tuple[str, httpx.Response]]:
    """The streamed answer of the first server of ``bootstrap`` that answers ``GET path``
    (servers that cannot be reached are skipped; an error answer raises DownloadError)."""
    try:
        urls = split_bootstrap(bootstrap)
    except ValueError as error:
        raise DownloadError(str(error)) from None
    failures: list[str] = []
    for base in urls:
        url = base + path
        with _client(url, config, timeout) as client:
            try:
                with client.stream("GET", url) as answer:
                    if answer.status_code != 200:
                        raise _refusal(url, answer)
                    yield url, answer
                    return
            except httpx.TransportError as error:
                failures.append(f"{url}: {error or type(error).__name__}")
    raise DownloadError("no server answered: " + "; ".join(failures))


def download_snapshot(bootstrap: str, directory: Path, config: CommandConfig | None = None,
                      timeout: float = 60.0) -> tuple[str, Path]:
    """Saves a controller's snapshot into ``directory`` (created); returns ``(url, path)``."""
    config = config or CommandConfig()
    with _first_answer(bootstrap, "/controller/v1/snapshot", config, timeout) as (url, answer):
        try:
            end_offset = int(answer.headers["x-snapshot-end-offset"])
            epoch = int(answer.headers["x-snapshot-epoch"])
        except (KeyError, ValueError):
            raise DownloadError(f"{url}: the answer names no snapshot (no X-Snapshot-End-"
                                "Offset / X-Snapshot-Epoch headers)") from None
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / snapshot_name(end_offset, epoch)
        try:
            with open(path, "wb") as file:
                for piece in answer.iter_bytes(1024 * 1024):
                    file.write(piece)
        except httpx.TransportError as error:
            raise DownloadError(f"{url}: the download broke off: {error}") from error
    return url, path


def fetch_json(bootstrap: str, path: str, config: CommandConfig | None = None,
               timeout: float = 60.0) -> tuple[str, Any]:
    """``(url, JSON body)`` of ``GET path`` on the first server of ``bootstrap`` answering."""
    config = config or CommandConfig()
    with _first_answer(bootstrap, path, config, timeout) as (url, answer):
        try:
            answer.read()
            return url, answer.json()
        except (httpx.TransportError, ValueError) as error:
            raise DownloadError(f"{url}: unreadable answer: {error}") from error


def export_from_controller(bootstrap: str, out: str | os.PathLike[str],
                           config: CommandConfig | None = None, *, timeout: float = 60.0,
                           workers: int | None = None,
                           signing_key: bytes | None = None) -> Manifest:
    """Downloads a controller's snapshot into a hidden directory next to ``out``, exports it
    to ``out`` (the manifest's source is the URL) and removes the download, whatever happens."""
    out = Path(out)
    if out.exists():
        raise ExportError(f"{out} already exists; an export never overwrites")
    scratch = out.parent / f".{out.name}.download-{secrets.token_hex(4)}"
    try:
        url, path = download_snapshot(bootstrap, scratch, config, timeout)
        return export_snapshot(path, out, workers=workers, source_label=url,
                               signing_key=signing_key)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
