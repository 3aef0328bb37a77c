"""AppTest of the Trained heads page. Oracles: the shipped model's maps from the plain-torch /
SDPA reference forward in tests/trained/test_model.py, the circuits as explicit matrix products,
ablation by weight surgery, a training run made here with the same seed."""

import math

import numpy as np
import pytest
import torch
from apptest_helpers import badges, chart, frame, heatmap_z, metric, ok, plotly_array
from trained_reference import reference_forward

from attn_core.trained import checkpoint
from attn_core.trained.slots import HANDOVER_S, TrainingSlots
from attn_core.trained.tasks import TaskId, encode
from attn_core.trained.training import eval_loss
from attn_core.views import trained_heads as explore

PAGE = "pages/trained_heads.py"
# the page draws float32 maps; the reference runs in float64 on the same weights: float32 rounding
# of scores of order 10 moves weights by ~1e-5, a wrong head or query is off by O(0.1)
TOL = 1e-4


@pytest.fixture(scope="module")
def ref_maps():
    model = checkpoint.load().model.double()
    _, maps = reference_forward(model, torch.tensor([encode(explore.DEFAULT_TEXT)]))
    return torch.stack([m[0] for m in maps]).detach()  # (n_layer, n_head, T, T)


def test_opens_on_the_checkpoint_with_every_map_checked(app, ref_maps):
    at = app(PAGE)
    ok(at)
    assert at.title[-1].value == "Trained heads"
    assert any("✓ matches attn_core.attention" in b for b in badges(at))
    grid = chart(at, "Every head")
    assert len(grid["data"]) == 8  # 2 layers × 4 heads
    for n, trace in enumerate(grid["data"]):
        z = plotly_array(trace["z"])
        np.testing.assert_allclose(z, ref_maps[n // 4, n % 4].numpy(), atol=TOL, rtol=0)
    # the enlarged head defaults to the best induction head: layer 1 on the shipped model
    layer, head = (int(x) for x in at.selectbox(key="th_head").value[1:].split("H"))
    np.testing.assert_allclose(heatmap_z(chart(at, f"L{layer}H{head} on")), ref_maps[layer, head], atol=TOL)
    scores = frame(at, "previous-token (your text)")
    assert len(scores) == 8
    expected = ref_maps.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1).flatten()
    np.testing.assert_allclose(scores["previous-token (your text)"], expected.numpy(), atol=1e-3)


def test_enlarging_another_head(app, ref_maps):
    at = app(PAGE)
    at.selectbox(key="th_head").set_value("L0H2").run()
    ok(at)
    np.testing.assert_allclose(heatmap_z(chart(at, "L0H2 on")), ref_maps[0, 2], atol=TOL)


@pytest.mark.parametrize(
    ("text", "message"),
    [("abc1", "only the letters"), ("a", "at least two"), ("ab" * 20, "at most 32")],
)
def test_bad_sequence_gives_a_message_and_the_page_keeps_working(app, text, message):
    at = app(PAGE)
    at.text_area(key="th_text").input(text).run()
    assert not at.exception
    assert message in at.error[0].value
    at.radio(key="th_section").set_value("Ablation & circuits").run()  # the rest still works
    assert not at.exception and any("✓" in b for b in badges(at))


def test_ablation_and_circuits(app):
    model = checkpoint.load().model
    at = app(PAGE, th_section="Ablation & circuits", th_circ="L0H1")
    at.multiselect(key="th_ablate").set_value(["L0H1"]).run()
    ok(at)
    surgery = checkpoint.load().model
    with torch.no_grad():
        surgery.h[0].attn.c_proj.weight[:, 16:32] = 0  # head 1 of layer 0, head size 16
    assert metric(at, "with the chosen heads zeroed") == f"{eval_loss(surgery, TaskId.INDUCTION):.4f} nats"
    # QK = E W_Q W_Kᵀ Eᵀ / √16 with W_Q, W_K the head's rows of c_attn
    E, W = model.wte.weight.double(), model.h[0].attn.c_attn.weight.double()
    qk = (E @ W[16:32].T) @ (E @ W[64 + 16 : 64 + 32].T).T / math.sqrt(16)
    np.testing.assert_allclose(heatmap_z(chart(at, "QK")), qk.detach().numpy(), rtol=1e-9, atol=1e-12)
    ov = E @ W[128 + 16 : 128 + 32].T @ model.h[0].attn.c_proj.weight.double()[:, 16:32].T
    ov = ov @ model.lm_head.weight.double().T
    np.testing.assert_allclose(heatmap_z(chart(at, "OV")), ov.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert sum("✓ matches the layer's own projections" in b for b in badges(at)) == 1


def test_a_tiny_training_run_through_the_page(app):
    at = app(PAGE, th_section="Train", th_steps=50, th_size="1 layer × 2 heads, d_model 32", th_task="copy")
    ok(at)
    at.button(key="th_go").click().run()
    ok(at)
    assert "Trained 50 of 50 steps" in at.success[0].value
    # the same run made here: the page's curve is its 50-step mean
    mine = explore.start_run(TaskId.COPY, "1 layer × 2 heads, d_model 32", 0, 50)
    explore.train(mine)
    curve = chart(at, "Training loss: copy")["data"][0]
    assert plotly_array(curve["y"])[-1] == pytest.approx(sum(mine.losses) / 50, abs=1e-6)
    at.radio(key="th_model").set_value("your run").run()
    at.radio(key="th_section").set_value("Read the heads").run()
    ok(at)  # the default text (25 tokens) fits the copy model's 25 positions
    assert len(chart(at, "Every head")["data"]) == 2


def test_a_busy_server_says_so(app, monkeypatch):
    at = app(PAGE, th_section="Train", th_steps=50, th_size="1 layer × 2 heads, d_model 32")
    monkeypatch.setattr(explore, "SLOTS", TrainingSlots())
    assert explore.SLOTS.take("another visitor") == ""  # who holds the only slot
    at.button(key="th_go").click().run()
    assert not at.exception
    assert "holds the server's training slot" in at.warning[0].value


def test_one_run_per_session_and_the_slot_survives_an_interrupted_run(monkeypatch):
    monkeypatch.setattr(explore, "SLOTS", TrainingSlots())
    state = explore.start_run(TaskId.COPY, "1 layer × 2 heads, d_model 32", 0, 120)
    assert explore.SLOTS.take("tab-a") == ""  # tab-a is training (in another thread)
    assert explore.run_training(state, "tab-a", lambda p: None).busy and state.step == 0
    explore.SLOTS.give_back("tab-a")

    def interrupted(progress):  # what a Streamlit rerun does inside the callback
        raise RuntimeError("rerun")

    with pytest.raises(RuntimeError):
        explore.run_training(state, "tab-b", interrupted)
    assert state.step == explore.REPORT_EVERY  # stopped at the first report; the model keeps its steps
    out = explore.run_training(state, "tab-b", lambda p: None)  # slot and session were released
    assert not out.busy and state.done and out.seconds > 0
    assert explore.SLOTS.training() == set()


def test_the_training_slot_is_shared_fairly(monkeypatch):
    """A visitor refused while another trains gets the slot next: the one who just trained and
    presses Train again waits HANDOVER_S, and only if the waiting visitor does not come back."""
    now = [1000.0]
    monkeypatch.setattr(explore, "SLOTS", TrainingSlots(clock=lambda: now[0]))
    run = lambda: explore.start_run(TaskId.COPY, "1 layer × 2 heads, d_model 32", 0, 50)  # noqa: E731
    refused = []

    def b_presses_meanwhile(progress):
        refused.append(explore.run_training(run(), "tab-b", lambda p: None))

    assert not explore.run_training(run(), "tab-a", b_presses_meanwhile).busy
    assert refused and refused[0].busy and "holds the server's training slot" in refused[0].busy_reason
    again = explore.run_training(run(), "tab-a", lambda p: None)  # A presses Train again at once
    assert again.busy and "kept for a visitor who was waiting" in again.busy_reason
    assert not explore.run_training(run(), "tab-b", lambda p: None).busy  # B's turn
    assert not explore.run_training(run(), "tab-a", lambda p: None).busy  # then A's again
    # B is refused during A's run but never comes back: A waits HANDOVER_S, then may go on
    assert not explore.run_training(run(), "tab-a", b_presses_meanwhile).busy
    assert explore.run_training(run(), "tab-a", lambda p: None).busy
    now[0] += HANDOVER_S + 1
    assert not explore.run_training(run(), "tab-a", lambda p: None).busy
