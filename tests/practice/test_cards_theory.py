"""The theory drills (cards 3, 8, 10, 16, 17, 18) against oracles that do not share their code.

Oracles: seeded simulations (the tolerance argued next to each), brute force (sweeping queries,
numpy ranks of simulated matrices, torch softmax over explicit rows), a second derivation (the
Gaussian kernel computed directly rather than as biased attention), and the cards' printed check
numbers, typed here as the spec prints them.
"""

from __future__ import annotations

import importlib
import math
from functools import cache

import numpy as np
import pytest
import torch

from attn_core.practice import cards_alignment_sinks, cards_collapse, cards_one_head, cards_variance, drills
from attn_core.practice.question import AnswerKind, Difficulty
from lab_ui.open_page import drill_params
from lab_ui.widgets import url_id

THEORY_CARDS = ("3", "8", "10", "16", "17", "18")
WORKED = {
    "3": cards_variance.WORKED,
    "8": cards_one_head.WORKED["8"],
    "10": cards_one_head.WORKED["10"],
    "16": cards_alignment_sinks.WORKED["16"],
    "17": cards_collapse.WORKED,
    "18": cards_alignment_sinks.WORKED["18"],
}
# Each worked example's answer as the spec prints it (string: its digits set the tolerance).
SPEC = {
    "3": ("128", "36", "7.818", "6.32", "8.314", "4.08", "1.63", "0.774", "0.00116"),
    "8": ("3.36", "3.36"),  # λ = 128^{1/4} (card 8 step 4), = 1/√g at g = 1/√128 (card 18 step 6)
    "10": ("64", "8", "9"),  # T = 64, d_k = 8: rank P 64, rank S 8, log P ≤ d_k + 1
    "16": ("11.3", "1.00", "5.66", "1.118"),
    "17": ("2.44e-4", "0.57", "0.62", "1.10"),
    "18": ("9.13", "7.04", "10.51", "12.7", "0.843", "2.9e-4", "5.26"),
}


def half_last_digit(printed: str) -> float:
    """Half a unit in the last printed digit: "7.818" → 0.0005, "2.9e-4" → 0.5e-5, "128" → 0.5."""
    mantissa, _, exponent = printed.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + int(exponent or 0))


@cache
def draws(card: str) -> tuple:
    """600 seeded questions of the card: seeds 0–199 at each difficulty."""
    return tuple(drills.draw(card, seed, level) for seed in range(200) for level in Difficulty)


def kind(card: str, title_start: str, n: int | None = None) -> list:
    found = [q for q in draws(card) if q.title.startswith(title_start)]
    assert found, (card, title_start)
    return found[:n] if n else found


def typed(answer) -> str:
    if isinstance(answer, tuple):
        return ", ".join(repr(float(x)) for x in answer)
    return repr(float(answer))


# -- the cards' own numbers ---------------------------------------------------------------------------
@pytest.mark.parametrize(("card", "i"), [(c, i) for c in THEORY_CARDS for i in range(len(SPEC[c]))])
def test_worked_examples_reproduce_the_cards_check_numbers(card, i):
    q = WORKED[card][i]()
    printed = SPEC[card][i]
    assert q.card == card
    assert float(q.answer) == pytest.approx(float(printed), abs=half_last_digit(printed) * 1.0001)
    # the printed number, typed as the card prints it, is accepted where it has the digits the drill
    # asks for (entropies are asked to three decimals; the card prints 6.32 with two)
    if half_last_digit(printed) <= max(q.rel_tol * abs(float(q.answer)), q.abs_tol):
        assert q.judge(printed).correct, (printed, q.answer, q.tolerance_text)


@pytest.mark.parametrize("card", THEORY_CARDS)
def test_every_worked_example_is_one_of_the_draws(card):
    prompts = {drills.draw(card, seed, Difficulty.EASY).prompt for seed in range(400)}
    for make in WORKED[card]:
        assert make().prompt in prompts


@pytest.mark.parametrize("card", THEORY_CARDS)
def test_links_go_to_the_theory_pages_with_the_numbers(card):
    page = "scaling" if card in ("3", "16", "18") else "one_head"
    prefix = "sc_" if page == "scaling" else "oh_"
    for q in draws(card)[:60]:
        assert q.link is not None and q.link.url_path == page
        section = importlib.import_module(f"attn_core.views.{page}").Section(q.link.section)
        assert q.link.section_id == url_id(section)  # the page's id, not its label
        params = drill_params(q.link)  # as lab_ui/open_page.py keys them on the page
        assert params[f"{prefix}section"] == q.link.section_id
        assert all(k.startswith(prefix) and isinstance(v, str) for k, v in params.items())
        assert q.steps and all(isinstance(s, str) and s for s in q.steps)


