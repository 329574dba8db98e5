"""The ``chunkraft`` command line: :mod:`.main` builds the parser, one module per subcommand.

A subcommand module exposes ``register(commands)``, which adds its parser to ``commands`` (an
argparse subparsers object) and sets ``handler`` (``Namespace -> exit status``) as a default;
:mod:`.main` lists the ``register`` functions. Shared by the tools: :mod:`.output` (arguments,
Kafka's error line), :mod:`.errors` (the exceptions that become that line) and
:mod:`.input_files` (every file a command reads, bounded: no file gives a traceback).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

__all__ = ["Handler", "Subcommands"]

Handler: TypeAlias = Callable[[argparse.Namespace], int]
"""What a subcommand runs: parsed arguments in, process exit status out."""

if TYPE_CHECKING:
    # argparse's subparsers type is generic only in the stubs, so the alias exists for mypy only.
    Subcommands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
