"""Fuzz every page through AppTest: random widget values within bounds, in random sequences.

Pages come from the navigation registry (lab_ui.nav), so a new page is fuzzed the day it is
registered. Each step picks a page, opens it inside app.py, and changes a few of its widgets at
random: a slider or number to any value in its range (ends and steps included), a select or
radio to any option, a toggle either way, a text box to one of the hostile strings below.
Buttons are pressed too, except those that start long work (the kernel sweep, training), which
have their own per-session limits and tests. An upload box gets one of the hostile files below
(binary, a CSV field over the csv module's limit, spreadsheet formulas, configs that declare 2²⁴
layers, layer types that are objects, a lone surrogate). A page is sometimes opened from a
hostile link (numbers beyond float range, markdown in a label). A step fails when the run raises
(an exception element or an AppTest error) or when a page's safety net had to catch something
(`lab_ui.page.NET_MESSAGE`); a shown `st.error`/`st.warning` is the expected answer to bad input.

Usage: .venv/bin/python benchmarks/fuzz_pages.py [--states 1000] [--seed 0] [--pages costs,masks]
Prints `fuzz: N widget states over P pages, exceptions E` and each failing sequence, replayable
with its seed. tests/test_fuzz.py runs a seeded sample of it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.testing.v1 import AppTest

from lab_ui.nav import HOME, PAGES
from lab_ui.page import NET_MESSAGE

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
    "1e200, 1e200\n1e200, -1e200",  # scores beyond float64 once multiplied
    "1e308, -1e308\n-1e308, 1e308",
    "1e400, 1",  # beyond float range
    "[x](//e.vu)",  # markdown
)


def _config(model_type: str, **fields) -> str:
    base = {"model_type": model_type, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 1000}
    return json.dumps({**base, **fields})


# Configs that are valid JSON but hostile: 2²⁴ layers declared through a per-layer pattern (the
# work must follow what is distinct, not what is declared), objects where names are expected, a
# lone surrogate in a name that goes back out into CSV and JSON.
HOSTILE_CONFIGS = (
    _config(
        "qwen3_moe",
        num_hidden_layers=16_777_216,
        decoder_sparse_step=2,
        num_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        intermediate_size=128,
    ),
    _config(
        "deepseek_v3",
        num_hidden_layers=16_777_216,
        first_k_dense_replace=3,
        moe_layer_freq=1,
        n_routed_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        intermediate_size=128,
    ),
    _config(
        "gemma3_text",
        num_hidden_layers=16_777_216,
        sliding_window_pattern=6,
        sliding_window=512,
        intermediate_size=128,
    ),
    _config(
        "llama4_text",
        num_hidden_layers=16_777_216,
        interleave_moe_layer_step=2,
        num_local_experts=4,
        num_experts_per_tok=1,
        intermediate_size=128,
        intermediate_size_mlp=256,
    ),
    _config("gpt_oss", num_hidden_layers=2, layer_types=[{"type": "full"}, ["sliding"]]),
    '{"model_type": "llama", "_name_or_path": "\\ud800", "hidden_size": 64, "num_attention_heads": 4, '
    '"num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 1000}',
    '{"num_hidden_layers": 1e400}',
    "[" * 3000,
)
HOSTILE_TEXT = HOSTILE_TEXT + HOSTILE_CONFIGS
HOSTILE_UPLOADS = (
    ("binary.csv", bytes(range(256)) * 1024),
    ("quoted.csv", b'card,seed,difficulty,correct,seconds,slip,answer\n"' + b"a" * 200_000 + b'",1\n'),
    (
        "formulas.csv",
        b'card,seed,difficulty,correct,seconds,slip,answer\n=HYPERLINK("x"),1,easy,True,1,@A1,-cmd\n',
    ),
    ("empty.json", b""),
    ("nul.json", b"\x00" * 64),
    *((f"config{i}.json", c.encode("utf-8", "surrogatepass")) for i, c in enumerate(HOSTILE_CONFIGS)),
)
# Links a page may be opened from: values beyond their widgets, beyond float range, markdown.
HOSTILE_QUERIES = (
    {"in_src": "typed matrices", "in_Q": "1e308, 1e308", "in_K": "1e308, 1e308\n1, 1\n1, 1"},
    {"in_src": "random", "in_seed": "1e400", "in_L": "inf"},
    {"os_section": "Memory bill", "os_T": "16777216", "os_B": "4096"},
    {"co_src": "paste or upload config.json", "co_paste": HOSTILE_CONFIGS[0]},
    {"co_src": "paste or upload config.json", "co_paste": HOSTILE_CONFIGS[4]},
    {"hf_src": "local folder or hub id", "hf_path": "a" * 300},
    {"in_src": "[x](//e.vu)", "projector": "1e400"},
)
# Every hostile config as a Cost page link (--hostile-configs opens every visit from one).
CONFIG_LINKS = tuple({"co_src": "paste or upload config.json", "co_paste": c} for c in HOSTILE_CONFIGS)
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
    if kind == "FileUploader":  # any content, under a name the box accepts (the browser checks that)
        name, content = rng.choice(HOSTILE_UPLOADS)
        allowed = list(widget.proto.type)
        if allowed and not name.endswith(tuple(allowed)):
            name = name.rsplit(".", 1)[0] + allowed[0]
        return (name, content, "text/csv" if name.endswith(".csv") else "application/json")
    return None


def _widgets(at):
    kinds = (
        "slider",
        "select_slider",
        "number_input",
        "selectbox",
        "radio",
        "multiselect",
        "toggle",
        "checkbox",
        "text_area",
        "text_input",
        "file_uploader",
        "button",
    )
    out = []
    for kind in kinds:
        out.extend(at.get(kind))
    return out


def fuzz_page(
    path: str,
    rng: random.Random,
    steps: int,
    report: Report,
    timeout: float = 60,
    links: tuple[dict[str, str], ...] = HOSTILE_QUERIES,
    link_share: float = 0.1,
) -> None:
    """One visit: open ``path`` (from one of ``links`` with probability ``link_share``), then
    change up to ``steps`` widgets at random."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    trail = []
    if rng.random() < link_share:  # opened from a hostile link
        query = rng.choice(links)
        for key, value in query.items():
            at.query_params[key] = value
        trail.append(f"link {str(query)[:60]!r}")
    at.run()
    at.switch_page(path).run()
    report.pages.add(path)
    if _failed(at, path, trail, report):
        return
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
        if _failed(at, path, trail, report):
            return


