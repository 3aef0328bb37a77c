"""Three small views, each against its own oracle:

- attn_core.views.home: the running example is the spec's toy sentence, typed here from the spec;
- attn_core.views.memory_bill: card 12's bill for Llama 2 7B (32 layers, 32 heads, d = 4,096,
  typed from the spec) against B·h·T²·b naive and B·h·T·4 online, worked out here;
- attn_core.views.gradient_checks: the tolerance holds the manual backward pass against torch
  autograd through SDPA (written out here, not attn_core.oracle's helper), and each badge passes
  on a true softmax Jacobian or dS and fails on one broken on purpose.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from attn_core.backward import attention_backward
from attn_core.jacobian import jacobian_spectrum
from attn_core.views import gradient_checks, home, memory_bill
from attn_core.views.inputs import random_qkv

F64 = torch.float64


def test_the_home_pages_example_is_the_specs_sentence():
    assert " ".join(home.SENTENCE) == "the river bank was steep"


@pytest.mark.parametrize(("T", "dtype", "batch"), [(4096, "fp16", 1), (1000, "fp32", 3)])
def test_the_memory_bill_of_llama_2_7b(T, dtype, batch):
    view = memory_bill.memory_view("llama-2-7b", T, dtype, batch)
    b = {"fp16": 2, "fp32": 4}[dtype]
    L, h, d = 32, 32, 4096
    bill = view.bill
    assert (bill.layers, bill.heads, bill.d_model) == (L, h, d)
    assert bill.naive_per_head == batch * T * T * b
    assert bill.naive_per_layer == batch * h * T * T * b
    assert bill.naive_per_model == L * batch * h * T * T * b
    assert bill.online_per_layer == batch * h * T * 4  # one fp32 logsumexp per query row
    assert bill.saving == pytest.approx(T * b / 4)
    assert view.grid == tuple(sorted({2**n for n in range(9, 18)} | {T}))
    assert [s.naive_per_layer for s in view.sweep] == [batch * h * t * t * b for t in view.grid]
    if T == 4096 and b == 2:
        assert bill.naive_per_layer == 2**30  # 1 GiB per layer at 4,096 tokens in fp16 (32 heads)


def autograd(q, k, v, G, scale):
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    O = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
    return torch.autograd.grad((O * G).sum(), (q, k, v))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_gradient_tolerance_holds_the_manual_pass_against_autograd(seed):
    qkv = random_qkv(7, 9, 5, 3, 2, 2, seed)
    G = torch.randn((*qkv.q.shape[:-1], 3), generator=torch.Generator().manual_seed(seed), dtype=F64)
    scale = 5**-0.5
    tol = gradient_checks.gradient_tolerance(qkv, G, scale)
    assert 0 < tol < 1e-9  # tight: a slip of 1e-6 could never hide under it
    back = attention_backward(qkv.q, qkv.k, qkv.v, G, scale=scale)
    diffs = gradient_checks.max_diffs(back, autograd(qkv.q, qkv.k, qkv.v, G, scale))
    assert max(diffs) <= tol
    wrong = gradient_checks.max_diffs(back, (back.dq, back.dk * 1.001, back.dv))
    assert wrong[0] == 0 and wrong[1] > tol and wrong[2] == 0


def test_jacobian_badges_pass_on_a_true_jacobian_and_fail_on_broken_ones():
    p = torch.softmax(torch.tensor([0.0, 2.0, 1.0, -1.0], dtype=F64), 0)
    spec = jacobian_spectrum(p)
    J = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, 0), torch.log(p))
    lam = float(torch.linalg.eigvalsh(J).max())
    bound = 2 * float((p * (1 - p)).max())
    checks = gradient_checks.jacobian_checks(spec, lam, bound)
    assert {c.name for c in checks} >= {"J = Jᵀ", "J·1 = 0", "positive semi-definite", "rank T − 1"}
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    broken = dataclasses.replace(spec, symmetry_gap=1e-3, eigenvalues=spec.eigenvalues - 0.1)
    failed = {c.name for c in gradient_checks.jacobian_checks(broken, lam, bound) if not c.passed}
    assert failed == {"J = Jᵀ", "positive semi-definite"}
    over = gradient_checks.jacobian_checks(None, bound + 0.01, bound)
    assert [c.passed for c in over] == [False]  # λ_max above its Gershgorin bound


def test_the_dscore_rows_badge():
    s = torch.randn(3, 5, generator=torch.Generator().manual_seed(0), dtype=F64, requires_grad=True)
    upstream = torch.randn(3, 5, generator=torch.Generator().manual_seed(1), dtype=F64)
    (dS,) = torch.autograd.grad((torch.softmax(s, -1) * upstream).sum(), s)
    assert gradient_checks.dscore_rows_check(dS, 1e-12).passed
    dS[1, 2] += 1e-6
    assert not gradient_checks.dscore_rows_check(dS, 1e-12).passed
