"""How long the Cost page's check against transformers' build takes for a pasted config: every
preset's config.json in assets/models/ (and any extra files named), each answered as the page
answers it.

Two ways (``--mode``):
- ``child`` (the page's path): `attn_core.anatomy.runner.wait` on a fresh config (a disk cache
  of its own, empty), a spare child warmed up beforehand (the page starts one when the paste box
  opens); seconds from the request to the record.
- ``inproc``: `anatomy.compare.compare_config` in this process after one warm-up build, with the
  forwards on one layer of each kind (the runner's child runs this) and, with ``--whole``, over
  every layer as before, for the speed-up.

    PYTHONPATH=. python benchmarks/config_speed.py [--mode child|inproc] [--whole] [--only] [--pause S] [extra.json …]

``--only``: the files named, not the presets (profiling a few configs on a shared machine);
``--pause``: seconds the spare gets before each request (default 30). Prints one row per config
(with the load average when it was asked) and the median and max; the load average before and after."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESETS = sorted((ROOT / "assets" / "models").glob("*.json"))
SPARE_READY_S = 30.0  # a spare's imports and warm-up on a quiet machine take ~5 s: this is ample


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _child_seconds(config: dict, pause: float = SPARE_READY_S) -> tuple[float, str]:
    from attn_core.anatomy import runner

    runner.prewarm()
    time.sleep(pause)  # a user pastes after the box opened: the spare is warm by then
    start = time.perf_counter()
    outcome = runner.wait(config, timeout=runner.BUILD_SECONDS + 10)
    return time.perf_counter() - start, outcome.status if outcome.line is None else outcome.line


def _inproc_seconds(config: dict, whole: bool) -> tuple[float, str]:
    from attn_core.anatomy import derive
    from attn_core.anatomy.compare import compare_config

    derive._derive_cached.cache_clear()
    if whole:
        start = time.perf_counter()
        derive._derive(config, one_of_each=False)
        return time.perf_counter() - start, "every layer"
    start = time.perf_counter()
    check = compare_config(config)
    return time.perf_counter() - start, "agrees" if check.agrees else "differs or refused"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extra", nargs="*", type=Path, help="more config.json files")
    parser.add_argument("--mode", choices=("child", "inproc"), default="child")
    parser.add_argument("--whole", action="store_true", help="inproc: also every layer's forwards")
    parser.add_argument("--only", action="store_true", help="the files named only, not the presets")
    parser.add_argument("--pause", type=float, default=SPARE_READY_S, help="seconds before each request")
    args = parser.parse_args()
    from attn_core.anatomy import runner

    runner.CACHE_DIR = Path(tempfile.mkdtemp()) / "build-checks"  # nothing answered from disk
    if args.mode == "inproc":
        from attn_core.anatomy.compare import compare_config

        compare_config(runner.WARM_UP)
    load_before, rows = _load(), []
    for path in [*([] if args.only else PRESETS), *args.extra]:
        config = json.loads(path.read_text())
        load = _load()
        if args.mode == "child":
            seconds, what = _child_seconds(config, args.pause)
        else:
            seconds, what = _inproc_seconds(config, False)
            if args.whole:
                whole, _ = _inproc_seconds(config, True)
                what += f"; every layer: {whole:.2f} s"
        rows.append(seconds)
        print(f"{path.stem:24s} {seconds:6.2f} s  {what}  (load {load})", flush=True)
    if args.mode == "child":
        runner.stop_all()
    print(
        f"median {statistics.median(rows):.2f} s, max {max(rows):.2f} s over {len(rows)} configs; "
        f"load average {load_before} → {_load()}"
    )


if __name__ == "__main__":
    main()