# -- card 3 ---------------------------------------------------------------------------------------------
ALPHA = {"none (1)": lambda d: 1.0, "1/√d_k": lambda d: d**-0.5, "1/d_k": lambda d: 1.0 / d}


def test_card3_variance_against_simulation():
    # N = 10,000 pairs. q·k is a sum of d_k ≥ 8 products of normals: kurtosis 3 + 6/d_k ≤ 3.75, so the
    # sample variance's relative SE is √((κ − 1)/N) ≤ 1.7%. Five SEs: 8.5%. This checks the answer's
    # size; telling it from a near slip (σ_q σ_k ≈ 1) is the slip tests' job, on exact values.
    gen = torch.Generator().manual_seed(3)
    checked = 0
    for q in [q for q in kind("3", "Var(q·k)") if q.inputs["d_k"] <= 256][:10]:  # bounded cost
        i = q.inputs
        d, a = i["d_k"], ALPHA[i["rule"]](i["d_k"])
        Q = torch.randn(10_000, d, generator=gen, dtype=torch.float64) * i["sigma_q"]
        K = torch.randn(10_000, d, generator=gen, dtype=torch.float64) * i["sigma_k"]
        simulated = float((a * (Q * K).sum(1)).var())
        assert simulated == pytest.approx(q.answer, rel=0.085), q.prompt
        checked += 1
    assert checked == 10


def test_card3_entropy_second_derivation_and_simulation():
    for q in kind("3", "Entropy of Gaussian"):
        i = q.inputs
        var_s = i["sigma_s"] ** 2 if i["sigma_s"] is not None else ALPHA[i["rule"]](i["d_k"]) ** 2 * i["d_k"]
        assert q.answer == pytest.approx(math.log(i["T"]) - var_s / 2, abs=1e-12)
    # The approximation itself, on real rows: T = 4,096 logits α q·k_j of unit-variance vectors at
    # d_k = 128 (the card's setting). 16 rows; the mean's SE is measured and the approximation's own
    # bias at σ_s = 1 is second order (the card: 7.818 vs simulated 7.83), so we allow 0.02 + 4 SE.
    gen = torch.Generator().manual_seed(33)
    for make, rule in ((WORKED["3"][2], "1/√d_k"), (WORKED["3"][4], "1/d_k")):
        q = make()
        keys = torch.randn(4096, 128, generator=gen, dtype=torch.float64)
        queries = torch.randn(16, 128, generator=gen, dtype=torch.float64)
        p = torch.softmax(queries @ keys.T * ALPHA[rule](128), dim=-1)
        H = -(p * p.log()).sum(-1)
        se = float(H.std() / 4)
        assert float(H.mean()) == pytest.approx(q.answer, abs=0.02 + 4 * se), (rule, float(H.mean()))


def test_card3_edge_and_effective_keys():
    for q in kind("3", "Where ln T"):
        assert q.answer == pytest.approx(math.sqrt(2 * math.log(q.inputs["T"])), rel=1e-12)
    for q in kind("3", "Entropy and effective"):
        w = q.inputs["weights"]
        H = (
            float(torch.distributions.Categorical(probs=torch.tensor(w, dtype=torch.float64)).entropy())
            if w
            else q.inputs["H"]
        )
        assert q.answer == pytest.approx(math.exp(H), rel=1e-9)
    uniform = cards_variance.effective_keys_question(weights=(0.25, 0.25, 0.25, 0.25))
    assert uniform.answer == pytest.approx(4)  # a uniform row over n keys is n effective keys


def test_card3_two_keys_against_simulation():
    # The Gaussian approximation replaces ‖q‖² by d_k: simulate exactly that (q rescaled to length √d_k,
    # two standard-normal keys, the top weight of a real softmax). Unscaled at d_k = 128 (the card's
    # 0.774): 20,000 rows, binomial SE 0.003. Scaled, the answer does not depend on d_k (α²d_k = 1), so
    # d_k = 8 keeps 400,000 rows cheap: SE 0.000054 at p = 0.00116 (4.6%). Five SEs keep both clear of
    # the one-tail slip (half the answer) and the one-key-variance slip.
    gen = torch.Generator().manual_seed(7)
    for q, rows in ((WORKED["3"][7](), 20_000), (cards_variance.two_keys_question(8, "1/√d_k"), 400_000)):
        d = q.inputs["d_k"]
        v = torch.randn(rows, d, generator=gen, dtype=torch.float64)
        v = v / v.norm(dim=1, keepdim=True) * math.sqrt(d)
        k1, k2 = (torch.randn(rows, d, generator=gen, dtype=torch.float64) for _ in range(2))
        a = ALPHA[q.inputs["rule"]](d)
        top = torch.softmax(torch.stack([a * (v * k1).sum(1), a * (v * k2).sum(1)], 1), dim=1).max(1).values
        p = float((top > 0.99).double().mean())
        se = math.sqrt(q.answer * (1 - q.answer) / rows)
        assert abs(p - q.answer) < 5 * se, (p, q.answer)
        assert all(abs(p - slip) > 5 * se for slip in q.slips.values())
    assert q.answer == pytest.approx(WORKED["3"][8]().answer)  # the same at d_k = 8 and 128


