"""Serving one model on GPUs: the time of one engine step (`step_time`), a step-level simulation of
one deployment under continuous batching (`simulate`), the smallest deployment meeting SLOs
(`plan`) and the time model's coefficients fitted on published runs (`fit`)."""
