"""The closed forms held against the model: the analytic figures (`attn_core.cost`) beside the
ones transformers' build gives (`derive`), part by part. A difference is never silent: it names
the part, both figures, and marks the formula as not covering it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attn_core.anatomy.build import BuildRefused, completed_config
from attn_core.anatomy.derive import Anatomy, derive
from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.flops import pair_flops, prefill_flops
from attn_core.cost.inputs import Precision
from attn_core.cost.model_shape import ModelShape
from attn_core.cost.model_types import unwrap_text_config
from attn_core.cost.params import model_params
from attn_core.cost.phases import decode_count, expert_flops
from attn_core.cost.serving import kv_cache_bytes_per_token, state_bytes_per_sequence
from attn_core.cost.type_facts import TypeFacts, recorded_facts

# analytic ParamCount fields → the derived parts they cover
PART_MAP = {
    "embeddings": ("embeddings", "positions"),
    "attention": ("attention",),
    "linear mixer": ("state_mixers",),
    "mlp, shared experts, router": ("mlp",),
    "routed experts": ("experts",),
    "norms": ("norms",),
    "head": ("lm_head",),
}
DERIVED_OF = {
    "mlp, shared experts, router": ("mlp", "shared experts", "router"),
}


@dataclass(frozen=True)
class Difference:
    """One figure on which the formula and the model disagree."""

    what: str  # "parameters: attention", "cache per token", …
    analytic: int
    derived: int
    unit: str  # "parameters", "bytes" or "FLOPs"
    convention: str | None = None  # set: counted another way on purpose (why), not a misread

    @property
    def text(self) -> str:
        rel = (self.analytic - self.derived) / self.derived if self.derived else float("inf")
        rel_text = (
            (f"{rel:+.1%}" if abs(rel) >= 1e-3 else f"{rel:+.4%}") if self.derived else "none in the model"
        )
        verdict = (
            f"counted differently, not misread: {self.convention}"
            if self.convention
            else ("the formula does not cover this part")
        )
        return (
            f"{self.what}: the formula gives {self.analytic:,} {self.unit}, transformers' build "
            f"{self.derived:,} ({rel_text}); {verdict}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "analytic": self.analytic,
            "derived": self.derived,
            "unit": self.unit,
            "convention": self.convention,
        }


@dataclass(frozen=True)
class Check:
    """The analytic model beside the model-derived one for one config."""

    anatomy: Anatomy | None  # None: transformers cannot build it (``refused`` says why)
    refused: str | None
    analytic_error: str | None  # the formulas refuse it (they do not cover the architecture)
    differences: tuple[Difference, ...]
    shape: ModelShape | None = None  # what the formulas read: the completed config, the build's facts
    read: tuple[dict[str, Any], TypeFacts] | None = None  # the config and facts they read (formulas_input)

    @property
    def misreads(self) -> tuple[Difference, ...]:
        """The differences that are the formula's misreading (not a counting convention)."""
        return tuple(d for d in self.differences if d.convention is None)

    @property
    def agrees(self) -> bool:
        return self.anatomy is not None and self.analytic_error is None and not self.misreads

    def lines(self) -> list[str]:
        if self.anatomy is None:
            return [f"Not checked against transformers: {self.refused}; figures from the formulas alone"]
        a = self.anatomy
        head = f"Checked against transformers' own build ({a.built_class}, transformers {a.transformers_version}, meta device)"
        if self.analytic_error:
            return [
                head,
                f"  the formulas do not cover this model ({self.analytic_error}): figures from the build",
            ]
        unread = [f"  its cache is not read ({a.cache_unread})"] if a.cache_unread else []
        if a.cache_absent:
            unread.append(f"  it keeps no cache ({a.cache_absent})")
        elif a.cache_read_by and a.cache_read_by != "the meta forward":
            unread.append(f"  its cache is read from {a.cache_read_by}")
        if a.flops_unread:
            unread.append(f"  its FLOPs are not counted ({a.flops_unread})")
        elif a.flops is not None and a.flops.decode_unread:
            unread.append(f"  its decode step's FLOPs are not counted ({a.flops.decode_unread})")
        notes = ["  " + d.text for d in self.differences if d.convention]
        if not self.misreads:
            what = "parameters" if a.cache_unread else "parameters, cache per token and fixed state"
            what += "" if a.flops is None else f", FLOPs (prefill of {a.flops.prompt} tokens, a decode step)"
            return [head + f": {what} agree to the unit" + (" but for:" if notes else ""), *notes, *unread]
        return [head + ": THE FORMULA DIFFERS", *("  " + d.text for d in self.misreads), *notes, *unread]

    def to_json(self) -> dict[str, Any]:
        return {
            "agrees": self.agrees,
            "refused": self.refused,
            "analytic_error": self.analytic_error,
            "differences": [d.to_json() for d in self.differences],
            "model_derived": None if self.anatomy is None else self.anatomy.to_json(),
            "formulas_read": None
            if self.read is None
            else {"config": self.read[0], "facts": self.read[1].to_json()},
        }


