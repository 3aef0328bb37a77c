"""The studies the pages show, one topic per module: what a mask guarantees and how it leaks,
mask conventions across APIs, permutation equivariance, precision per dtype. They import the math."""
