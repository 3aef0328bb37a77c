"""``python -m attn_core``: the cost commands (attn_core/cost/cli.py), the kernel bench and the
cost model's check against a run on this machine (``verify``), and the published GPU runs
priced by the cost model (``published``), and a deployment under a load (``serve``,
attn_core/serving/cli.py). ``cost --config`` also checks the formulas against
transformers' own build of the model (attn_core/anatomy/cli.py) unless ``--analytic-only``."""

import sys

from attn_core.cost.cli import main

if __name__ == "__main__":
    if sys.argv[1:2] == ["bench"]:  # the kernel bench (imports torch): attn_core/kernels/cli.py
        from attn_core.kernels.cli import main as bench_main

        sys.exit(bench_main(sys.argv[2:]))
    if sys.argv[1:2] == ["verify"]:  # builds layers and times them (torch): attn_core/verify/cli.py
        from attn_core.verify.cli import main as verify_main

        sys.exit(verify_main(sys.argv[2:]))
    if sys.argv[1:2] == ["published"]:  # published GPU runs, priced: attn_core/cost/published_cli.py
        from attn_core.cost.published_cli import main as published_main

        sys.exit(published_main(sys.argv[2:]))
    if sys.argv[1:2] == ["serve"]:  # one deployment under a load, simulated: attn_core/serving/cli.py
        from attn_core.serving.cli import main as serve_main

        sys.exit(serve_main(sys.argv[2:]))
    argv = sys.argv[1:]
    if argv[:1] == ["cost"] and "--config" in argv and "--analytic-only" not in argv:
        # the formulas checked against transformers' own build (torch): attn_core/anatomy/cli.py
        from attn_core.anatomy.cli import main as checked_main

        sys.exit(checked_main(argv))
    sys.exit(main())
