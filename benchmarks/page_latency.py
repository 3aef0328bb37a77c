"""Warm rerun latency of every page, measured with Streamlit's AppTest (no browser).

For each scenario: open the app through a shared link (query parameters), switch to the page,
run once to warm up, then time `at.run()` after a widget change, N times. Prints p50/p95 per
scenario. Targets on the 2-core dev machine: p50 ≤ 50 ms at defaults, ≤ 300 ms at the largest
allowed sizes. Record results in benchmarks/RESULTS.md.

Usage: .venv/bin/python benchmarks/page_latency.py [--repeats N] [--only SUBSTRING] [--profile TOP]
(--profile: cProfile over the timed reruns, the TOP functions by cumulative time.)

Pages register scenarios in SCENARIOS below: one "defaults" and one "largest" each, with the
widget change to time (a callable that takes the AppTest and alternates a value by iteration i).
A change that alternates two values reruns states already computed once the views are cached
(lab_ui/view_cache.py): the cost of a follower, or of a student going back. The "text"
scenarios type a sequence never seen before on every rerun: the cost of new input.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import streamlit.testing.v1.app_test as app_test_module
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Scenario:
    page: str  # e.g. "pages/playground.py"
    name: str  # "defaults" or "largest"
    change: Callable[[AppTest, int], None]  # the widget change timed on iteration i
    query: dict[str, str] = field(default_factory=dict)  # shared-link parameters that set it up


def _seed(at: AppTest, i: int) -> None:
    at.number_input(key="in_seed").set_value(i % 2)


def _scale(at: AppTest, i: int) -> None:
    at.selectbox(key="in_scale").set_value(["1/√d_k", "1/d_k"][i % 2])


def _costs_causal(at: AppTest, i: int) -> None:
    at.toggle(key="co_causal").set_value(bool(i % 2))


def _costs_T(at: AppTest, i: int) -> None:
    at.number_input(key="co_T").set_value(16_777_216 - (i % 2))


def _gradients_tau(at: AppTest, i: int) -> None:
    at.slider(key="gr_tau").set_value([1.0, 0.5][i % 2])


def _masks_gallery(at: AppTest, i: int) -> None:
    at.slider(key="mk_gL").set_value(6 - (i % 2))


def _masks_seed(at: AppTest, i: int) -> None:
    at.number_input(key="mk_seed").set_value(i % 2)


def _online_step(at: AppTest, i: int) -> None:
    at.slider(key="os_step").set_value(2 + i % 2)


def _online_tiles(at: AppTest, i: int) -> None:
    at.slider(key="os_tile_block").set_value(16 + i % 2)  # 1,024 and 961 tiles: the cap


def _bench_causal(at: AppTest, i: int) -> None:
    at.toggle(key="kb_causal").set_value(bool(i % 2))  # a rerun without pressing Run: no sweep


def _practice_answer(at: AppTest, i: int) -> None:
    """Type an answer (Enter submits it): the time of one checked answer."""
    at.text_input(key=f"pr_answer_{at.session_state['pr_n']}").set_value(f"{100 + i} KiB")


def _scaling_sigma(at: AppTest, i: int) -> None:
    at.slider(key="sc_sq").set_value([1.0, 1.05][i % 2])


def _scaling_seed(at: AppTest, i: int) -> None:
    at.number_input(key="sc_seed").set_value(i % 2)


def _one_head_lambda(at: AppTest, i: int) -> None:
    at.slider(key="oh_lam").set_value([0.5, 0.55][i % 2])


def _one_head_seed(at: AppTest, i: int) -> None:
    at.number_input(key="oh_seed").set_value(i % 2)


def _trained_head(at: AppTest, i: int) -> None:
    at.selectbox(key="th_head").set_value(["L1H0", "L0H1"][i % 2])


def _fresh_letters(i: int) -> str:
    """Four letters that differ for every i < 26⁴: a sequence no earlier rerun has seen."""
    return "".join(chr(97 + (i // 26**k + 7 * k) % 26) for k in range(4))


def _trained_text(at: AppTest, i: int) -> None:
    """A new sequence every time: what a student's own typing costs (nothing cached for it)."""
    at.text_area(key="th_text").set_value("^" + _fresh_letters(i) * 3)


def _hf_layer(at: AppTest, i: int) -> None:
    at.slider(key="hf_layer").set_value(i % 2)


def _hf_text(at: AppTest, i: int) -> None:
    """A new token sequence every time (ids 0…99), as above."""
    at.text_area(key="hf_text").set_value(" ".join(str(ord(c) - 97) for c in _fresh_letters(i) * 3))


