"""Buttons that open another page with its widgets preset. Each function here owns that page's
widget keys (the Cost page's from lab_ui/cost_inputs.py, the Serving page's GPU key below), so no
other file spells another page's keys; callers pass values (a preset, a config's text, a GPU id).
`widgets.link_button` does the opening."""

from __future__ import annotations

from attn_core.views import serving
from lab_ui import cost_inputs as ci
from lab_ui.widgets import link_button

COSTS_PAGE = "pages/costs.py"
SERVING_PAGE = "pages/serving.py"
SERVING_GPU_KEY = "sv_gpu"  # the Serving page's GPU picker (pages/serving.py reads it here)


def model_values(preset: str | None, config_text: str | None) -> dict[str, object]:
    """The model picker's values (lab_ui/cost_inputs.model_source, shared by the Cost and Serving
    pages): a preset by name, else the config's text pasted ("" when there is none)."""
    if preset is not None:
        return {ci.SOURCE_KEY: ci.SOURCES[0], ci.PRESET_KEY: preset}
    return {ci.SOURCE_KEY: ci.SOURCES[1], ci.PASTE_KEY: config_text or ""}


def costs_values(
    preset: str | None = None,
    config_text: str | None = None,
    T: int | None = None,
    gpu: str | None = None,
    dtype: str | None = None,
    section: str | None = None,
) -> dict[str, object]:
    """The Cost page's widget values for what is given (None: left as the visitor had it); the model
    only when a preset or a config's text is given; ``section`` by its URL id ("whole")."""
    values = model_values(preset, config_text) if preset is not None or config_text is not None else {}
    given = {ci.T_KEY: T, ci.GPU_KEY: gpu, ci.DTYPE_KEY: dtype, ci.SECTION_KEY: section}
    return values | {k: v for k, v in given.items() if v is not None}


def serving_values(preset: str | None, config_text: str | None, gpu: str) -> dict[str, object]:
    """The Serving page's widget values for a model and a GPU: the GPU only where the simulator
    knows it (not the Cost page's "this server (measured)")."""
    values = model_values(preset, config_text)
    if gpu in serving.GPUS:
        values[SERVING_GPU_KEY] = gpu
    return values


def open_costs(
    label: str,
    preset: str | None = None,
    config_text: str | None = None,
    T: int | None = None,
    gpu: str | None = None,
    dtype: str | None = None,
    section: str | None = None,
    key: str | None = None,
) -> None:
    """A button that opens the Cost calculator with these values set (`costs_values`)."""
    link_button(label, COSTS_PAGE, costs_values(preset, config_text, T, gpu, dtype, section), key=key)


def open_serving(label: str, preset: str | None, config_text: str | None, gpu: str) -> None:
    """A button that opens the Serving page on this model and GPU (`serving_values`)."""
    link_button(label, SERVING_PAGE, serving_values(preset, config_text, gpu))
