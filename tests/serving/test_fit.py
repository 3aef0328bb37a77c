"""The time-model fit: rows made from known coefficients are fitted back to near-zero error (the
oracle is the coefficients that made them), and the interval is the 10th-90th percentile of the
left-out errors; a server row replays as Poisson arrivals and a held-out row never moves the fit."""

import dataclasses
import json
import math

import numpy as np
import pytest

from attn_core.cost.published import load_runs
from attn_core.cost.published_rows import Replay as RowReplay
from attn_core.serving.fit import errors, fit, fit_report, simulate_replay, with_coefficients
from attn_core.serving.fitted import FITTED_FILE, load_fitted
from attn_core.serving.replay import load_replays, predicted, replay_of
from attn_core.serving.step_time import TimeModelCoefficients

TRUE = TimeModelCoefficients(
    compute_fraction=0.55, half_rows=40.0, bandwidth_fraction=0.7, layer_overhead_s=30e-6
)


def _synthetic():
    replays, skipped = load_replays()
    made = []
    for r in replays:
        rt = with_coefficients(r, TRUE)
        value = predicted(rt, simulate_replay(rt))
        made.append(dataclasses.replace(r, run=dataclasses.replace(r.run, value=value)))
    return made, skipped


def test_fit_recovers_rows_made_from_known_coefficients():
    replays = _synthetic()[0][::3]  # every third row: both sources, batch 1 to 1,024
    bases = [simulate_replay(r) for r in replays]
    start = np.mean(np.abs(errors(replays, bases, TimeModelCoefficients())))
    c = fit(replays, bases, sweeps=2)
    after = np.mean(np.abs(errors(replays, bases, c)))
    # a 7-point grid narrowing by √ per sweep lands within a few % of each coefficient: the mean
    # |log error| of rows made exactly by TRUE falls at least 5× and below 0.03 (3%)
    assert after < 0.03 and after < start / 5


def test_interval_is_the_left_out_errors_10th_to_90th_percentile():
    replays, skipped = load_replays()
    picked = replays[:6] + replays[-6:]  # the file's first and last rows: at least two sources
    rep = fit_report(picked, skipped, sweeps=1)
    left_out = np.array([r["log_error_left_out"] for r in rep.rows])
    lo, hi = np.percentile(left_out, [10, 90])
    assert (rep.log_low, rep.log_high) == (lo, hi)
    assert rep.coverage == np.mean((left_out >= lo) & (left_out <= hi))
    # every row replayed is scored once, under its own source, and no error is missing
    assert [r["id"] for r in rep.rows] == [r.run.id for r in picked]
    assert [r["source"] for r in rep.rows] == [r.source for r in picked]
    assert len({r.source for r in picked}) >= 2 and np.all(np.isfinite(left_out))


def test_fitted_file_read_back_and_its_ranges(tmp_path):
    doc = json.loads(FITTED_FILE.read_text())  # the shipped fit (scripts/fit_time_model.py)
    m = load_fitted()
    assert m.coefficients.to_json() == doc["coefficients"]
    lo, hi = m.time_range(10.0)
    assert lo == pytest.approx(10 * math.exp(doc["interval"]["log_low"]), rel=1e-15)
    assert hi == pytest.approx(10 * math.exp(doc["interval"]["log_high"]), rel=1e-15)
    r_lo, r_hi = m.rate_range(100.0)  # a rate is 1 / time: its range is the reciprocal one
    assert (r_lo, r_hi) == pytest.approx((100 * 10 / hi, 100 * 10 / lo), rel=1e-12)
    assert load_fitted(tmp_path / "none.json").source == "defaults"


def test_a_server_row_replays_as_poisson_and_a_held_out_row_is_never_fitted_on():
    run = next(r for r in load_runs() if r.id == "sglang030-8b-a100-tpot")
    run = dataclasses.replace(run, input_len=500, output_len=100, replay=RowReplay(60, 4.0), held_out=True)
    server = replay_of(run, TimeModelCoefficients())
    assert server.load.mode == "rate" and server.metric == "tpot" and server.held_out
    replays, skipped = load_replays()
    few = replays[:3] + replays[-3:]
    with_held = fit_report([*few, server], skipped, sweeps=1)
    without = fit_report(few, skipped, sweeps=1)
    assert with_held.coefficients == without.coefficients  # the held-out row moved nothing
    row = with_held.rows[-1]
    assert row["held_out"] and row["log_error"] == row["log_error_left_out"]


def test_published_json_carries_each_rows_prediction_and_loso_error(capsys):
    from attn_core.cost.published_cli import main

    assert main(["--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    doc = json.loads(FITTED_FILE.read_text())
    fitted = {r["id"]: r for r in doc["rows"]}
    why = {s["id"]: s["why"] for s in doc["skipped"]}
    assert {r["id"] for r in rows} == set(fitted) | set(why)  # every row: a prediction or a reason
    for r in rows:
        if r["id"] in fitted:
            f = fitted[r["id"]]
            assert (r["prediction"], r["loso_error"], r["not_replayed"]) == (
                f["predicted"],
                f["log_error_left_out"],
                None,
            )
        else:
            assert r["prediction"] is None and r["loso_error"] is None and r["not_replayed"] == why[r["id"]]
