"""Unit formatting: the spec's own renderings of its numbers, and a parse-back property.

Oracles: the strings the cards print for these exact byte/FLOP counts (written out from the
cards' arithmetic, not from our code), and, for arbitrary n, reading the formatted text back
and comparing with n (the displayed value must be n rounded to the shown decimals).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attn_core.cost.units import (
    format_bytes,
    format_bytes_binary,
    format_bytes_decimal,
    format_count,
    format_count_short,
    format_flops,
    format_percent,
    format_rate,
    format_seconds,
)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (2 * 32 * 32 * 128 * 2, "512 KiB"),  # card 13, Llama 2 7B per token
        (2 * 12 * 12 * 64 * 2, "36 KiB"),  # GPT-2 small
        (2 * 80 * 8 * 128 * 2, "320 KiB"),  # Llama 2 70B
        (2 * 80 * 64 * 128 * 2, "2.5 MiB"),  # 2,560 KiB
        (524_288 * 4_096, "2 GiB"),
        (524_288 * 4_096 * 8, "16 GiB"),
        (2 * 80 * 8 * 128 * 2 * 4_096, "1.25 GiB"),  # card 14 GQA sequence
        (85_899_345_920, "80 GiB"),  # seed 000
        (131_072**2 * 2 * 32, "1 TiB"),  # card 12, Llama 3 8B scores per layer
        (32 * 4_096 * 4, "512 KiB"),  # card 12 online, per layer
        (0, "0 B"),
        (1023, "1,023 B"),
        (2**20 - 1, "1 MiB"),  # 1,023.999 KiB rounds to the next unit, not to "1,024 KiB"
    ],
)
def test_binary_bytes_as_the_spec_writes_them(n, text):
    assert format_bytes_binary(n) == text


def test_forced_and_decimal_units():
    assert format_bytes_binary(32 * 4_096 * 4, unit="MiB") == "0.5 MiB"  # card 12 writes 0.5 MiB
    assert format_bytes_decimal(13_476_831_232) == "13.48 GB"  # card 13
    assert format_bytes_decimal(137_953_296_384) == "137.95 GB"  # card 14
    assert format_bytes_decimal(22_046_703_616) == "22.05 GB"
    assert format_bytes_decimal(85_899_345_920, decimals=3) == "85.899 GB"  # seed 000
    assert format_bytes_decimal(10 * 2**30, decimals=3) == "10.737 GB"
    assert format_bytes(2**31) == "2 GiB (2.15 GB)"  # GiB ≠ GB, both labelled


def test_flops_and_counts():
    assert format_flops(8 * 4096 * 4096**2) == "549.8 GFLOP"
    assert format_flops(4 * 4096**2 * 4096) == "274.9 GFLOP"
    assert format_flops(6 * 4096 * 4096 * 11008, unit="GFLOP") == "1,108.1 GFLOP"
    assert format_flops(6 * 4096 * 4096 * 11008) == "1.1 TFLOP"
    assert format_count(67_108_864) == "67,108,864" and format_count(2_362_368) == "2,362,368"
    assert format_count_short(8 * 4096**2) == "134M" and format_count_short(6 * 4096 * 11008) == "271M"
    assert format_count_short(6_738_415_616, 2) == "6.74B"


def test_percent_seconds_rates():
    assert format_percent(274.9 / (549.8 + 274.9 + 1108.1)) == "14.2%"
    assert format_percent(0.0765723) == "7.66%" and format_percent(0.0203) == "2.03%"
    assert format_percent(0.5701) == "57.0%"  # trailing zero kept: 3 significant figures
    assert format_percent(0.099996) == "10.0%"  # rounding carries into a new digit
    assert format_seconds(13_476_831_232 / 2.039e12) == "6.61 ms"
    assert format_seconds(2**31 / 2.039e12) == "1.05 ms"
    assert format_seconds(2.5) == "2.50 s" and format_seconds(1.12e-4) == "112 µs"
    assert format_rate(2.039e12, "B/s", prefix="G") == "2,039 GB/s"
    assert format_rate(4.8e12, "B/s") == "4.8 TB/s" and format_rate(312e12, "FLOP/s") == "312 TFLOP/s"


BIN = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
DEC = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15}


def _parse(text: str, units: dict) -> tuple[float, float]:
    number, unit = re.fullmatch(r"([\d,]+(?:\.\d+)?) (\S+)", text).groups()
    return float(number.replace(",", "")), units[unit]


@given(st.one_of(st.integers(0, 2**60), st.sampled_from([2**k - 1 for k in range(1, 61)])))
def test_binary_bytes_parse_back(n):
    value, scale = _parse(format_bytes_binary(n), BIN)
    # 2 decimals shown: the shown value is within half a unit of the last decimal (+ float slack).
    assert abs(value - n / scale) <= 0.005 + 1e-9
    assert value < 1024 or scale == 2**50  # the largest unit that keeps the value ≥ 1 was chosen
    assert value >= 1 or n == 0


@given(st.integers(0, 10**17))
def test_decimal_bytes_parse_back(n):
    value, scale = _parse(format_bytes_decimal(n), DEC)
    assert abs(value - n / scale) <= 0.005 + 1e-9
