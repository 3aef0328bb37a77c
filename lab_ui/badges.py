"""Badges, checked tables, slip panels and error handling shared by every page."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

import pandas as pd
import streamlit as st

from attn_core.oracle import Check
from attn_core.slips import Slip
from lab_ui import table_fit, widgets

T = TypeVar("T")


def format_diff(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def oracle_badge(oracle: str, max_abs_diff: float, tol: float) -> bool:
    """A green "matches <oracle> · max |Δ| = 2.2e-16 ✓" badge, red with ✗ when max |Δ| > tol,
    and red "not finite" when max |Δ| is NaN or inf (a NaN output is never badged green)."""
    if not math.isfinite(max_abs_diff):
        st.markdown(
            f":red-badge[✗ NOT FINITE: the output has NaN or inf entries; no comparison with {oracle}]",
            help="Some intermediate overflowed or was undefined; the numbers on this page are not meaningful.",
        )
        return False
    ok = max_abs_diff <= tol
    color, mark = ("green", "✓") if ok else ("red", "✗")
    word = "matches" if ok else "DIFFERS FROM"
    st.markdown(
        f":{color}-badge[{mark} {word} {oracle} · max |Δ| = {format_diff(max_abs_diff)} "
        f"(tolerance {tol:.0e})]",
        help="The same numbers computed by an independent implementation; Δ is the largest "
        "absolute difference over every entry.",
    )
    return ok


def check_badge(check: Check) -> None:
    """✓/✗ badge with the property's name, then the measured number."""
    color, mark = ("green", "✓") if check.passed else ("red", "✗")
    st.markdown(f":{color}-badge[{mark} {check.name}] {check.detail}")


def check_badges(checks: Iterable[Check]) -> None:
    """A section's checks, one ``check_badge`` each, in order."""
    for check in checks:
        check_badge(check)


def slip_picker(slips: Mapping[str, Slip], key: str) -> str | None:
    """A "show a common slip" toggle and, when on, a choice among a slip registry
    (``attn_core.slips.<family>.SLIPS``: id → Slip). Shows the slip's label and note; returns the
    chosen id, or None."""
    if not widgets.toggle("Show a common slip beside the right answer", key=f"{key}_on"):
        return None
    slip_id = widgets.selectbox("Slip", list(slips), key=f"{key}_which", format_func=lambda i: slips[i].label)
    st.caption(slips[slip_id].note)
    return slip_id


def slip_columns(right: Callable[[], None], wrong: Callable[[], None], slip_name: str) -> None:
    """Render the correct version on the left and the slip on the right."""
    left, right_col = st.columns(2)
    with left:
        st.markdown("**✓ Correct**")
        right()
    with right_col:
        st.markdown(f"**✗ Slip: {slip_name}**")
        wrong()


INT64_MAX = 2**63 - 1


def arrow_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every column of exact integers beyond int64 (a byte count at the caps reaches
    10²²) written as text: Arrow, which carries a table to the browser, has no wider integer."""
    out = df.copy()
    for name in df.columns:
        column = df[name]
        if column.dtype == object and any(isinstance(x, int) and abs(x) > INT64_MAX for x in column):
            out[name] = column.map(str)
    return out


def fitted(df: pd.DataFrame, kwargs: dict) -> dict:
    """st.dataframe's arguments with column widths (and a wrapping row height) that make ``df``
    fit the page (lab_ui/table_fit.py); a caller's own widths and row height win."""
    shape = table_fit.fit(df)
    if not shape.widths:
        return kwargs
    config = dict(kwargs.get("column_config") or {})
    for name, width in shape.widths.items():
        given = config.get(name)
        if isinstance(given, dict):
            config[name] = {"width": width, **given}
        elif given is None or isinstance(given, str):
            config[name] = st.column_config.Column(given, width=width)
    out = {**kwargs, "column_config": config}
    if shape.row_height is not None:
        out.setdefault("row_height", shape.row_height)
    return out


def table(df: pd.DataFrame, file_name: str, key: str, **kwargs) -> None:
    """A dataframe that fits the page's width, with a CSV download button under it."""
    st.dataframe(arrow_safe(df), key=f"{key}_table", **fitted(df, kwargs))
    st.download_button(
        "⬇ CSV",
        lambda: df.to_csv(index=False).encode(),  # written on click, not on every rerun
        file_name=file_name,
        mime="text/csv",
        key=f"{key}_csv",
        on_click="ignore",
    )


def number_table(rows: list[dict] | dict[str, list], file_name: str, key: str, fmt: str = "%.4g") -> None:
    """``table`` for rows of numbers: every float column shown in ``fmt`` (printf style); the CSV
    keeps full float64 precision."""
    df = pd.DataFrame(rows)
    config = {c: st.column_config.NumberColumn(format=fmt) for c in df.columns if df[c].dtype.kind == "f"}
    table(df, file_name, key=key, hide_index=True, column_config=config)


def scientific(columns: Iterable[str]) -> dict:
    """column_config that shows the named float columns as 1.2e-16."""
    return {c: st.column_config.NumberColumn(format="%.2e") for c in columns}


def error_table(rows: list[dict], file_name: str, key: str, columns: Iterable[str]) -> None:
    """``table`` of checked rows whose ``columns`` (an error and the tolerance it is held to) show
    in scientific notation; the CSV keeps full float64 precision."""
    table(pd.DataFrame(rows), file_name, key=key, hide_index=True, column_config=scientific(columns))


def attempt(fn: Callable[..., T], *args, **kwargs) -> T | None:
    """Call fn; on ValueError show the message right here (next to the widget that caused it)
    and return None, so the rest of the page keeps working."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        st.error(str(exc), icon="⚠️")
        return None