SCENARIOS: list[Scenario] = [
    Scenario("pages/playground.py", "defaults", _scale),
    Scenario(
        "pages/playground.py",
        "largest",
        _seed,
        {
            "in_src": "random",
            "in_L": "512",
            "in_S": "512",
            "in_dk": "64",
            "in_dv": "64",
            "in_H": "1",
            "in_mask": "causal (bottom-right, cached prefix)",
        },
    ),
    # Other pages append their scenarios here.
    Scenario("pages/practice.py", "defaults", _practice_answer),
    Scenario("pages/online_softmax.py", "defaults", _online_step),
    Scenario(
        "pages/online_softmax.py",
        "largest",
        _online_tiles,
        {
            "in_src": "random",
            "in_L": "512",
            "in_S": "512",
            "in_dk": "64",
            "in_dv": "64",
            "in_mask": "causal (bottom-right, cached prefix)",
            "os_section": "Tiles & block size",
        },
    ),
    Scenario("pages/kernels.py", "defaults", _bench_causal),
    Scenario("pages/masks.py", "defaults", _masks_gallery),
    Scenario(
        "pages/masks.py", "largest", _masks_seed, {"mk_section": "Conventions", "mk_T": "64", "mk_d": "32"}
    ),
    Scenario("pages/costs.py", "defaults", _costs_causal),
    Scenario(
        "pages/costs.py",
        "largest",
        _costs_T,
        {
            "co_model": "seed-80l-mha",
            "co_T": "16777216",
            "co_B": "4096",
            "co_ngpu": "64",
            "co_section": "KV cache & GQA",
        },
    ),
    Scenario("pages/gradients.py", "defaults", _gradients_tau),
    Scenario(
        "pages/gradients.py",
        "largest",
        _seed,
        {
            "in_src": "random",
            "in_L": "512",
            "in_S": "512",
            "in_dk": "64",
            "in_dv": "64",
            "in_mask": "causal (bottom-right, cached prefix)",
            "gr_section": "Backward pass",
        },
    ),
    Scenario("pages/scaling.py", "defaults", _scaling_sigma),
    Scenario(
        "pages/scaling.py",
        "largest",
        _scaling_seed,
        {"sc_dk": "1024", "sc_T": "4096", "sc_section": "Two keys, exactly"},
    ),
    Scenario("pages/one_head.py", "defaults", _one_head_lambda),
    Scenario(
        "pages/one_head.py",
        "largest",
        _one_head_seed,
        {
            "oh_layers": "24",
            "oh_stacks": "32",
            "oh_width": "128",
            "oh_heads": "16",
            "oh_section": "Rank collapse",
        },
    ),
    Scenario("pages/trained_heads.py", "defaults", _trained_head),
    Scenario("pages/trained_heads.py", "text", _trained_text),
    Scenario("pages/hf_heads.py", "defaults", _hf_layer, {"hf_src": "demo"}),  # the demo, as before SmolLM2
    Scenario("pages/hf_heads.py", "text", _hf_text, {"hf_src": "demo"}),
]


# A server compiles each page once and keeps the bytecode in one ScriptCache; AppTest makes a new
# cache per run and would time a recompile of every page (~5–15 ms) that users never pay.
_SHARED_CACHE = ScriptCache()
app_test_module.ScriptCache = lambda: _SHARED_CACHE


def measure(scenario: Scenario, repeats: int, profile: cProfile.Profile | None = None) -> list[float]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in scenario.query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(scenario.page).run()
    scenario.change(at, 1)
    at.run()  # warm-up: imports, caches
    if at.exception:
        raise RuntimeError(f"{scenario.page} {scenario.name}: {at.exception[0].message}")
    times = []
    for i in range(repeats):
        scenario.change(at, i)
        start = time.perf_counter()
        if profile is not None:  # the script runs in a new thread: profile that one
            threading.setprofile(lambda *_: profile.enable())
        at.run()
        threading.setprofile(None)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", default="")
    parser.add_argument(
        "--profile", type=int, default=0, help="print the top N functions (cProfile, cumulative)"
    )
    args = parser.parse_args()
    print(f"{'page':32} {'scenario':10} {'p50 ms':>8} {'p95 ms':>8}")
    for scenario in SCENARIOS:
        if args.only not in scenario.page + scenario.name:
            continue
        profile = cProfile.Profile() if args.profile else None
        times = sorted(measure(scenario, args.repeats, profile))
        p50 = statistics.median(times) * 1e3
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))] * 1e3
        print(f"{scenario.page:32} {scenario.name:10} {p50:8.1f} {p95:8.1f}", flush=True)
        if profile is not None:  # times above include cProfile's overhead
            pstats.Stats(profile).sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
