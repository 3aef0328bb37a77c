"""How far a simulation or a float64 identity may stray from its closed form, each with its argument.

One home per tolerance: the theory modules, the explore modules and the tests import these.
"""

from __future__ import annotations

# A simulated mean, variance or share is judged against its closed form within 4 standard errors
# of the simulation (the SE computed from the sample itself). A correct simulation fails about
# 1 time in 16,000 (two-sided normal tail at 4σ = 6.3e-5); the slips it exists to catch (Var = d_k
# instead of 1, the tied-Q/K mean √d_k) are off by tens to hundreds of standard errors.
SE_MULTIPLE = 4.0

# Simpson's rule on 4,001 points of a smooth integrand over [0, √d_k + 12]: the error is
# O(h⁴ max|f⁗|) ≲ 1e-12 here (4,001 and 20,001 points agree to 1e-15 at d_k = 1, 128, 512), and the
# χ tail beyond √d_k + 12 holds less than e^{-72}. 1e-9 leaves room and is far below the 3
# significant digits the card quotes.
QUADRATURE_TOL = 1e-9

# An algebraic identity evaluated twice in float64 (scores after a change of basis, Nadaraya–Watson
# vs attention with the key bias, concat·W_O vs the heads sum): the two sides differ by summation
# order only, ≲ n · 2^-53 · (largest term) ≈ 1e-13 for the n ≤ 400 terms of size ≤ 10 used here.
# Any real difference (a missing bias, a non-inverse R) is O(0.1) or more.
IDENTITY_TOL = 1e-12

# A numerical rank counts singular values above max(shape) · σ_max · 2^-53 (NumPy's rule): below
# that a singular value is rounding of a float64 SVD, not structure.
RANK_EPS = 2.0**-53

# The relative residual r = ‖X − 1x̄ᵀ‖_F/‖X‖_F of a collapsed stack bottoms out at float64 rounding
# of the mean part, ~2^-53 · √(T·d) ≈ 1e-14 for T·d ≤ 2^15: below 1e-12 a layer-to-layer ratio
# r_{l+1}/r_l³ measures rounding, not the cubic law, and is not reported.
COLLAPSE_FLOOR = 1e-12
