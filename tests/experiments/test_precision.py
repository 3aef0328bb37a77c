"""Precision study (cards 2 and 15): the online kernel in fp64/fp32/fp16/bf16 against fp64.

Oracle: floating-point error analysis. A dtype with p significand bits has unit roundoff
u = 2^-p (fp64 2^-53, fp32 2^-24, fp16 2^-11, bf16 2^-8): rounding x gives x(1 + δ), |δ| ≤ u.
The reference is plain float64 attention on the same rounded inputs (computed inside the study
with attn_core.attention; tests/core/test_online.py checks that reference against torch SDPA). The study runs
once per module, in a fixture (not at import time).
"""

from __future__ import annotations

import pytest

from attn_core.dtypes import UNIT_ROUNDOFF
from attn_core.experiments.precision import PrecisionRow, precision_error, precision_study


@pytest.fixture(scope="module")
def study() -> tuple[PrecisionRow, ...]:
    """2 T values × 6 (dtype, accumulation) rows, run once for the module (about a second)."""
    return precision_study((64, 4096))


@pytest.fixture(scope="module")
def row(study):
    def find(T: int, dtype: str, accumulate: str = "input") -> PrecisionRow:
        (match,) = [r for r in study if (r.T, r.dtype, r.accumulate) == (T, dtype, accumulate)]
        return match

    return find


def test_study_has_every_dtype_and_accumulation(study):
    assert len(study) == 12
    assert {(r.dtype, r.accumulate) for r in study} == {
        ("float64", "input"),
        ("float32", "input"),
        ("float16", "input"),
        ("float16", "float32"),
        ("bfloat16", "input"),
        ("bfloat16", "float32"),
    }
    assert all(r.finite for r in study)  # the shifted recurrence never overflows, even in fp16


@pytest.mark.parametrize("T", [64, 4096])
def test_fp64_is_exact_to_rounding(row, T):
    # ~(blocks + block length) roundings of u = 1.1e-16 on |o| ≤ max|o|: far below 1e-12
    assert row(T, "float64").rel_error <= 1e-12


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_input_rounding_costs_about_one_unit_roundoff(row, dtype):
    """Storing Q, K, V in the dtype moves each entry by ≤ u relative. The output is a convex
    combination of the values: the values' own rounding moves it by ≤ u·max|v| ≈ 4u (standard
    normal V, max over 64·64 entries ≈ 3.5–4); the scores s = q·k/8 (|s| ≲ 4) move by ≤ 2u|s| ≈ 8u,
    which shifts weights by ≤ 8u relative and the output by ≤ 8u·(max v − min v) ≈ 64u. That
    worst case, doubled, is 128u: anything above is not the rounding of the inputs. Random-signed
    roundings partly cancel, so the measured error sits near u/2; a rounding that was never
    applied would show 0."""
    r = row(64, dtype)
    assert 0 < r.input_rounding_error <= 128 * UNIT_ROUNDOFF[dtype]


@pytest.mark.parametrize("T", [64, 4096])
def test_fp32_error_is_a_few_unit_roundoffs(row, T):
    # fp32 u = 6e-8; sums of ≤ 128 terms per block and 32 rescales: ≤ 1e-5 with a wide margin
    assert row(T, "float32").rel_error <= 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("T", [64, 4096])
def test_fp32_accumulation_leaves_only_the_output_rounding(row, T, dtype):
    """State in fp32 on exactly the rounded inputs: the only sizeable error is rounding the
    final output to the dtype, at most u·|o_i| ≤ u·max|o|; fp32 arithmetic adds < 1e-5."""
    r = row(T, dtype, "float32")
    assert r.rel_error <= UNIT_ROUNDOFF[dtype] + 1e-5
    assert r.rel_error > 0  # the output is stored in the low-precision dtype: not exact


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_accumulating_in_the_input_dtype_is_worse_at_long_rows(row, dtype):
    """Keeping ℓ, u and P in fp16/bf16 adds a rounding per step; at 4,096 keys the error clearly
    exceeds the fp32-accumulated run (which is output rounding alone)."""
    assert row(4096, dtype, "input").rel_error > 2 * row(4096, dtype, "float32").rel_error


def test_bf16_is_coarser_than_fp16(row):
    # bf16 keeps 8 significand bits against fp16's 11: its input rounding alone is larger
    for T in (64, 4096):
        assert (
            row(T, "bfloat16", "float32").input_rounding_error
            > row(T, "float16", "float32").input_rounding_error
        )


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="dtype"):
        precision_error(64, "float8")
    with pytest.raises(ValueError, match="accumulate"):
        precision_error(64, "float16", "float64")
    with pytest.raises(ValueError, match="T must lie"):
        precision_error(0, "float32")