# -- card 16 --------------------------------------------------------------------------------------------
def test_card16_mean_and_sd_against_simulation():
    # N = 10,000 aligned pairs per draw. The mean's SE is sd/√N (1% of sd); the sample sd's relative SE
    # is about √((κ − 1)/4N), κ ≤ 3 + 12/d_k ≤ 4.5 (ρ = 1: a χ²_{d_k}): 0.94%. Tolerance: five SEs of each
    # (+ 1e-3 absolute for means near 0). The slips are off by far more, or coincide and are not asked.
    gen = torch.Generator().manual_seed(16)
    for q in [q for q in kind("16", "When") if q.inputs["d_k"] <= 256][:10]:  # bounded cost
        i = q.inputs
        d, rho, a = i["d_k"], i["rho"], ALPHA[i["rule"]](i["d_k"])
        Q = torch.randn(10_000, d, generator=gen, dtype=torch.float64)
        Z = torch.randn(10_000, d, generator=gen, dtype=torch.float64)
        logit = a * (Q * (rho * Q + math.sqrt(1 - rho**2) * Z)).sum(1)
        sd = float(logit.std())
        if i["ask"] == "mean":
            assert float(logit.mean()) == pytest.approx(q.answer, abs=5 * sd / math.sqrt(10_000) + 1e-3)
        else:
            assert sd == pytest.approx(q.answer, rel=5 * math.sqrt(3.5 / 40_000))


# -- card 18 --------------------------------------------------------------------------------------------
def sink_row(a: float, T: int) -> torch.Tensor:
    row = torch.zeros(T, dtype=torch.float64)
    row[0] = a
    return torch.softmax(row, 0)


def test_card18_sinks_through_an_explicit_softmax():
    for q in kind("18", "Attention sinks: the logit"):
        assert float(sink_row(q.answer, q.inputs["T"])[0]) == pytest.approx(q.inputs["w"], rel=1e-9)
    for q in kind("18", "Attention sinks: the share"):
        assert float(sink_row(q.inputs["a"], q.inputs["T"])[0]) * 100 == pytest.approx(q.answer, rel=1e-9)


def test_card18_qk_norm_cap_is_attained_and_never_beaten():
    gen = torch.Generator().manual_seed(18)
    for q in kind("18", "QK-norm caps", 20):
        T, g = q.inputs["T"], q.inputs["g"]
        # attained: the winner aligned with the query, every other key pointing away
        logits = torch.full((T,), -g, dtype=torch.float64)
        logits[0] = g
        assert float(torch.softmax(logits, 0)[0]) == pytest.approx(q.answer, rel=1e-9)
        # never beaten: 64 random rows of unit queries and keys in 8 dimensions
        qs = torch.nn.functional.normalize(torch.randn(64, 8, generator=gen, dtype=torch.float64), dim=1)
        ks = torch.nn.functional.normalize(torch.randn(T, 8, generator=gen, dtype=torch.float64), dim=1)
        assert float(torch.softmax(g * qs @ ks.T, dim=1).max()) <= q.answer * (1 + 1e-12)
    for q in kind("18", "The QK-norm gain"):
        T, g = q.inputs["T"], q.answer
        logits = torch.full((T,), -g, dtype=torch.float64)
        logits[0] = g
        assert float(torch.softmax(logits, 0)[0]) == pytest.approx(q.inputs["w"], rel=1e-9)


# -- card 8 ---------------------------------------------------------------------------------------------
def test_card8_estimate_is_the_gaussian_kernel_smoother():
    # Second derivation: the 1964 estimator itself, Σ κ y / Σ κ with κ = exp(−(x − x_j)²/2λ²).
    for q in kind("8", "Attention as Nadaraya"):
        i = q.inputs
        x, xs, ys, lam = i["x"], np.array(i["points"]), np.array(i["values"]), i["lambda"]
        kappa = np.exp(-((x - xs) ** 2) / (2 * lam**2))
        assert q.answer == pytest.approx(float(kappa @ ys / kappa.sum()), rel=1e-9, abs=1e-12)