def differences(shape: ModelShape, anatomy: Anatomy) -> tuple[Difference, ...]:
    """Each figure of the analytic model that is not the build's: totals, parts, cache, state."""
    p = model_params(shape)
    parts = anatomy.params_by_part
    out = []
    buffers = anatomy.checkpoint_buffers
    if buffers and p.total == anatomy.params_total + buffers:  # the formula counts what a checkpoint holds
        return (*_cache_differences(shape, anatomy), *flop_differences(shape, anatomy))
    if p.total != anatomy.params_total:
        out.append(Difference("parameters, total", p.total, anatomy.params_total, "parameters"))
        for name, fields in PART_MAP.items():
            ours = sum(getattr(p, f) for f in fields)
            theirs = sum(parts.get(q, 0) for q in DERIVED_OF.get(name, (name,)))
            if ours != theirs:
                out.append(Difference(f"parameters, {name}", ours, theirs, "parameters"))
        if parts.get("other"):
            out.append(
                Difference("parameters, other (no part of the formula)", 0, parts["other"], "parameters")
            )
    if p.active != anatomy.params_active and not any(d.what.startswith("parameters, routed") for d in out):
        out.append(Difference("parameters, active per token", p.active, anatomy.params_active, "parameters"))
    return (*out, *_cache_differences(shape, anatomy), *flop_differences(shape, anatomy))


