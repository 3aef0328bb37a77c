"""``python -m attn_core``: the cost commands (attn_core/cost/cli.py) and the kernel bench."""

import sys

from attn_core.cost.cli import main

if __name__ == "__main__":
    if sys.argv[1:2] == ["bench"]:  # the kernel bench (imports torch): attn_core/bench/cli.py
        from attn_core.bench.cli import main as bench_main

        sys.exit(bench_main(sys.argv[2:]))
    sys.exit(main())