def _failed(at, path: str, trail: list[str], report: Report) -> bool:
    """Record a run that raised, or whose safety net caught something; True if so."""
    caught = [e.value for e in at.error if NET_MESSAGE in e.value]
    if at.exception:
        message = f"exception {at.exception[0].message[:300]}"
    elif caught:
        message = f"caught by the safety net: {caught[0][:300]}"
    else:
        return False
    report.failures.append(f"{path}: {' → '.join(trail)}: {message}")
    return True


def fuzz(
    states: int, seed: int = 0, steps_per_page: int = 8, pages: list[str] | None = None, **visit
) -> Report:
    """Visits until ``states`` widget states have run; ``visit`` goes to `fuzz_page`."""
    rng = random.Random(seed)
    report = Report()
    paths = pages or [p.path for p in (HOME, *PAGES)]
    for _ in range(states):  # each visit adds at least one state unless a page has no widgets
        if report.states >= states:
            break
        fuzz_page(rng.choice(paths), rng, min(steps_per_page, states - report.states), report, **visit)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pages", default="", help="comma-separated url paths (default: every page)")
    parser.add_argument(
        "--hostile-configs", action="store_true", help="open every visit from a hostile config"
    )
    args = parser.parse_args()
    visit = {"links": CONFIG_LINKS, "link_share": 1.0} if args.hostile_configs else {}
    by_url = {p.url_path: p.path for p in (HOME, *PAGES)}
    pages = [by_url[u] for u in args.pages.split(",") if u] or None
    start = time.monotonic()
    if pages is None or by_url["hf_heads"] in pages:
        # the Hugging Face page opens on the shipped model, loaded once per process (15-90 s here):
        # loaded before the clock of any page run starts, as a warm server has it
        from attn_core.views import hf_heads

        hf_heads.load(hf_heads.SHIPPED)
    report = fuzz(args.states, args.seed, pages=pages, **visit)
    print(
        f"fuzz: {report.states} widget states over {len(report.pages)} pages, exceptions {len(report.failures)}"
    )
    print(f"seed {args.seed}, {time.monotonic() - start:.0f} s")
    for failure in report.failures:
        print("  ", failure)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
