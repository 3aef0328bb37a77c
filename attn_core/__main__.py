"""``python -m attn_core``: the subcommands are listed in attn_core/cli.py."""

import sys

from attn_core.cli import main

if __name__ == "__main__":
    sys.exit(main())
