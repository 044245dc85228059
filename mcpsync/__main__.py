"""``python -m mcpsync``: the same as the ``mcpsync`` command."""

from __future__ import annotations

import sys

from mcpsync.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
