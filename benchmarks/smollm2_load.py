"""SmolLM2's load, the wait on the Hugging Face page's first visit: each case in a fresh Python
process (torch and transformers imported first, not timed), with the 1-minute load average.

- ``gguf``: the cache folder empty — the GGUF file read (one shared parse) and the cache written;
- ``cached``: the folder that run wrote — what every later load on this machine reads;
- ``plain`` (with ``--plain``): transformers' own GGUF read, three parses (the load before the cache).

Usage: .venv/bin/python benchmarks/smollm2_load.py [--rounds 1] [--plain]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASE = """
import time, torch, transformers
from attn_core.hf import shipped
start = time.perf_counter()
if {plain!r}:
    p = shipped.gguf_path()
    transformers.AutoTokenizer.from_pretrained(p.parent, gguf_file=p.name)
    transformers.AutoModelForCausalLM.from_pretrained(p.parent, gguf_file=p.name, dtype=torch.float32)
else:
    shipped.load_shipped()
print(time.perf_counter() - start)
"""


def run(cache: str, plain: bool = False) -> tuple[float, float, float]:
    """(seconds, load average before, after) of one load in a fresh process."""
    env = os.environ | {"ATTN_LAB_CACHE": cache, "PYTHONPATH": str(ROOT)}
    before = os.getloadavg()[0]
    out = subprocess.run(
        [sys.executable, "-c", CASE.format(plain=plain)], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1]), before, os.getloadavg()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--plain", action="store_true")
    args = parser.parse_args()
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="smollm2_cache_") as cache:
            cases = [("gguf", False), ("cached", False)] + ([("plain", True)] if args.plain else [])
            for name, plain in cases:
                s, a, b = run(cache, plain)
                print(f"{name:7} {s:6.1f} s   load {a:.1f} → {b:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