def test_card8_bias_is_what_the_expansion_leaves():
    # −‖q − k‖²/2λ² − (qᵀk/λ² − ‖q‖²/2λ²) must be the same number for any q: the key's bias.
    rng = np.random.default_rng(8)
    for q in kind("8", "The key-length bias"):
        k, lam = np.array(q.inputs["key"]), q.inputs["lambda"]
        for x in rng.normal(size=(3, k.size)) * 3:
            rest = -((x - k) @ (x - k)) / (2 * lam**2) - (x @ k / lam**2 - x @ x / (2 * lam**2))
            assert q.answer == pytest.approx(rest, rel=1e-9, abs=1e-12)


def test_card8_bandwidth_makes_the_kernel_equal_plain_attention():
    # With equal-length keys, NW weights at bandwidth λ must equal softmax(qᵀk/√d_k) (or g q̂ᵀk̂).
    gen = torch.Generator().manual_seed(80)
    for q in kind("8", "The bandwidth", 40):
        d_k, gain, lam = q.inputs["d_k"], q.inputs["gain"], q.answer
        dim = d_k or 4
        keys = torch.nn.functional.normalize(torch.randn(10, dim, generator=gen, dtype=torch.float64), dim=1)
        query = torch.randn(dim, generator=gen, dtype=torch.float64)
        if d_k:  # keys of any common length (3), any query
            keys = 3 * keys
            attn = torch.softmax(keys @ query / math.sqrt(d_k), 0)
        else:  # QK-norm: unit queries and keys
            query = query / query.norm()
            attn = torch.softmax(gain * keys @ query, 0)
        kappa = torch.exp(-((query - keys) ** 2).sum(1) / (2 * lam**2))
        torch.testing.assert_close(kappa / kappa.sum(), attn, rtol=1e-9, atol=1e-15)


# -- card 10 --------------------------------------------------------------------------------------------
def test_card10_ranks_of_simulated_matrices():
    # numpy's SVD rank of S, log P and P for a seeded Gaussian Q, K of the drawn sizes (T ≤ 40, d_k ≥ 3:
    # P's smallest singular value stays far above float64 rank tolerance there).
    rng = np.random.default_rng(10)
    for q in kind("10", "The rank bound"):
        T, d_k = q.inputs["T"], q.inputs["d_k"]
        Q, K = rng.normal(size=(T, d_k)), rng.normal(size=(T, d_k))
        S = Q @ K.T / math.sqrt(d_k)
        logP = S - np.log(np.exp(S).sum(1, keepdims=True))
        matrix = {"S": S, "log P": logP, "P": np.exp(logP)}[q.inputs["which"]]
        assert np.linalg.matrix_rank(matrix) == q.answer, (T, d_k, q.inputs["which"])


def test_card10_top_keys_by_brute_force():
    sweep = torch.linspace(-10, 10, 2000, dtype=torch.float64)  # an even count skips q = 0 (a uniform row)
    for q in kind("10", "Which key"):
        k = torch.tensor(q.inputs["keys"], dtype=torch.float64)
        assert int(torch.softmax(q.inputs["q"] * k, 0).argmax()) == q.answer
    for q in kind("10", "The keys a d_k"):
        k = torch.tensor(q.inputs["keys"], dtype=torch.float64)
        winners = torch.softmax(sweep[:, None] * k[None, :], 1).argmax(1).unique()
        assert tuple(float(i) for i in winners) == q.answer


# -- card 17 --------------------------------------------------------------------------------------------
def test_card17_uniform_head_against_simulation():
    # 2,000 rows of T values, averaged uniformly. The sample variance of normal means has relative SE
    # √(2/N) = 3.2%; five SEs: 16%. The nearest slip (σ_v for σ_v², σ_v ∈ {0.5, 2, 3, 0.1}) is off ≥ 2×
    # where σ_v ≠ 1.
    gen = torch.Generator().manual_seed(17)
    for q in kind("17", "A uniform head", 6):
        T, s = q.inputs["T"], q.inputs["sigma_v"]
        means = torch.cat(
            [(torch.randn(500, T, generator=gen, dtype=torch.float64) * s).mean(1) for _ in range(4)]
        )
        assert float(means.var()) == pytest.approx(q.answer, rel=0.16)


