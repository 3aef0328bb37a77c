"""``python -m attn_core``: see attn_core/cli.py for the commands."""

import sys

from attn_core.cli import main

if __name__ == "__main__":
    sys.exit(main())
