"""The fitted time model as the serving commands read it: coefficients and the calibrated interval,
from ``assets/derived/time_model.json`` (written by ``scripts/fit_time_model.py``; the command
is in benchmarks/RESULTS.md). Without the file: the default coefficients and a wide interval.

The interval is multiplicative on times: a time t is reported as t·e^lo … t·e^hi, with lo and hi
the 10th and 90th percentiles of log(measured / predicted) over rows each left out with its whole
source (an 80% interval that covered ~80% of left-out rows); a rate takes the reciprocal factors.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from attn_core.serving.step_time import TimeModelCoefficients

FITTED_FILE = Path(__file__).resolve().parents[2] / "assets" / "derived" / "time_model.json"
DEFAULT_LOG_RANGE = (math.log(0.7), math.log(2.0))  # before any fit: a wide, lopsided band


@dataclass(frozen=True)
class FittedModel:
    """Coefficients and the interval's log factors on times (lo ≤ hi)."""

    coefficients: TimeModelCoefficients
    log_low: float
    log_high: float
    source: str  # the file read, or "defaults"

    def time_range(self, seconds: float) -> tuple[float, float]:
        """(low, high) of a time estimate."""
        return seconds * math.exp(self.log_low), seconds * math.exp(self.log_high)

    def rate_range(self, rate: float) -> tuple[float, float]:
        """(low, high) of a rate estimate: a slower time is a lower rate."""
        return rate * math.exp(-self.log_high), rate * math.exp(-self.log_low)


def load_fitted(path: Path | None = None) -> FittedModel:
    """The fitted model in ``path`` (default `FITTED_FILE`); the defaults when there is no file."""
    path = FITTED_FILE if path is None else Path(path)
    if not path.is_file():
        return FittedModel(TimeModelCoefficients(), *DEFAULT_LOG_RANGE, "defaults")
    doc = json.loads(path.read_text())
    interval = doc["interval"]
    return FittedModel(
        TimeModelCoefficients(**doc["coefficients"]),
        float(interval["log_low"]),
        float(interval["log_high"]),
        str(path.name),
    )