def test_card17_bound_is_the_recursion_unrolled():
    for q in kind("17", "Rank collapse"):
        r = q.inputs["r0"]
        for _ in range(q.inputs["L"]):
            r = q.inputs["C"] * r**3
        assert q.answer == pytest.approx(r, rel=1e-9)
    for q in kind("17", "Reading a cubic"):
        assert q.answer * q.inputs["r"] ** 3 == pytest.approx(q.inputs["r_next"], rel=1e-12)


# -- wrong answers and formats ----------------------------------------------------------------------------
def test_named_wrong_answers():
    share = cards_alignment_sinks.sink_share_question(1024, 5.0)
    for text in ("12.7", "12.7%", " 12.67 % ", "12.669"):
        assert share.judge(text).correct, text
    as_fraction = share.judge("0.127")
    assert not as_fraction.correct and as_fraction.slip == "gave a fraction, not a percentage"
    assert share.judge("12.7 KiB").error  # a percentage takes no byte unit

    entropy = WORKED["3"][4]()  # 1/d_k at d_k = 128, T = 4,096: 8.314, not the maximum 8.318
    assert entropy.judge("8.314").correct
    assert entropy.judge("8.318").slip == "gave the maximum ln T (a uniform row)"

    rank_p = WORKED["10"][0]()
    assert rank_p.judge("8").slip == "put the bound on the weights; it is on the logits"
    assert rank_p.judge("64.5").correct is False  # whole numbers: no tolerance

    sd = WORKED["16"][3]()
    assert sd.judge("1.118").correct
    assert sd.judge(f"{math.sqrt(128 * 0.75) / math.sqrt(128)}").slip.startswith(
        "treated ‖q‖² as the constant"
    )


def test_number_formats():
    uniform = WORKED["17"][0]()
    for text in ("2.44e-4", "2.441E-04", "0.000244", "  0.0002441 "):
        assert uniform.judge(text).correct, text
    assert "not a number" in uniform.judge("tiny").error
    assert "plain number" in uniform.judge("2.44e-4 GiB").error

    bias = cards_one_head.bias_question((3.0, 4.0), 2.0)  # −25/8
    assert bias.judge("−3.125").correct and bias.judge("-3.125").correct
    assert bias.judge("3.125").slip == "flipped the sign (a bonus for long keys)"

    winners = cards_one_head.winners_question((0.5, -1.2, 2.0, 0.1))  # argmin 1, argmax 2
    assert winners.answer_kind is AnswerKind.VECTOR
    for text in ("1, 2", "(1; 2)", "[1 2]"):
        assert winners.judge(text).correct, text
    assert winners.judge("0, 1, 2, 3").slip == "thought every key can win"
    assert winners.judge("2").slip == "forgot negative queries (argmax only)"
    assert winners.judge("1, 2, 3, x").error


def test_stated_answers_accepted_and_slips_finite():
    for card in THEORY_CARDS:
        for q in draws(card):
            assert q.judge(typed(q.answer)).correct
            for value in q.slips.values():
                assert np.all(np.isfinite(np.asarray(value, dtype=float))), (card, q.prompt)


# -- on the Practice page ----------------------------------------------------------------------------------
@pytest.mark.parametrize("card", THEORY_CARDS)
def test_practice_page_answers_a_theory_card_right_then_with_a_slip(app, card):
    from attn_core.views.practice import next_question

    at = app("pages/practice.py")
    at.session_state["pr_seed"] = 2026
    at.multiselect(key="pr_cards").set_value([card]).run()

    def answer(n: int, text: str):
        at.text_input(key=f"pr_answer_{n}").set_value(text)
        next(b for b in at.button if b.label == "Check").click().run()
        assert not at.exception, at.exception

    q = next_question([card], "medium", 2026, 0)
    assert any(m.value == q.prompt for m in at.markdown)
    answer(0, typed(q.answer))
    assert at.success[0].value.startswith("Right")

    # the first question with a slip apart from its answer, answered with that slip
    def apart(question) -> list:
        return [v for v in question.slips.values() if not question.close(v, question.answer)]

    n = next(n for n in range(1, 50) if apart(next_question([card], "medium", 2026, n)))
    for _ in range(n):
        next(b for b in at.button if b.label == "Next question").click().run()
    q = next_question([card], "medium", 2026, n)
    value = apart(q)[0]
    answer(n, typed(value))
    assert at.error[0].value.startswith("Not quite")
    assert q.judge(typed(value)).slip in at.warning[0].value
    row = next(d.value for d in at.dataframe if "tried" in d.value.columns).iloc[0]
    assert (row["card"], row["tried"], row["right"]) == (card, 2, 1)
