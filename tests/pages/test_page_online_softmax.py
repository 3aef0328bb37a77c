"""AppTest (no browser) of the Online-softmax page: the toy walk and its ▶ play, slips, tiles,
merge, precision and the memory bill. Oracles: the spec's numbers (cards 12 and 15, Drill 11),
torch SDPA computed here, and a brute-force tile count over attn_core.masks."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from apptest_helpers import badges, chart, heatmap_z

from attn_core.masks import causal_mask
from attn_core.views.inputs import random_qkv

PAGE = "pages/online_softmax.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_defaults_replay_card_15_on_bank(app):
    at = app(PAGE)
    assert not at.exception and at.error.len == 0
    m = metrics(at)
    # card 15: (1.414, 1.736, (1, 0.493)) → (0.576, 0.284); the page prints 4 significant digits
    assert (m["m (running max)"], m["ℓ (normalizer)"], m["u (unnormalized output)"]) == (
        "1.414",
        "1.736",
        "(1, 0.493)",
    )
    assert m["online: u_N / ℓ_N"] == m["direct: softmax(s) · V"] == "(0.576, 0.284)"
    assert badges(at)[0].startswith(":green-badge[✓ matches torch SDPA")
    scores = chart(at, "Scores S")
    assert len(scores["layout"]["shapes"]) == 2  # the current tile and the query row
    assert any("replays card 15" in c.value for c in at.caption)  # the toy's walk-through caption


def test_the_card_15_caption_is_for_the_toy_only(app):
    at = app(PAGE, in_src="random", in_L=3, in_S=3)
    assert not at.exception
    assert not any("replays card 15" in c.value for c in at.caption)


def test_play_steps_through_every_block(app):
    at = app(PAGE)
    at.button(key="os_step_play").click().run()
    assert at.slider(key="os_step").value == 0
    seen = []
    for _ in range(3):  # AppTest has no timer: each run is one tick of the fragment
        at.run()
        m = metrics(at)
        seen.append((at.slider(key="os_step").value, m["rescale e^(m_old − m_new)"], m["ℓ (normalizer)"]))
    # card 15: rescale 0 on the first block (m_0 = −∞), 0.243 when river raises the max, then 1
    assert seen == [(1, "0", "1"), (2, "0.243", "1.243"), (3, "1", "1.736")]
    assert at.session_state["os_step_playing"] is False
    assert not at.exception


def test_shared_link_opens_a_step(app):
    at = app(PAGE, os_step=2)
    assert metrics(at)["ℓ (normalizer)"] == "1.243"
    assert any("0.243" in i.value for i in at.info)  # the max moved: the rescale is explained


def test_random_row_matches_sdpa_at_every_block_size(app):
    at = app(PAGE, in_src="random", in_L=7, in_S=11, in_H=2, in_Hkv=1, in_seed=5, os_row=3, os_head=1)
    qkv = random_qkv(7, 11, 4, 3, 2, 1, 5)
    expected = F.scaled_dot_product_attention(qkv.q, qkv.k, qkv.v, enable_gqa=True)[0, 1, 3]
    for block in (1, 4, 11):
        at.slider(key="os_block").set_value(block).run()
        assert not at.exception
        assert badges(at)[0].startswith(":green-badge")
        shown = metrics(at)["online: u_N / ℓ_N"].strip("()").split(", ")
        # 3 significant digits on screen: half a unit of the third digit, relative
        assert [float(x) for x in shown] == pytest.approx(expected.tolist(), rel=5e-3, abs=5e-4)


@pytest.mark.parametrize(
    ("slip", "query"),
    [
        ("wrong_sign", {}),
        ("l_not_u", {"in_src": "random", "in_L": 4, "in_S": 12, "in_seed": 1}),
        ("no_max", {}),
    ],
)
def test_each_slip_fails_its_badge(app, slip, query):
    at = app(PAGE, **query)
    at.toggle(key="os_slip_on").set_value(True).run()
    at.selectbox(key="os_slip_which").set_value(slip).run()
    assert not at.exception
    b = badges(at)
    assert b[0].startswith(":green-badge") and b[1].startswith(":red-badge[✗")


def test_the_toy_hides_the_l_not_u_slip(app):
    """v_the = (0, 0) is the only value seen before the max moves: nothing to mis-rescale."""
    at = app(PAGE)
    at.toggle(key="os_slip_on").set_value(True).run()
    at.selectbox(key="os_slip_which").set_value("l_not_u").run()
    assert all(b.startswith(":green-badge") for b in badges(at))


def test_tiles_computed_and_skipped_under_causal(app):
    at = app(
        PAGE, in_src="random", in_L=16, in_S=16, in_mask="causal (top-left)", os_section="Tiles & block size"
    )
    at.slider(key="os_tile_block").set_value(4).run()
    assert not at.exception
    m = metrics(at)
    assert (m["tiles computed"], m["tiles skipped"], m["tiles in all"]) == ("10", "6", "16")  # 4·5/2, 4·3/2
    grid = heatmap_z(chart(at, "Tiles of 4 × 4"))
    allowed = causal_mask(16, 16, "top_left").reshape(4, 4, 4, 4).any(3).any(1)  # brute force
    assert np.array_equal(grid > 0.5, allowed.numpy())
    assert badges(at)[0].startswith(":green-badge")


def test_too_many_tiles_is_refused_with_the_fix(app):
    at = app(PAGE, in_src="random", in_L=200, in_S=200, in_dk=4, in_dv=4, os_section="Tiles & block size")
    at.slider(key="os_tile_block").set_value(1).run()
    assert not at.exception
    # ⌈200/b⌉² ≤ 1,024 first holds at b = 7 (29² = 841; b = 6 gives 34² = 1,156)
    assert any("40,000 tiles" in e.value and "at least 7" in e.value for e in at.error)
    at.slider(key="os_tile_block").set_value(7).run()
    assert at.error.len == 0 and metrics(at)["tiles in all"] == "841"


def test_merge_drill_11_and_split_k(app):
    at = app(PAGE, os_section="Merge (split-K)")
    assert not at.exception
    drill = next(m.value for m in at.markdown if m.value.startswith("Drill 11"))
    assert "**3.6881**" in drill and "**5.1852**" in drill
    merged = at.dataframe[0].value
    assert merged["partial"].tolist() == ["a", "b", "merged"]
    assert merged["u / ℓ"].iloc[2] == "(0.576, 0.284)"
    assert merged["m"].iloc[2] == pytest.approx(math.sqrt(2), abs=1e-12)  # river's score 2/√2
    assert badges(at)[0].startswith(":green-badge")


def test_precision_table(app):
    at = app(PAGE, os_section="Precision")
    assert not at.exception
    df = at.dataframe[0].value
    assert len(df) == 4 * 6 and df["finite"].all()
    fp32_state = df[(df["state in"] == "float32") & df["dtype"].isin(["float16", "bfloat16"])]
    assert (fp32_state["error / unit roundoff"] <= 1.0 + 1e-2).all()  # only the output rounding (≤ u)
    assert len(chart(at, "Relative error vs T")["data"]) == 6


def test_memory_bill_card_12(app):
    at = app(PAGE, os_section="Memory bill")
    m = metrics(at)
    assert m["naive, per head"] == "32 MiB" and m["naive, per layer"] == "1 GiB"
    assert m["naive, all 32 layers"] == "32 GiB"
    assert m["online (fp32 lse), per layer"] == "512 KiB" and m["online, all 32 layers"] == "16 MiB"
    at.selectbox(key="os_model").set_value("llama-3-8b").run()
    at.number_input(key="os_T").set_value(131_072).run()
    m = metrics(at)
    assert m["naive, per head"] == "32 GiB" and m["naive, per layer"] == "1 TiB"
    assert m["online (fp32 lse), per layer"] == "16 MiB"
    assert not at.exception


def test_bad_input_is_explained_and_other_sections_work(app):
    at = app(PAGE, in_src="random", in_L=8, in_S=6, in_mask="causal (bottom-right, cached prefix)")
    assert not at.exception
    assert any("may attend to no key" in e.value for e in at.error)
    at.radio(key="os_section").set_value("Memory bill").run()
    assert metrics(at)["naive, per layer"] == "1 GiB"  # sections without Q, K, V keep working


def test_no_max_slip_overflows_in_fp16_only(app):
    at = app(PAGE)
    at.toggle(key="os_slip_on").set_value(True).run()
    at.selectbox(key="os_slip_which").set_value("no_max").run()
    assert badges(at)[1].startswith(":red-badge")  # fp16, scores ×10: e^14.1 > 65,504
    at.selectbox(key="os_dtype").set_value("float64").run()
    assert all(b.startswith(":green-badge") for b in badges(at))  # exact on paper
    assert torch.finfo(torch.float16).max == 65504


@pytest.mark.parametrize("section", ["Step through", "Tiles & block size", "Merge (split-K)"])
def test_one_query_one_key_works_everywhere(app, section):
    """The smallest input: sliders with nothing to choose are left out instead of failing."""
    at = app(PAGE, os_section=section)
    at.radio(key="in_src").set_value("typed matrices").run()
    at.text_area(key="in_Q").set_value("1 0").run()
    at.text_area(key="in_K").set_value("1 0").run()
    at.text_area(key="in_V").set_value("2 3").run()
    assert not at.exception and at.error.len == 0
    if section == "Step through":
        assert metrics(at)["online: u_N / ℓ_N"] == "(2, 3)"  # one key: all weight on it
