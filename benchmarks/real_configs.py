"""Released configs (tests/data/configs/) sized three ways beside each maker's published counts
(tests/data/configs/published.json): transformers' build of the text model on the meta device
(`attn_core.anatomy.parts`, routed experts by structure, k from the config), its towers
(`attn_core.anatomy.towers`), and the formulas (`attn_core.cost`). Prints the markdown table
recorded in benchmarks/RESULTS.md ("Real configs against the makers' counts").

    PYTHONPATH=. python benchmarks/real_configs.py
"""

from __future__ import annotations

import json
from pathlib import Path

from attn_core.anatomy.build import BuildRefused, build_on_meta, text_config
from attn_core.anatomy.parts import param_parts
from attn_core.anatomy.towers import tower_params
from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.params import model_params

CONFIGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "configs"
UNVERIFIED = " (unverified: not read on the maker's page)"


def _b(n: float | None) -> str:
    return "–" if n is None else f"{n / 1e9:.2f}B"


def _err(ours: float | None, theirs: float | None) -> str:
    return "–" if ours is None or not theirs else f"{ours / theirs - 1:+.1%}"


def row(name: str, pub: dict) -> str:
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    cfg = text_config(config)
    parts = param_parts(build_on_meta(cfg), cfg)
    towers = sum(tower_params(config).values())
    total = parts.total + towers
    emb = parts.by_part.get("embeddings", 0)
    active_with = parts.active if parts.experts else None
    active_without = None if active_with is None else active_with - emb
    excl = pub.get("active_excludes")
    ours_active = active_without if excl else active_with
    try:
        p = model_params(from_hf_config(config))
        formulas = f"{_b(p.total)} / {_b(p.active) if parts.experts else '–'}"
    except ConfigError as exc:
        formulas = f"refused ({str(exc)[:60]}…)"
    k_of_e = f"{parts.experts[0]} of {parts.experts[1]}" if parts.experts else "dense"
    return (
        f"| {name} | {k_of_e} | {_b(parts.total)} | {_b(towers) if towers else '–'} | {_b(total)} | "
        f"{_b(pub.get('total'))}{UNVERIFIED if pub.get('verified') is False else ''} | {_err(total, pub.get('total'))} | {_b(active_with)} | {_b(active_without)} | "
        f"{_b(pub.get('active'))}{' (' + excl + ' excluded)' if excl else ''} | "
        f"{_err(ours_active, pub.get('active'))} | {formulas} |"
    )


def main() -> None:
    published = json.loads((CONFIGS / "published.json").read_text())
    print(
        "| config | experts (k of E) | text model (build) | towers | total | maker's total | error | "
        "active, with input embeddings | active, without | maker's active | error | formulas: total / active |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, pub in published.items():
        if name.startswith("_"):
            continue
        try:
            print(row(name, pub))
        except BuildRefused as exc:
            print(f"| {name} | transformers refuses it: {exc} |")


if __name__ == "__main__":
    main()
