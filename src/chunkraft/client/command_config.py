"""CommandConfig: the credentials an admin tool sends, from a Kafka-style ``--command-config`` file.

The file is a ``.properties`` text, like the ``--command-config`` of Kafka's tools::

    bearer.token=crt_...                 # or bearer.token.file=/path/to/a/file/holding/it
    ssl.ca.file=/etc/chunkraft/ca.pem    # trust this CA for https:// controllers
    ssl.certificate.file=client.pem      # present this client certificate (mTLS) ...
    ssl.key.file=client-key.pem          # ... with this key (optional if the PEM holds both)

Relative paths are read relative to the file's own directory, so a file and what it names can
move together. Without a token in the file, the ``CHUNKRAFT_TOKEN`` environment variable is used.
An unknown key is refused (a misspelt ``bearer.tokn`` would otherwise send no credentials and
surface later as a puzzling 401).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from chunkraft.controller.properties import parse_properties

__all__ = ["TOKEN_ENVIRONMENT_VARIABLE", "CommandConfig", "CommandConfigError"]

TOKEN_ENVIRONMENT_VARIABLE = "CHUNKRAFT_TOKEN"

_KEYS = ("bearer.token", "bearer.token.file", "ssl.ca.file", "ssl.certificate.file",
         "ssl.key.file")


class CommandConfigError(ValueError):
    """The command-config file cannot be read or says something that cannot be used."""


@dataclass(frozen=True)
class CommandConfig:
    """What to authenticate with: a bearer token and / or TLS files. Immutable."""

    token: str | None = None
    ca_file: Path | None = None
    certificate_file: Path | None = None
    key_file: Path | None = None

    @classmethod
    def load(cls, path: str | Path | None,
             environment: Mapping[str, str] | None = None) -> CommandConfig:
        """The settings of the file at ``path`` (none: only the environment's token)."""
        environment = os.environ if environment is None else environment
        env_token = environment.get(TOKEN_ENVIRONMENT_VARIABLE, "").strip() or None
        if path is None:
            return cls(token=env_token)
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandConfigError(
                f"cannot read command config file {path}: {_reason(error)}") from None
        try:
            values = {key: value.value for key, value in parse_properties(text).items()}
        except ValueError as error:
            raise CommandConfigError(f"command config file {path}: {error}") from None
        unknown = sorted(set(values) - set(_KEYS))
        if unknown:
            raise CommandConfigError(
                f"command config file {path}: unknown setting {', '.join(unknown)} "
                f"(known: {', '.join(_KEYS)})")
        base = path.parent

        def file_of(key: str) -> Path | None:
            value = values.get(key)
            if not value:
                return None
            named = Path(value).expanduser()
            return named if named.is_absolute() else base / named

        token = values.get("bearer.token") or None
        token_file = file_of("bearer.token.file")
        if token and token_file:
            raise CommandConfigError(
                f"command config file {path}: set bearer.token or bearer.token.file, not both")
        if token_file is not None:
            try:
                token = token_file.read_text(encoding="utf-8").strip() or None
            except (OSError, UnicodeDecodeError) as error:
                raise CommandConfigError(
                    f"cannot read bearer.token.file {token_file}: {_reason(error)}") from None
            if token is None:
                raise CommandConfigError(f"bearer.token.file {token_file} is empty")
        config = cls(token=token or env_token, ca_file=file_of("ssl.ca.file"),
                     certificate_file=file_of("ssl.certificate.file"),
                     key_file=file_of("ssl.key.file"))
        if config.key_file is not None and config.certificate_file is None:
            raise CommandConfigError(
                f"command config file {path}: ssl.key.file needs ssl.certificate.file")
        return config

    def headers(self) -> dict[str, str]:
        """The HTTP headers that carry the token (none without one)."""
        return {"authorization": f"Bearer {self.token}"} if self.token else {}

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context for ``https://`` controllers: the system's CAs, or ``ssl.ca.file``;
        with the client certificate loaded when one is set. CommandConfigError if a file
        cannot be used."""
        try:
            context = ssl.create_default_context(
                cafile=str(self.ca_file) if self.ca_file is not None else None)
            if self.certificate_file is not None:
                context.load_cert_chain(
                    str(self.certificate_file),
                    str(self.key_file) if self.key_file is not None else None)
        except (OSError, ssl.SSLError) as error:
            raise CommandConfigError(f"cannot load the TLS files: {_reason(error)}") from None
        return context


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
