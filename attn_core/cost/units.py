"""Numbers with their units, formatted the way the spec writes them.

Memory uses binary prefixes (KiB = 2^10 B, MiB = 2^20 B, GiB = 2^30 B, TiB = 2^40 B) — the
size of caches and tensors; GPU vendors quote decimal GB (10^9 B) and GB/s, so those carry the
decimal unit. Never mix the two: 2 GiB = 2,147,483,648 B = 2.147 GB (card 13's slip).
FLOPs are counted as 2 per multiply-add (card 11) and shown as GFLOP/TFLOP (10^9/10^12).

Generic: every function takes a plain number and returns a string; nothing model-specific here.
"""

from __future__ import annotations

import math

BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")  # steps of 2^10
DECIMAL_BYTE_UNITS = ("B", "kB", "MB", "GB", "TB", "PB")  # steps of 10^3
FLOP_UNITS = ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP")  # steps of 10^3
COUNT_SUFFIXES = ("", "k", "M", "B", "T")  # steps of 10^3 (B = billion, as model sizes are named)


def _trim(text: str) -> str:
    """'2.00' -> '2', '1.250' -> '1.25' (keeps the digits that carry information)."""
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scaled(value: float, base: int, n_units: int, unit: int | None, decimals: int = 2) -> tuple[float, int]:
    """value / base^k with k the largest power that keeps |value| >= 1 (or the forced unit).

    Decided after rounding to ``decimals``, so 1,048,575 B is '1 MiB', not '1,024 KiB'."""
    if unit is None:
        unit = 0
        while unit < n_units - 1 and round(abs(value) / base**unit, decimals) >= base:
            unit += 1
    return value / base**unit, unit


def _significant(value: float, significant: int) -> str:
    """value with ``significant`` figures, keeping trailing zeros: (57.01, 3) -> '57.0'."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    rounded = float(f"{value:.{significant - 1}e}")  # round first: 9.996 -> 10.0, not 10.00
    decimals = max(0, significant - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:,.{decimals}f}"


def format_count(n: float, decimals: int = 0) -> str:
    """Thousands separators: 67108864 -> '67,108,864'; decimals for non-integers."""
    if not math.isfinite(n):
        return str(n)
    return f"{n:,.{decimals}f}"


def format_count_short(n: float, decimals: int = 0) -> str:
    """134217728 -> '134M', 6738415616 -> '7B' (decimals=2: '6.74B'); suffixes k, M, B, T."""
    value, k = _scaled(float(n), 1000, len(COUNT_SUFFIXES), None, decimals)
    return f"{_trim(f'{value:,.{decimals}f}')}{COUNT_SUFFIXES[k]}"


def format_bytes_binary(n: float, decimals: int = 2, unit: str | None = None) -> str:
    """Bytes in KiB/MiB/GiB/TiB (powers of 2^10): 524288 -> '512 KiB', 2^31 -> '2 GiB'.

    Trailing zeros are dropped ('1.25 GiB', not '1.250 GiB'); ``unit`` forces one ('MiB')."""
    forced = None if unit is None else BINARY_UNITS.index(unit)
    value, k = _scaled(float(n), 1024, len(BINARY_UNITS), forced, decimals)
    return f"{_trim(f'{value:,.{decimals}f}')} {BINARY_UNITS[k]}"


def format_bytes_decimal(n: float, decimals: int = 2, unit: str | None = None) -> str:
    """Bytes in kB/MB/GB/TB (powers of 10^3, vendors' units): 13476831232 -> '13.48 GB'."""
    forced = None if unit is None else DECIMAL_BYTE_UNITS.index(unit)
    value, k = _scaled(float(n), 1000, len(DECIMAL_BYTE_UNITS), forced, decimals)
    return f"{_trim(f'{value:,.{decimals}f}')} {DECIMAL_BYTE_UNITS[k]}"


def format_bytes(n: float, decimals: int = 2) -> str:
    """Both conventions, binary first: 2147483648 -> '2 GiB (2.15 GB)'."""
    return f"{format_bytes_binary(n, decimals)} ({format_bytes_decimal(n, decimals)})"


def format_flops(n: float, decimals: int = 1, unit: str | None = None) -> str:
    """FLOPs with decimal prefixes: 549755813888 -> '549.8 GFLOP'; ``unit='GFLOP'`` forces one
    so a table's rows share a unit ('1,108.1 GFLOP'). Zeros are kept: this is a measurement
    with a stated number of decimals, not a size."""
    forced = None if unit is None else FLOP_UNITS.index(unit)
    value, k = _scaled(float(n), 1000, len(FLOP_UNITS), forced, decimals)
    return f"{value:,.{decimals}f} {FLOP_UNITS[k]}"


def format_rate(n: float, unit: str, decimals: int = 2, prefix: str | None = None) -> str:
    """A per-second rate with decimal prefixes, trailing zeros dropped: (4.8e12, 'B/s') ->
    '4.8 TB/s'; ``prefix='G'`` forces one, as datasheets write '2,039 GB/s'."""
    prefixes = ("", "k", "M", "G", "T", "P", "E")
    forced = None if prefix is None else prefixes.index(prefix)
    value, k = _scaled(float(n), 1000, len(prefixes), forced, decimals)
    return f"{_trim(f'{value:,.{decimals}f}')} {prefixes[k]}{unit}"


def format_percent(fraction: float, significant: int = 3) -> str:
    """A fraction as a percentage with ``significant`` figures: 0.14222 -> '14.2%',
    0.076569 -> '7.66%', 0.5701 -> '57.0%'."""
    return f"{_significant(100.0 * float(fraction), significant)}%"


def format_seconds(seconds: float, significant: int = 3) -> str:
    """A duration in s, ms, µs or ns with ``significant`` figures: 0.0066095 -> '6.61 ms'."""
    s = float(seconds)
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(s) >= factor or unit == "ns":
            value = s / factor
            break
    return f"{_significant(value, significant)} {unit}"
