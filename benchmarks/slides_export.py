"""What figures for slides and palettes cost: the standalone HTML file of a figure (size, time to
build, on the server, only when its button is pressed) and the palette restyle every shown figure
goes through when a screen picks a non-default palette.

Usage: .venv/bin/python benchmarks/slides_export.py [--repeats 5]
Prints one line per figure size: HTML bytes and ms, restyle ms (designed / colour-blind safe).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from lab_ui import figures, palettes
from lab_ui.palettes import Palette


def best_ms(fn, repeats: int) -> float:
    """The fastest of ``repeats`` calls, in ms (the least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    for n in (6, 64, 512):  # the Playground's default, its exact-hover limit, its cap
        fig = figures.heatmap(rng.standard_normal((n, n)), colorscale="RdBu_r", zmid=0, title=f"{n} × {n}")
        html = figures.standalone_html(fig)
        build = best_ms(lambda fig=fig: figures.standalone_html(fig), args.repeats)
        designed = best_ms(lambda fig=fig: palettes.restyle(fig, Palette.DESIGNED), args.repeats)
        cb = best_ms(lambda fig=fig: palettes.restyle(fig, Palette.CB), args.repeats)
        print(
            f"{n:>4} × {n:<4} heatmap: standalone HTML {len(html.encode()) / 2**20:.2f} MiB in {build:.0f} ms; "
            f"restyle {designed:.3f} ms designed, {cb:.2f} ms colour-blind safe"
        )


if __name__ == "__main__":
    main()
