"""The Cost page's sidebar: the model (a preset or an uploaded or pasted config.json) and the
what-if (T, batch, dtypes, GPU, the whole model's prompt and generated tokens), every value kept in
the URL (`widgets`). `sidebar` returns them; the page makes its one view call with them."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

import streamlit as st

from attn_core.views import costs
from lab_ui import widgets

SAME, SAME_KV = "same as activations", "as the config states, else the KV cache's"
SOURCES = ("preset", "paste or upload config.json")
IDS = {SAME: "same", SAME_KV: "same", SOURCES[1]: "config"}  # what a link carries for these choices
# The widget keys other pages' links set (lab_ui/open_page.py): defined here once.
SOURCE_KEY, PRESET_KEY, PASTE_KEY = "co_src", "co_model", "co_paste"
T_KEY, DTYPE_KEY, GPU_KEY, SECTION_KEY = "co_T", "co_dtype", "co_gpu", "co_section"


@dataclass(frozen=True)
class CostInputs:
    """What the sidebar asks: the model (its shape, None where the formulas do not read it or
    nothing was given; the preset or the config's text it came from) and the what-if."""

    shape: Any  # a ModelShape, or None
    preset: str | None
    config_text: str | None
    workload: costs.Workload
    precision: costs.Precision
    gpu_name: str
    n_gpus: int
    cals: Any  # the kernel bench runs the page can calibrate with


def sidebar() -> CostInputs:
    """Draw the sidebar; its values."""
    with st.sidebar:
        shape, preset, config_text = model_source()
        T, batch, causal, precision = what_if(shape)
        cals = costs.calibrations()  # this server's Kernels sweep and the recorded GPU runs
        gpu_name, n_gpus = gpus(cals)
        P, N, eff = time_inputs()
    workload = costs.Workload(T, batch, P, N, causal, eff)
    return CostInputs(shape, preset, config_text, workload, precision, gpu_name, n_gpus, cals)


def model_source() -> tuple[Any, str | None, str | None]:
    """The model: a preset or a config.json. (its shape or None, the preset, the config's text)."""
    st.header("Model")
    source = widgets.radio("Shape from", SOURCES, key=SOURCE_KEY, ids=IDS)
    if source == SOURCES[0]:
        preset = widgets.selectbox("Preset", costs.all_presets(), key=PRESET_KEY, default="llama-2-7b")
        return costs.shape_of_preset(preset), preset, None  # None: not read by the formulas (its build is)
    st.caption("A Hugging Face config.json (≤ 1 MiB). An uploaded file wins over pasted text.")
    upload = st.file_uploader("Upload config.json", type=["json"], key="co_upload")
    pasted = widgets.text_area(
        "…or paste it", key=PASTE_KEY, default="", max_chars=costs.MAX_CONFIG_CHARS, height=160
    )
    raw = upload.getvalue() if upload is not None else pasted.strip() and pasted
    if not raw:
        st.info("Upload or paste a config.json to size it.")
        return None, None, None
    # bytes (an upload: size and UTF-8 checked) or pasted text
    try:  # as transformers completes it, where it builds
        shape = costs.shape_of_config(raw)
    except costs.BuildSized as exc:  # the build's figures stand: only why the formulas' sections do not
        st.info(
            f"Sized by transformers' build; the formulas do not read it: {exc}",
            icon=":material/construction:",
        )
        shape = None
    except ValueError as exc:  # the user's to fix, next to the box
        st.error(str(exc), icon="⚠️")
        shape = None
    return (None if shape is None else own_name(shape, raw)), None, costs.config_text(raw)


def own_name(shape: Any, raw: str | bytes) -> Any:
    """``shape`` under a name no other config pasted in this session has: a second, different
    config read as "LlamaForCausalLM" becomes "LlamaForCausalLM (2)"; the same text keeps its name."""
    names: dict[str, str] = st.session_state.setdefault("co_paste_names", {})
    digest = hashlib.sha256(raw if isinstance(raw, bytes) else raw.encode("utf-8", "replace")).hexdigest()
    if digest not in names:
        taken, name, n = set(names.values()), shape.name, 1
        while name in taken:
            n += 1
            name = f"{shape.name} ({n})"
        names[digest] = name
    return shape if names[digest] == shape.name else dataclasses.replace(shape, name=names[digest])


def what_if(shape: Any = None) -> tuple[int, int, bool, costs.Precision]:
    """T, the batch, causal counting and the dtypes; the state's by default as ``shape``'s config states it."""
    st.header("What-if")
    caps = f"T ≤ {costs.MAX_SEQ_LEN:,} tokens, batch ≤ {costs.MAX_BATCH:,}, GPUs ≤ {costs.MAX_GPUS}"
    st.caption(f"Caps: {caps}.")
    T = int(widgets.number("T (tokens in the sequence)", 1, costs.MAX_SEQ_LEN, 4096, key=T_KEY, step=1024))
    batch = int(widgets.number("batch B (sequences)", 1, costs.MAX_BATCH, 1, key="co_B", step=1))
    dtype = widgets.selectbox("activations & scores dtype", costs.DTYPES, key=DTYPE_KEY)
    w_choice = widgets.selectbox("weights dtype", [SAME, *costs.WEIGHT_DTYPES], key="co_wdtype", ids=IDS)
    kv_choice = widgets.selectbox("KV cache dtype", [SAME, *costs.DTYPES], key="co_kvdtype", ids=IDS)
    st_choice = widgets.selectbox(
        "hybrids' recurrent state dtype",
        [SAME_KV, *costs.DTYPES],
        key="co_stdtype",
        ids=IDS,
        help="Linear/state layers' fixed state (mamba_ssm_cache_dtype where the config says; transformers keeps it in fp32).",
    )
    causal = widgets.toggle(
        "causal: count only allowed pairs",
        key="co_causal",
        help="Realized only by a kernel that skips masked blocks.",
    )
    precision = costs.Precision(
        dtype,
        weights=None if w_choice == SAME else w_choice,
        kv=None if kv_choice == SAME else kv_choice,
        state=costs.stated_state_dtype(shape) if st_choice == SAME_KV else st_choice,
    )
    return T, batch, causal, precision


def gpus(cals) -> tuple[str, int]:
    """The GPU (or a kernel bench run's hardware) and how many."""
    gpu_name = widgets.selectbox(
        "GPU", costs.hardware_choices(cals), key=GPU_KEY, default="a100-80gb", ids=costs.HARDWARE_IDS
    )
    n_gpus = int(
        widgets.number("GPUs (weights and cache sharded)", 1, costs.MAX_GPUS, 1, key="co_ngpu", step=1)
    )
    return gpu_name, n_gpus


def time_inputs() -> tuple[int, int, float]:
    """The whole model's time: the prompt P, the generated tokens N, the efficiency."""
    st.header("Whole model: time")
    P = int(widgets.number("prompt P (tokens)", 1, costs.MAX_SEQ_LEN, 4096, key="co_P", step=1024))
    N = int(widgets.number("generated tokens N", 0, costs.MAX_GEN_LEN, 256, key="co_N", step=64))
    eff = float(
        widgets.number(
            "efficiency (fraction of peak)",
            0.01,
            1.0,
            1.0,
            key="co_eff",
            step=0.05,
            help="1 = the bounds; below 1, each bound ÷ efficiency, labelled an estimate",
        )
    )
    return P, N, eff
