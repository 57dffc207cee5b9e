"""``python -m pymemory``: the command-line interface (see ``pymemory.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
