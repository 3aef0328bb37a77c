"""Fuzz every page through AppTest: random widget values within bounds, in random sequences.

Pages come from the navigation registry (lab_ui.nav), so a new page is fuzzed the day it is
registered. Each step picks a page, opens it inside app.py, and changes a few of its widgets at
random: a slider or number to any value in its range (ends and steps included), a select or
radio to any option, a toggle either way, a text box to one of the hostile strings below.
Buttons are pressed too, except those that start long work (the kernel sweep, training), which
have their own per-session limits and tests. A step fails when the run raises (an exception
element or an AppTest error); a shown `st.error`/`st.warning` is the expected answer to bad input.

Usage: .venv/bin/python benchmarks/fuzz_pages.py [--states 1000] [--seed 0]
Prints `fuzz: N widget states over P pages, exceptions E` and each failing sequence, replayable
with its seed. tests/test_fuzz.py runs a seeded sample of it.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.testing.v1 import AppTest

from lab_ui.nav import HOME, PAGES

ROOT = Path(__file__).resolve().parents[1]
HOSTILE_TEXT = (
    "",
    " ",
    "1, 2\n3",  # ragged
    "nan, inf\n-inf, 1",
    "1e308, 1e308\n1e308, 1e308",
    "−1, 2\n3, 4",  # unicode minus
    "abc",
    "[[1, 2], [3, 4]]",
    "__import__('os').system('true')",
    "<script>alert(1)</script>",
    "1" * 5000,
    ";" * 300,
    "0x10, 1_000\n1e-400, -0",
    "\x00\x01\x02",
    "١, ٢\n٣, ٤",  # Arabic-Indic digits
)
# Buttons that start long work are limited per session and tested on their own.
SKIP_BUTTONS = ("run", "train", "sweep", "start_room", "classroom")


@dataclass
class Report:
    states: int = 0
    failures: list[str] = field(default_factory=list)
    pages: set[str] = field(default_factory=set)


def _choose(rng: random.Random, widget) -> object | None:
    """A random in-bounds value for one widget, or None to press/skip it."""
    kind = type(widget).__name__
    if kind in ("Slider", "SelectSlider") and hasattr(widget.proto, "min"):
        lo, hi, step = widget.proto.min, widget.proto.max, widget.proto.step or 1
        n = round((hi - lo) / step)
        value = lo + step * rng.choice([0, n, rng.randint(0, max(n, 0))])
        value = min(value, hi)
        value = round(value) if widget.proto.data_type == 0 else float(value)  # 0: INT
        current = widget.value
        return (value, value) if isinstance(current, tuple) else value
    if kind == "NumberInput":
        lo = widget.proto.min if widget.proto.has_min else -1e6
        hi = widget.proto.max if widget.proto.has_max else 1e6
        value = rng.choice([lo, hi, rng.uniform(lo, hi)])
        return int(value) if widget.proto.data_type == 0 else float(value)
    if kind in ("Selectbox", "Radio"):
        return rng.choice(widget.options) if widget.options else None
    if kind == "Multiselect":
        options = list(widget.options)
        return rng.sample(options, rng.randint(0, len(options))) if options else None
    if kind in ("Toggle", "Checkbox"):
        return rng.random() < 0.5
    if kind in ("TextArea", "TextInput"):
        return rng.choice(HOSTILE_TEXT)
    return None


def _widgets(at):
    kinds = ("slider", "select_slider", "number_input", "selectbox", "radio", "multiselect", "toggle",
             "checkbox", "text_area", "text_input", "button")  # fmt: skip
    out = []
    for kind in kinds:
        out.extend(at.get(kind))
    return out


def fuzz_page(path: str, rng: random.Random, steps: int, report: Report, timeout: float = 60) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.run()
    at.switch_page(path).run()
    report.pages.add(path)
    trail = []
    for _ in range(steps):
        widgets = [w for w in _widgets(at) if getattr(w, "key", None) or type(w).__name__ != "Button"]
        if not widgets:
            return
        widget = rng.choice(widgets)
        key = getattr(widget, "key", None) or widget.label
        kind = type(widget).__name__
        try:
            if kind == "Button":
                if any(s in str(key).lower() or s in widget.label.lower() for s in SKIP_BUTTONS):
                    continue
                widget.click()
                trail.append(f"press {key}")
            else:
                value = _choose(rng, widget)
                if value is None:
                    continue
                widget.set_value(value)
                trail.append(f"{key}={str(value)[:40]!r}")
            at.run()
        except Exception as exc:  # AppTest raised (script timeout, bad widget value): a failure
            report.failures.append(f"{path}: {' → '.join(trail)}: {type(exc).__name__}: {exc}")
            return
        report.states += 1
        if at.exception:
            message = at.exception[0].message if at.exception else ""
            report.failures.append(f"{path}: {' → '.join(trail)}: exception {message[:300]}")
            return


def fuzz(states: int, seed: int = 0, steps_per_page: int = 8, pages: list[str] | None = None) -> Report:
    rng = random.Random(seed)
    report = Report()
    paths = pages or [p.path for p in (HOME, *PAGES)]
    for _ in range(states):  # each visit adds at least one state unless a page has no widgets
        if report.states >= states:
            break
        fuzz_page(rng.choice(paths), rng, min(steps_per_page, states - report.states), report)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.monotonic()
    report = fuzz(args.states, args.seed)
    print(
        f"fuzz: {report.states} widget states over {len(report.pages)} pages, exceptions {len(report.failures)}"
    )
    print(f"seed {args.seed}, {time.monotonic() - start:.0f} s")
    for failure in report.failures:
        print("  ", failure)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
