"""What every model_type implies, read from transformers' own build: each type transformers knows
built at its class defaults on the meta device, its module tree read by `attn_core.anatomy.facts`
(MLP kind, attention biases, QK-norm, output gate, norms per layer, experts, learned positions,
state mixers, the tie default), and the formulas held against the build at those defaults. The
record, ``assets/derived/model_types.json``, is what the torch-free formulas read
(`attn_core.cost.type_facts`); a multimodal type is recorded under its text model's type, with
the wrapper named as an alias.

    .venv/bin/python scripts/derive_model_types.py              # the known types; rewrites the record
    .venv/bin/python scripts/derive_model_types.py llama gpt2   # these only, printed, not written

Figures: RESULTS.md, "Model-type facts from the build"."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from attn_core.anatomy.build import BuildRefused, text_config
from attn_core.anatomy.compare import compare_config
from attn_core.anatomy.derive import derive
from attn_core.cost.type_facts import RECORD_FILE

ROOT = Path(__file__).resolve().parents[1]
PER_TYPE_S = 120  # one type's build, cache read and check; past it the type is recorded as refused


def _timeout(signum, frame):
    raise TimeoutError(f"over {PER_TYPE_S} s")


def type_record(model_type: str) -> tuple[str, dict]:
    """(the text model's type, its facts with the formulas' verdict at the class defaults)."""
    config = {"model_type": model_type}
    text_type = str(text_config(config).model_type)
    anatomy = derive(config)
    check = compare_config(config, assume_covered=True)
    facts = anatomy.facts.to_json() | {"formulas_cover": check.agrees}
    return text_type, facts


# The types the lab knows: its presets' and those its formulas were written for (hybrids, MoE,
# sliding and QK-norm families, the classic MHA models). ``--all`` tries every type transformers knows.
KNOWN_TYPES = (
    "bamba",
    "bloom",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "falcon",
    "falcon_h1",
    "falcon_mamba",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gemma4_text",
    "gpt2",
    "gpt_bigcode",
    "gpt_neox",
    "gpt_oss",
    "gptj",
    "granite",
    "granitemoehybrid",
    "jamba",
    "kimi_linear",
    "lfm2",
    "llama",
    "llama4",
    "llama4_text",
    "mamba",
    "mamba2",
    "minimax",
    "mistral",
    "mixtral",
    "nemotron_h",
    "olmo",
    "olmo2",
    "opt",
    "phi",
    "phi3",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_moe",
    "qwen3_next",
    "starcoder2",
    "zamba",
    "zamba2",
)


def all_types() -> list[str]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return sorted(CONFIG_MAPPING_NAMES)


def main() -> None:
    import transformers

    ap = argparse.ArgumentParser()
    ap.add_argument("types", nargs="*")
    ap.add_argument("--all", action="store_true", help="every type transformers knows (long)")
    args = ap.parse_args()
    names = args.types or (all_types() if args.all else list(KNOWN_TYPES))
    types: dict[str, dict] = {}
    aliases: dict[str, str] = {}
    refused: dict[str, str] = {}
    direct: set[str] = set()  # text types recorded from their own build, not through a wrapper
    signal.signal(signal.SIGALRM, _timeout)
    start = time.perf_counter()
    print(f"load average before: {Path('/proc/loadavg').read_text().split()[:3]}", file=sys.stderr)
    for name in names:
        signal.alarm(PER_TYPE_S)
        try:
            text_type, facts = type_record(name)
        except (BuildRefused, TimeoutError) as exc:
            refused[name] = str(exc)
            continue
        except Exception as exc:  # a class that fails on meta: recorded with its reason, never silent
            refused[name] = f"{exc.__class__.__name__}: {' '.join(str(exc).split())[:200]}"
            continue
        finally:
            signal.alarm(0)
        if text_type == name or text_type not in direct:  # a type's own build wins over a wrapper's
            types[text_type] = facts  # (a multimodal wrapper may complete its text config otherwise)
        if text_type == name:
            direct.add(name)
        else:
            aliases[name] = text_type
        print(f"{name:<20}{text_type:<20}{json.dumps(facts)}", flush=True)
    seconds = time.perf_counter() - start
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}", file=sys.stderr)
    covered = sum(f["formulas_cover"] for f in types.values())
    print(
        f"{len(names)} types in {seconds:.0f} s: {len(types)} built ({len(aliases)} through a wrapper), "
        f"{covered} of them agree with the formulas at class defaults, {len(refused)} not built"
    )
    if not args.types:
        record = {
            "transformers_version": transformers.__version__,
            "written_by": "scripts/derive_model_types.py",
            "types": dict(sorted(types.items())),
            "aliases": dict(sorted(aliases.items())),
            "not_built": dict(sorted(refused.items())),
        }
        RECORD_FILE.write_text(json.dumps(record, indent=0, sort_keys=False) + "\n")
        print(f"wrote {RECORD_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
