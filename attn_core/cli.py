"""``python -m attn_core``: one table of subcommands, each imported only when it runs, so the
torch-free ones (``cost``, ``models``, ``gpus``, ``published``) stay fast.

``cost --config`` goes to the check against transformers' own build (attn_core/anatomy/cli.py)
unless ``--analytic-only`` asks for the formulas alone."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# command → (module whose ``main(argv)`` runs it, whether it takes the command word itself, help)
COMMANDS: dict[str, tuple[str, bool, str]] = {
    "cost": ("attn_core.cost.cli", True, "FLOPs, memory, KV cache and time bounds for one model"),
    "models": ("attn_core.cost.cli", True, "the model presets"),
    "gpus": ("attn_core.cost.cli", True, "the GPU presets"),
    "published": (
        "attn_core.cost.published_cli",
        False,
        "GPU runs published by others, each beside its bound",
    ),
    "bench": ("attn_core.kernels.cli", False, "every attention kernel timed on this machine"),
    "verify": ("attn_core.verify.cli", False, "build a model's first layers and time them here"),
    "serve": (
        "attn_core.serving.cli",
        False,
        "one deployment under a load, simulated: latency, throughput, GPUs",
    ),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {text}" for name, (_, _, text) in COMMANDS.items())
    return f"usage: python -m attn_core {{{','.join(COMMANDS)}}} ...\n\nAttention Lab command line.\n\n{rows}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns its exit status (2: an unknown command, with the choices)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"{usage()}\npython -m attn_core: error: unknown command {argv[0]!r}", file=sys.stderr)
        return 2
    module, whole, _ = COMMANDS[argv[0]]
    if argv[0] == "cost" and "--config" in argv and "--analytic-only" not in argv:
        module = "attn_core.anatomy.cli"
    return importlib.import_module(module).main(argv if whole else argv[1:])
