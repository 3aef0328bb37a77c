"""The page registry: app.py builds st.navigation from it and the home page links every entry."""

from __future__ import annotations

from dataclasses import dataclass

from lab_ui import st_internals


@dataclass(frozen=True)
class PageInfo:
    path: str  # relative to the repo root
    title: str
    icon: str
    blurb: str  # one line for the home page
    url_path: str


HOME = PageInfo("pages/home.py", "Home", ":material/home:", "What the lab is and where to start.", "home")

PAGES: list[PageInfo] = [
    PageInfo(
        "pages/playground.py",
        "Attention Playground",
        ":material/tune:",
        "Type or draw Q, K, V; pick a scale and a mask; see scores, weights and outputs, checked "
        "against torch SDPA.",
        "playground",
    ),
    PageInfo(
        "pages/masks.py",
        "Masks & leakage",
        ":material/visibility_off:",
        "Prove what a causal mask guarantees: change the future, fully masked rows, KV-cache decoding, "
        "mask conventions, permutation equivariance, and every way to get it wrong.",
        "masks",
    ),
    PageInfo(
        "pages/gradients.py",
        "Gradients",
        ":material/trending_down:",
        "The softmax Jacobian of a row, its eigenvalues and saturation; the backward pass checked "
        "against autograd and finite differences; the slips that break it.",
        "gradients",
    ),
    PageInfo(
        "pages/online_softmax.py",
        "Online softmax & tiling",
        ":material/view_module:",
        "FlashAttention's recurrence block by block (running max, normalizer, rescale), exact against "
        "SDPA; tile skipping, split-K merge, precision per dtype and the naive-vs-online memory bill.",
        "online_softmax",
    ),
    PageInfo(
        "pages/kernels.py",
        "Kernels",
        ":material/speed:",
        "Naive vs every SDPA backend vs FlexAttention vs our online softmax and Triton kernel: timed "
        "on this server, checked against float64, with the SDPA kernel that actually ran.",
        "kernels",
    ),
    PageInfo(
        "pages/costs.py",
        "Cost calculator",
        ":material/calculate:",
        "FLOPs, KV cache, GQA, serving budget and decode speed for a real model config (yours or a "
        "preset), right to the byte.",
        "costs",
    ),
    PageInfo(
        "pages/serving.py",
        "Serving",
        ":material/dns:",
        "One model on GPUs under a load, simulated under continuous batching: the fewest GPUs meeting "
        "TTFT/TPOT SLOs, latency vs throughput beside published runs, batch and KV over time, MHA/GQA/MLA/hybrid.",
        "serving",
    ),
    PageInfo(
        "pages/practice.py",
        "Practice",
        ":material/quiz:",
        "Every card as an endless drill: fresh numbers, your answer checked live by attn_core, the slip "
        "you made named, the worked steps, and a link to the live page with your numbers.",
        "practice",
    ),
    PageInfo(
        "pages/scaling.py",
        "Scaling",
        ":material/straighten:",
        "Why 1/√d_k and when it is wrong: Var(q·k), row entropy and saturation, the exact two-key "
        "probability, alignment and μP's 1/d_k, attention sinks, QK-norm and cache eviction.",
        "scaling",
    ),
    PageInfo(
        "pages/one_head.py",
        "What one head can express",
        ":material/hub:",
        "Attention as kernel smoothing, the rank bound, which keys a d_k = 1 head can pick, rank "
        "collapse by depth, and the change of basis that leaves a head unchanged.",
        "one_head",
    ),
    PageInfo(
        "pages/trained_heads.py",
        "Trained heads",
        ":material/model_training:",
        "A tiny transformer whose attention is attn_core's, trained live on this CPU: watch an induction "
        "head form, read every head's scores, ablate heads, see the QK and OV circuits.",
        "trained_heads",
    ),
    PageInfo(
        "pages/hf_heads.py",
        "Hugging Face heads",
        ":material/smart_toy:",
        "A real causal LM's heads (Llama, Mistral, GPT-2 families; GQA, rotary, sliding window) "
        "recomputed by attn_core and checked against the model's own probabilities; sinks, entropy, rank.",
        "hf_heads",
    ),
]


OLD_URL_PATHS = {"bench": "kernels"}  # a page's earlier url_path -> its url_path now: old links open


def open_aliases() -> None:
    """Serve /home as the home page, and a page's earlier url_path as that page. Streamlit serves
    the default page at the root only, so a typed or shared /home (the home page's own url_path)
    would open a "Page not found" dialog, as would a link saved before a page was renamed.
    Call before st.navigation: a request for such a page by name becomes a request for the page."""
    ctx = st_internals.script_run_ctx()
    if ctx is None:
        return
    intent = ctx.pages_manager
    if intent.intended_page_script_hash:
        return
    if intent.intended_page_name == HOME.url_path:
        intent.set_script_intent("", "")
    elif intent.intended_page_name in OLD_URL_PATHS:
        intent.set_script_intent("", OLD_URL_PATHS[intent.intended_page_name])