def _cache_differences(shape: ModelShape, anatomy: Anatomy) -> tuple[Difference, ...]:
    out = []
    if anatomy.cache_unread:
        return ()
    kv = kv_cache_bytes_per_token(shape, 2)
    if kv != anatomy.cache_bytes_per_token:
        out.append(Difference("cache per token (bf16)", kv, anatomy.cache_bytes_per_token, "bytes"))
    fixed_at_2 = sum(g.count * (g.cache.fixed - g.cache.fixed_fp32 // 2) for g in anatomy.groups)
    state = state_bytes_per_sequence(shape, 2, 2)
    if state != fixed_at_2:
        out.append(Difference("fixed state per sequence (bf16)", state, fixed_at_2, "bytes"))
    return tuple(out)


# the formulas' FLOPs terms → the parts counted from the model (`anatomy.flops.FLOP_PARTS`)
FLOP_PART_MAP = {
    "attention projections": ("attention projections",),
    "attention core (every query against every key)": ("attention core",),
    "linear mixer maps": ("mixer projections",),
    "linear mixer core": ("mixer core",),
    "mlp, shared experts, router": ("mlp", "shared experts", "router"),
    "routed experts (k of E)": ("routed experts",),
    "head": ("head",),
    "per-layer input maps (Gemma 4), other": ("other",),
}
# a linear mixer's core (the delta rule, SSD) as transformers' torch path runs it: each chunk padded
# to its chunk size in a prefill, the recurrent step element-wise (no matrix product) in decode; the
# formulas count the chunked products at T. Both right, for what each counts.
MIXER_CORE = "linear mixer core"
MIXER_CORE_CONVENTION = (
    "the formulas count a linear mixer's core as the chunked algorithm's products at T; transformers' "
    "torch path runs it another way (chunks padded to the chunk size, a recurrence element by element, "
    "the maps' outputs combined without products), so its count of products differs"
)
ALL_EXPERTS_CONVENTION = (
    "transformers runs this model's every routed expert on every token (the router's scores zero the "
    "unchosen ones): E/k times the formulas' k of E, which a serving kernel runs"
)
MLA_DECODE_CONVENTION = (
    "transformers decodes MLA in the naive form, up-projecting every cached latent to keys and values "
    "at each step; the formulas count the absorbed form (queries and outputs mapped into the latent), "
    "and the build's figure is the naive form's to the unit"
)
DECODE_TERMS = {  # a decode step as `cost.phases` counts it: F_w, F_a, F_c
    "products over the weights": (
        "attention projections",
        "mixer projections",
        "mlp",
        "shared experts",
        "router",
        "routed experts",
        "head",
        "other",
    ),
    "attention": ("attention core",),
    "linear mixer core": ("mixer core",),
}


def _formula_prefill(shape: ModelShape, T: int) -> dict[str, int]:
    """The formulas' FLOPs of a prefill of T tokens, batch 1, by FLOP_PART_MAP's terms; every pair
    (not causal), as the counter counts the rectangle SDPA is handed."""
    f = prefill_flops(shape, T, 1, causal=False)
    routed = int(expert_flops(shape, T))
    return dict(
        zip(
            FLOP_PART_MAP,
            (
                f.projections,
                f.attention,
                f.state_projections,
                f.state_core,
                f.mlp - routed,
                routed,
                f.lm_head,
                f.per_layer_inputs,
            ),
            strict=True,
        )
    )


def flop_differences(shape: ModelShape, anatomy: Anatomy) -> tuple[Difference, ...]:
    """The formulas' FLOPs beside the ones counted from the model (`anatomy.flops`): the prefill
    by part, then the decode step by `cost.phases`'s terms; each that differs, with both figures."""
    mf = anatomy.flops
    if mf is None:
        return ()
    out = []
    counted = mf.total("prefill")
    for name, ours in _formula_prefill(shape, mf.prompt).items():
        theirs = sum(counted.get(p, 0) for p in FLOP_PART_MAP[name])
        if int(ours) != theirs:
            why = MIXER_CORE_CONVENTION if name == MIXER_CORE else None
            if name == ROUTED and _every_expert(shape, int(ours), theirs):
                why = ALL_EXPERTS_CONVENTION
            out.append(
                Difference(f"FLOPs, prefill of {mf.prompt} tokens: {name}", int(ours), theirs, "FLOPs", why)
            )
    if mf.decode is None:
        return tuple(out)
    d = decode_count(shape, mf.context, 1, Precision("bf16"))
    counted = mf.total("decode")
    naive = _mla_naive_decode(shape, mf.context, d.product_flops, d.attention_flops)
    for i, ((name, parts), ours) in enumerate(
        zip(DECODE_TERMS.items(), (d.product_flops, d.attention_flops, d.core_flops), strict=True)
    ):
        theirs = sum(counted.get(p, 0) for p in parts)
        if int(ours) == theirs:
            continue
        why = MIXER_CORE_CONVENTION if name == MIXER_CORE else None
        if naive is not None and i < 2 and naive[i] == theirs:  # the same model, decoded the other way
            why = MLA_DECODE_CONVENTION
        if i == 0 and shape.moe is not None:  # the step's routed share, run for every expert
            routed = int(expert_flops(shape, 1))
            if _every_expert(shape, routed, theirs - (int(ours) - routed)):
                why = ALL_EXPERTS_CONVENTION
        out.append(
            Difference(
                f"FLOPs, a decode step at {mf.context} cached: {name}", int(ours), theirs, "FLOPs", why
            )
        )
    return tuple(out)


ROUTED = "routed experts (k of E)"


def _every_expert(shape: ModelShape, ours: int, theirs: int) -> bool:
    """Whether the build's routed-expert FLOPs are every expert's: E/k times the formulas' k of E."""
    m = shape.moe
    return m is not None and ours > 0 and theirs * m.top_k == ours * m.n_experts


def _mla_naive_decode(shape: ModelShape, P: int, products: int, attention: int) -> tuple[int, int] | None:
    """A decode step's (products over the weights, attention) in MLA's naive form, from the
    formulas' absorbed count: the P cached latents up-projected (2·P·r_kv·h·(d_nope + d_v) per
    layer) and every pair at the naive width. None for a model without MLA."""
    m = shape.mla
    if m is None:
        return None
    layers = shape.n_attention_layers
    up = 2 * P * m.kv_lora_rank * shape.n_heads * (m.qk_nope_head_dim + m.v_head_dim) * layers
    pairs = attention // pair_flops(shape, absorbed=True)
    return int(products) + up, int(pairs) * pair_flops(shape)


def formulas_input(config: Mapping[str, Any], anatomy: Anatomy) -> tuple[dict[str, Any], TypeFacts]:
    """What the formulas read where the build runs: the config as transformers completes it (an
    absent key means what its class means; the top level's name and quantization_config kept) and
    the facts of the model_type as this build shows them, with the record's verdict on whether
    the formulas cover its mixers (`attn_core.cost.type_facts`)."""
    full = completed_config(config)
    carried = ("_name_or_path", "quantization_config")
    full |= {k: config[k] for k in carried if config.get(k) not in (None, "") and not full.get(k)}
    text = unwrap_text_config(
        config
    )  # keys transformers reads and does not write back (Nemotron-H's pattern)
    full = {k: v for k, v in text.items() if k not in full} | full
    recorded = recorded_facts(str(full.get("model_type") or ""))
    built = anatomy.facts
    covered = recorded.formulas_cover if recorded is not None else not built.state_mixers
    return full, dataclasses.replace(built, formulas_cover=covered)


def compare_config(
    config: Mapping[str, Any], shape: ModelShape | None = None, *, assume_covered: bool = False
) -> Check:
    """The formulas' reading of ``config`` held against transformers' build of it. Without
    ``shape`` the formulas read what the build reads (`formulas_input`); ``assume_covered``
    lets them try mixers the record says they do not cover (scripts/derive_model_types.py)."""
    try:
        anatomy = derive(config)
    except BuildRefused as exc:
        return Check(None, str(exc), _analytic_error(config) if shape is None else None, ())
    full, facts = formulas_input(config, anatomy)
    if assume_covered:
        facts = dataclasses.replace(facts, formulas_cover=True)
    if shape is None:
        try:
            shape = from_hf_config(full, name=config.get("_name_or_path"), facts=facts)
        except ConfigError as exc:
            return Check(anatomy, None, str(exc), (), read=(full, facts))
    return Check(anatomy, None, None, differences(shape, anatomy), shape, read=(full, facts))


def _analytic_error(config: Mapping[str, Any]) -> str | None:
    """The formulas' refusal of a config transformers does not build (read with recorded facts)."""
    try:
        from_hf_config(config)
    except ConfigError as exc:
        return str(exc)
    return None
