"""AppTest (no browser) of the Cost calculator: the spec's numbers on screen, every section,
an uploaded and a pasted config, malformed configs and links. Oracle: the cards' check numbers."""

import functools
import json

import pytest
from apptest_helpers import metric, open_section, plotly_array
from conftest import hf_numel

PAGE = "pages/costs.py"

# GPT-2 small as its config.json on the Hub spells it (n_inner null -> 4d, no KV-head key -> MHA).
GPT2_CONFIG = {
    "model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "n_inner": None,
    "n_positions": 1024, "vocab_size": 50257, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
}  # fmt: skip


def shape_card(at) -> str:
    return next(m.value for m in at.markdown if "query heads" in m.value)


section = functools.partial(open_section, key="co_section", errors_allowed=True)


def table_with(at, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_defaults_show_card13_and_card11_numbers(app):
    at = app(PAGE)
    assert not at.exception and at.error.len == 0
    assert metric(at, "KV cache / token") == "512 KiB"
    assert metric(at, "KV cache, B × T") == "2 GiB"
    assert "**13.48 GB** of fp16 weights" in shape_card(at)
    assert metric(at, "attention FLOPs") == "14.2%"
    assert metric(at, "crossover T*") == "24,704"
    # Fits: the 81,920 MiB an A100 80GB reports; a step reads 1 of the 32,000 embedding rows.
    assert metric(at, "seqs that fit (≤)") == str((81_920 * 2**20 - 13_476_831_232) // 2**31) == "33"
    weights_read = (6_738_415_616 - 32_000 * 4096 + 4096) * 2
    assert metric(at, "decode step (≥)") == f"{1e3 * (weights_read + 2**31) / 2.039e12:.3g} ms" == "7.53 ms"
    # Card 13 as quoted, beside it: 80·10^9 B holds 30 sequences; reading every weight takes 6.61 ms.
    note = next(m.value for m in at.markdown if "As the cards count it" in m.value)  # in its expander
    assert "**30** sequences" in note and "**6.61 ms** + 1.05 ms" in note and "81,920 MiB" in note
    assert "h = 32 query heads · H_kv = 32 KV heads" in shape_card(at)
    flops = table_with(at, "all pairs (GFLOP)")
    assert flops["all pairs (GFLOP)"].tolist()[:3] == ["549.8 GFLOP", "274.9 GFLOP", "1,108.1 GFLOP"]
    assert flops["share"].iloc[1] == "14.2%" and flops["share, causal"].iloc[1] == "7.66%"
    # The layer strip (32 full layers) and the stacked breakdown, the other mode's share dashed.
    assert len(at.get("plotly_chart")) == 2


def test_causal_toggle_moves_the_crossover(app):
    at = app(PAGE)
    at.toggle(key="co_causal").set_value(True).run()
    assert metric(at, "crossover T* (causal)") == "49,407"
    assert metric(at, "attention FLOPs") == "7.66%"


@pytest.mark.parametrize(("T", "share"), [(512, "2.03%"), (32_768, "57.0%")])
def test_share_at_other_lengths(app, T, share):
    at = app(PAGE, co_T=T)
    assert metric(at, "attention FLOPs") == share


def test_llama2_70b_gqa_vs_mha_on_two_gpus(app):
    at = app(PAGE, co_model="llama-2-70b", co_ngpu=2)
    section(at, "KV cache & GQA")
    df = table_with(at, "H_kv")
    by_kind = {k.split(" ")[0]: row for k, (_, row) in zip(df["kind"], df.iterrows(), strict=True)}
    assert by_kind["MHA"]["KV per token"] == "2.5 MiB"  # 2,560 KiB
    assert by_kind["GQA"]["KV per token"] == "320 KiB" and by_kind["MQA"]["KV per token"] == "40 KiB"
    card14 = "fit, card 14's 80×10⁹ B/GPU (≤)"
    assert (by_kind["GQA"][card14], by_kind["MHA"][card14]) == (16, 2)
    free = 2 * 81_920 * 2**20 - 137_953_296_384  # 2 × the memory an A100 80GB reports, less the weights
    fits = (by_kind["GQA"]["sequences that fit (≤)"], by_kind["MHA"]["sequences that fit (≤)"])
    assert fits == (free // (1.25 * 2**30), free // (10 * 2**30)) == (25, 3)
    assert by_kind["GQA"]["attention params per layer"] == "150,994,944"
    assert by_kind["MHA"]["attention params per layer"] == "268,435,456"
    assert by_kind["MQA"]["attention params per layer"] == "136,314,880"
    assert "(this model)" in df["kind"].iloc[1]


def test_uploaded_config_is_sized(app):
    at = app(PAGE, co_src="paste or upload config.json")
    at.file_uploader(key="co_upload").set_value(
        ("config.json", json.dumps(GPT2_CONFIG).encode(), "application/json")
    )
    at.run()
    assert not at.exception and at.error.len == 0
    assert metric(at, "KV cache / token") == "36 KiB"  # 2·12·12·64·2
    assert "h = 12 query heads · H_kv = 12 KV heads" in shape_card(at)
    section(at, "How it's asked")
    text = " ".join(m.value for m in at.markdown)
    assert "4d² = 2,359,296" in text and "2,362,368 per layer" in text  # card 9: + 4d biases


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"n_layer": 12, "n_embd": 768', "not valid JSON"),
        (b"\xff\xfe\x00binary", "not UTF-8"),
        # no model_type: nothing is built, so no class fills the head count in (GPT2Config would: 12)
        (
            json.dumps({k: v for k, v in GPT2_CONFIG.items() if k not in ("n_head", "model_type")}).encode(),
            "num_attention_heads",
        ),
        (json.dumps(GPT2_CONFIG | {"num_local_experts": 8}).encode(), "'num_local_experts'"),
    ],
)
def test_malformed_upload_is_reported_and_page_survives(app, content, message):
    at = app(PAGE, co_src="paste or upload config.json")
    at.file_uploader(key="co_upload").set_value(("config.json", content, "application/json"))
    at.run()
    assert not at.exception
    # then either a fix is asked for (an error next to the box), or (GPT-2 with an expert key the
    # formulas cannot place, which transformers builds, ignoring it) the build's figures stand in
    # for the formulas', and the box says why in an info, not an error: nothing is the user's to fix
    built = any("do not cover this model" in w.value for w in at.warning)
    if built:
        assert at.error.len == 0
        assert any(message in i.value and i.value.startswith("Sized by transformers' build") for i in at.info)
    else:
        assert any(message in e.value for e in at.error) and at.info[0].value.startswith("Fix the model")
    # The rest keeps working: going back to a preset restores every number.
    at.radio(key="co_src").set_value("preset").run()
    assert at.error.len == 0 and metric(at, "KV cache / token") == "512 KiB"


def test_pasted_config_then_fixed(app):
    at = app(PAGE, co_src="paste or upload config.json")
    # no model_type: nothing is built, so no class fills the layer count in (GPT2Config would: 12)
    broken = {k: v for k, v in GPT2_CONFIG.items() if k not in ("n_layer", "model_type")}
    at.text_area(key="co_paste").set_value(json.dumps(broken)).run()
    assert not at.exception and any("num_hidden_layers" in e.value for e in at.error)
    at.text_area(key="co_paste").set_value(json.dumps(GPT2_CONFIG)).run()
    assert at.error.len == 0 and metric(at, "KV cache / token") == "36 KiB"


def test_shared_link_llama3_at_128k(app):
    at = app(PAGE, co_model="llama-3-8b", co_T=131_072)
    assert metric(at, "KV cache, B × T") == "16 GiB"
    assert any("trained context of 8,192" in w.value for w in at.warning)
    section(at, "Score memory")
    assert metric(at, "naive, per head") == "32 GiB"  # card 12: Llama 3 8B at 131,072 tokens
    assert metric(at, "naive, per layer") == "1 TiB" and metric(at, "online, per layer") == "16 MiB"


def test_int8_cache_halves_it(app):
    at = app(PAGE, co_kvdtype="int8")
    assert metric(at, "KV cache / token") == "256 KiB"
    assert "**13.48 GB** of fp16 weights" in shape_card(at)  # weights stay fp16


def test_score_memory_card12(app):
    at = section(app(PAGE), "Score memory")
    assert metric(at, "naive, per head") == "32 MiB"
    assert metric(at, "naive, per layer") == "1 GiB" and metric(at, "naive, 32 layers") == "32 GiB"
    assert metric(at, "online, per layer") == "512 KiB" and metric(at, "online, 32 layers") == "16 MiB"


def test_serving_section(app):
    at = section(app(PAGE), "Serving & decode")
    weights_read = (6_738_415_616 - 32_000 * 4096 + 4096) * 2
    assert metric(at, "tokens/s, upper bound") == f"{2.039e12 / (weights_read + 2**31):,.1f}" == "132.7"
    assert metric(at, "decode attention FLOP/byte") == "1"
    df = table_with(at, "ridge (FLOP/byte)")
    a100 = df[df["GPU"].str.contains("A100 80GB")].iloc[0]
    assert (a100["sequences that fit (≤)"], a100["fit at the vendor label (≤)"]) == (33, 30)
    assert (a100["ridge (FLOP/byte)"], a100["bandwidth"], a100["memory reported"]) == (
        "153",
        "2,039 GB/s",
        "80 GiB",
    )
    assert any("153 FLOP/byte" in m.value and "memory-bound" in m.value for m in at.markdown)


def test_how_its_asked_answers_for_the_chosen_model(app):
    at = section(app(PAGE), "How it's asked")
    text = " ".join(m.value for m in at.markdown)
    # Card 11: the quadratic part is 14.2% at 4K; doubling T multiplies FLOPs by
    # (2·(549.8 + 1,108.1) + 4·274.9) / 1,932.8 = 2.28, not 4.
    assert "14.2%" in text and "by 2.28" in text and "24,704" in text
    assert (
        "512 KiB per token" in text and "at most 33 sequences" in text and "(30 in the vendor's 80 GB" in text
    )


@pytest.mark.parametrize(
    "name", ["Whole model", "FLOPs", "KV cache & GQA", "Serving & decode", "Score memory", "How it's asked"]
)
@pytest.mark.parametrize("model", ["gpt2", "mistral-7b", "seed-80l-mha", "llama-4-scout"])
def test_every_section_renders_with_csv(app, name, model):
    at = section(app(PAGE, co_model=model, co_causal="true"), name)
    assert at.error.len == 0
    assert len(at.get("download_button")) == len(at.dataframe)  # every table has its CSV
    assert len(at.dataframe) >= (0 if name == "How it's asked" else 1)


def test_mistral_window_never_crosses(app):
    at = app(PAGE, co_model="mistral-7b", co_causal="true", co_T=100_000)
    assert metric(at, "crossover T* (causal)") == "never"
    # capped by the 4,096-token window: W − 1 = 4,095 tokens × 32·2·8·128·2 B (transformers' dynamic cache)
    assert 4095 * 32 * 2 * 8 * 128 * 2 == 511.875 * 2**20
    assert metric(at, "KV cache, B × T") == "511.88 MiB"


@pytest.mark.parametrize(
    "query", [{"co_T": "abc"}, {"co_T": str(10**9)}, {"co_model": "gpt-5"}, {"co_B": "-3"}]
)
def test_malformed_link_falls_back(app, query):
    at = app(PAGE, **query)
    assert not at.exception
    assert metric(at, "KV cache / token") == "512 KiB"


def test_weights_that_do_not_fit(app):
    at = section(app(PAGE, co_model="llama-2-70b"), "KV cache & GQA")
    assert metric(at, "seqs that fit (≤)") == "0"
    assert any("weights alone exceed" in w.value for w in at.warning)
    assert any("do not fit in 1 × NVIDIA A100" in w.value for w in at.warning)
    at.number_input(key="co_ngpu").set_value(2).run()
    assert at.warning.len == 0 and metric(at, "seqs that fit (≤)") == "25"  # card 14's 16 at 2 × 80·10⁹ B


def chart_layouts(at) -> list[dict]:
    """Every chart's layout except the model card's layer strip."""
    layouts = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
    return [x for x in layouts if x["title"]["text"] != "Attention type of each layer"]


def chart_data(at, title: str) -> list[dict]:
    return next(json.loads(c.proto.spec)["data"] for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["layout"]["title"]["text"] == title)  # fmt: skip


def test_charts_mark_the_crossovers_and_gpu_memory(app):
    at = app(PAGE)
    (flops,) = chart_layouts(at)
    assert {sh["x0"] for sh in flops["shapes"]} == {24_704, 49_407, 4096}  # card 11's T*s and the chosen T
    at = section(app(PAGE, co_model="llama-2-70b", co_ngpu=2), "KV cache & GQA")
    (kv,) = chart_layouts(at)
    lines_y = sorted(sh["y0"] for sh in kv["shapes"] if sh["xref"] == "paper")
    # 2 × the 80 GiB an A100 80GB reports, and what the 137.95 GB of weights leave, in GiB.
    free = 2 * 81_920 * 2**20 - 137_953_296_384
    assert lines_y == [free / 2**30, 160.0]  # same float division, exact JSON round trip


# -- The whole model ------------------------------------------------------------------------
def strip_counts(at) -> dict[str, int]:
    """Layer cells per attention type, read from the strip's traces."""
    return {t["name"].split(" ")[0]: len(t["x"]) for t in chart_data(at, "Attention type of each layer")}


def test_moe_preset_whole_model(app):
    """Mixtral: 46.7B held, 12.9B run per token (Mistral AI's counts); 6 of 8 experts idle per layer."""
    at = section(app(PAGE, co_model="mixtral-8x7b"), "Whole model")
    assert at.error.len == 0 and strip_counts(at) == {"full": 32}
    df = table_with(at, "active per token")
    row = df.set_index("part").loc["total / active"]
    assert row["total (short)"] == "46.7B"
    active = int(row["active per token"].replace(",", ""))
    assert (
        active
        == int(df.set_index("part").loc["total / active", "total"].replace(",", ""))
        - 32 * 6 * 3 * 4096 * 14336
    )
    assert round(active / 1e9, 1) == 12.9
    assert any("8 routed experts" in m.value and "top-2" in m.value for m in at.markdown)
    # Held vs run: the stacked bars sum to the same two totals.
    bars = chart_data(at, "Parameters: held vs run per token")
    assert round(sum(t["y"][1] for t in bars), 3) == round(active / 1e9, 3)
    assert len(at.get("download_button")) == len(at.dataframe)  # every table has its CSV
    badges = [m.value for m in at.markdown if "badge[" in m.value]
    assert len(badges) == 2 and all("✓" in b for b in badges)


def test_deepseek_mla_and_gpt_oss_layer_types(app):
    at = section(app(PAGE, co_model="deepseek-v3", co_T=131_072), "Whole model")
    assert strip_counts(at) == {"MLA": 61}
    text = " ".join(m.value for m in [*at.markdown, *at.caption])
    assert "512 + 64 = 576 numbers per token per layer" in text and "absorbed" in text
    assert metric(at, "KV cache, B × T") == "8.58 GiB"  # 61 · 576 · 2 B · 131,072 = 9,210,691,584 B
    section(at, "KV cache & GQA")
    assert any("MLA caches one latent" in i.value for i in at.info)
    section(at, "How it's asked")
    text = " ".join(m.value for m in at.markdown)
    assert "68.62 KiB per token (L·(r_kv + d_rope)·b = 61·(512 + 64)·2)" in text  # 70,272 B
    assert "128 × (192 + 128) = 40,960" in text
    at = section(app(PAGE, co_model="gpt-oss-120b"), "Whole model")
    assert strip_counts(at) == {"full": 18, "sliding": 18}
    rows = table_with(at, "layer kind").set_index("layer kind")
    assert (
        rows.loc["sliding-window attention, 18 with experts", "cached at T = 4,096"] == "127"  # W − 1
        and rows.loc["full attention, 18 with experts", "cached at T = 4,096"] == "4,096"
    )


def test_pasted_nested_config(app):
    """Gemma 3 as shipped: the language model under text_config; five sliding layers per global one."""
    from attn_core.cost.config_reader import load_preset_config

    at = app(PAGE, co_src="paste or upload config.json")
    at.text_area(key="co_paste").set_value(json.dumps(load_preset_config("gemma-3-27b"))).run()
    assert not at.exception and at.error.len == 0
    assert strip_counts(at) == {"full": 10, "sliding": 52}
    # 2·16·128·2 B per token per layer × (10 layers × 4,096 + 52 layers × W − 1 = 1,023).
    assert (
        metric(at, "KV cache, B × T") == "735.59 MiB" and 8192 * (10 * 4096 + 52 * 1023) == 735.59375 * 2**20
    )


def test_time_bounds_and_efficiency(app):
    at = section(app(PAGE, co_N=4), "Whole model")
    times = table_with(at, "lower bound").set_index("quantity")
    weights_read = (6_738_415_616 - 32_000 * 4096 + 4096) * 2
    assert (
        times.loc["decode step at P", "lower bound"]
        == "7.53 ms"
        == f"{1e3 * (weights_read + 2**31) / 2.039e12:.3g} ms"
    )
    at.number_input(key="co_eff").set_value(0.5).run()
    times = table_with(at, "estimate at 0.5 of peak").set_index("quantity")
    assert times.loc["decode step at P", "estimate at 0.5 of peak"] == "15.1 ms"


def test_malformed_nested_value_names_the_key(app):
    at = app(PAGE, co_src="paste or upload config.json")
    at.text_area(key="co_paste").set_value('{"text_config": {"num_hidden_layers": Infinity}}').run()
    assert not at.exception and any("'num_hidden_layers'" in e.value for e in at.error)


def test_hybrid_preset_ledger_and_memory_chart(app):
    """Jamba 1.5 Mini: the strip shows 28 Mamba and 4 attention layers; the ledger gives each kind's
    count, cache per token (4 × 2 × 8 × 128 × 2 B = 16 KiB for attention, none for Mamba) and state
    (28 × (8,192 × 4 + 8,192 × 16) × 2 B = 8.75 MiB per sequence, fp16); the memory chart sets the
    hybrid's flat state beside its all-attention twin, whose cache grows 8 times as fast."""
    at = section(app(PAGE, co_model="jamba-1.5-mini"), "Whole model")
    assert at.error.len == 0 and strip_counts(at) == {"full": 4, "mamba": 28}
    rows = table_with(at, "layer kind").set_index("layer kind")
    # Attention on layers 4, 12, 20, 28 (even), experts on the odd layers: all 16 MoE layers are Mamba.
    mamba, full = rows.loc["Mamba, 16 with experts"], rows.loc["full attention"]
    assert mamba["layers"] == 28 and full["layers"] == 4
    assert mamba["cache per token"] == "–" and full["cache per token"] == "16 KiB"
    assert mamba["state per sequence"] == "8.75 MiB" and full["state per sequence"] == "–"
    title = "Memory vs T: a hybrid's flat state and few-layer slope, beside all attention"
    series = {t["name"]: plotly_array(t["y"]) for t in chart_data(at, title)}
    state = series["jamba-1.5-mini: fixed state"]
    assert min(state) == max(state) == pytest.approx(28 * (8192 * 4 + 8192 * 16) * 2 / 2**30)
    ours = series["jamba-1.5-mini: cache (4 attention layers)"]
    twin = next(y for name, y in series.items() if name.startswith("all-attention twin"))
    assert twin[-1] > ours[-1] * 8  # 32 attention layers' cache, plus weights, against 4 layers' cache
    assert "hybrid: 28 Mamba + 4 full attention" in next(c.value for c in at.caption if "hybrid:" in c.value)


@pytest.mark.parametrize("name", ["qwen3-next-80b-a3b", "kimi-linear-48b-a3b", "nemotron-h-8b"])
def test_every_section_of_a_hybrid_runs(app, name):
    """Each section of the page on the other hybrids: no exception, no error, and the uniform-routing
    figure beside the floor wherever the model has experts."""
    at = app(PAGE, co_model=name, co_B=32, co_gpu="h200", co_ngpu=2)
    assert not at.exception and at.error.len == 0
    for name_ in ("Whole model", "FLOPs", "KV cache & GQA", "Score memory", "How it's asked"):
        section(at, name_)
        assert at.error.len == 0
    section(at, "Serving & decode")
    routing = any("**uniform routing**" in m.value for m in at.markdown)
    assert routing == (name != "nemotron-h-8b")  # Nemotron-H 8B has no experts


def test_a_preset_the_formulas_do_not_cover_is_sized_by_its_recorded_build(app):
    """LFM2 1.2B (short convolutions): no formula reads it; the page shows transformers' build,
    whose total is the publisher's 1.17B (assets/models/README.md), instead of refusing."""
    at = app(PAGE, co_model="lfm2-1.2b")
    assert not at.exception
    assert any("do not cover this model" in w.value for w in at.warning)
    assert not any(i.value.startswith("Fix") for i in at.info)  # not a fault of the input: said so
    rows = table_with(at, "value").set_index("figure")
    total = int(rows.loc["parameters: total", "value"].split(" ")[0].replace(",", ""))
    assert abs(total - 1.17e9) / 1.17e9 < 0.01


def test_a_pasted_config_the_formulas_misread_names_the_part(app):
    """OLMo's LayerNorms have no weights: the formulas' norms differ from transformers' build, and
    the page says so with both figures (oracle: the build's own parameter count on meta)."""
    from attn_core.anatomy.build import completed_config

    config = completed_config({"model_type": "olmo"})
    oracle = hf_numel({"model_type": "olmo"})
    at = app(PAGE, co_src="paste or upload config.json")
    at.text_area(key="co_paste").set_value(json.dumps(config)).run()
    assert not at.exception
    assert any("differ from transformers" in e.value for e in at.error)
    rows = table_with(at, "transformers' build").set_index("figure")
    assert rows.loc["parameters, total", "transformers' build"] == f"{oracle:,} parameters"
    assert "parameters, norms" in rows.index


def test_a_config_only_the_build_sizes_gets_its_gpu_figures(app):
    """GPT-2 with an expert key the formulas cannot place (transformers builds it, ignoring the key):
    the page shows the build's figures and, on the sidebar's GPU, its weights at 2 bytes per
    parameter (fp16) — the build's own parameter count, by hand — and whether one sequence fits."""
    from attn_core.anatomy.derive import derive
    from attn_core.cost.units import format_bytes

    config = GPT2_CONFIG | {"num_local_experts": 8}
    at = app(PAGE, co_src="paste or upload config.json")
    at.file_uploader(key="co_upload").set_value(
        ("config.json", json.dumps(config).encode(), "application/json")
    )
    at.run()
    assert not at.exception and at.error.len == 0
    rows = next(
        df.value for df in at.dataframe if "figure" in df.value.columns and "weights" in set(df.value.figure)
    )
    by = dict(zip(rows.figure, rows.value, strict=True))
    assert by["weights"] == format_bytes(2 * derive(config).params_total)
    assert any(k.startswith("sequences of T") and v.replace(",", "").isdigit() for k, v in by.items())
