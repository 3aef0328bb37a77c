"""``python -m attn_core``: see attn_core/cli.py for the commands."""

import sys

from attn_core.cli import main

if __name__ == "__main__":
    if sys.argv[1:2] == ["bench"]:  # the kernel bench (imports torch): attn_core/bench/cli.py
        from attn_core.bench.cli import main as bench_main

        sys.exit(bench_main(sys.argv[2:]))
    sys.exit(main())
