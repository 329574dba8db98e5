"""The bench scripts import their helpers as top-level modules (``_http_load``, ``_controller``),
as ``python bench/x.py`` runs them: the tests here put bench/ first on the path the same way."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = str(Path(__file__).resolve().parents[3] / "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)
