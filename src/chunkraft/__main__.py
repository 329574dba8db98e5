"""``python -m chunkraft``: the same as the ``chunkraft`` command."""

import sys

from chunkraft.cli.main import main

sys.exit(main())
