"""Vision and audio towers beside the language model, sized from transformers' build of the whole
config (the multimodal class, on the meta device): what a multimodal config.json holds beyond
its text model. A parameter belongs to a tower when a piece of its path names one (vision,
visual, image, audio, a multimodal projector); the rest is the text model, which
`attn_core.anatomy.parts` splits by part."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from attn_core.anatomy.build import BuildRefused, check_build_size, quiet

TOWER_CONFIG_KEYS = ("vision_config", "audio_config", "speech_config", "image_config")
_PROJECTOR = re.compile(r"projector|embed_vision|embed_audio|mm_proj|connector|merger", re.I)
_VISION = re.compile(r"vision|visual|image|siglip|vit", re.I)
_AUDIO = re.compile(r"audio|speech|whisper", re.I)


def tower_of(path: str) -> str | None:
    """The tower a parameter path belongs to: 'projector', 'vision', 'audio', or None (text)."""
    for piece in path.split("."):
        if _PROJECTOR.search(piece):
            return "projector"
        if _VISION.search(piece):
            return "vision"
        if _AUDIO.search(piece):
            return "audio"
    return None


def tower_params(config: Mapping[str, Any]) -> dict[str, int]:
    """Parameters of each tower a config declares ({} for a text-only config), from transformers'
    build of the whole model on the meta device. BuildRefused when it cannot build it."""
    if not any(isinstance(config.get(k), Mapping) for k in TOWER_CONFIG_KEYS):
        return {}
    import torch
    from transformers import AutoConfig, AutoModel

    model_type = config.get("model_type")
    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "auto_map", "transformers_version")}
    for part in (config, config.get("text_config")):
        if isinstance(part, Mapping):
            check_build_size(part)
    try:
        with quiet(), torch.device("meta"):
            cfg = AutoConfig.for_model(model_type, **kwargs)
            model = AutoModel.from_config(cfg, dtype=torch.bfloat16)
    except Exception as exc:
        raise BuildRefused(
            f"transformers cannot build the whole multimodal model: {exc.__class__.__name__}"
        ) from None
    out: Counter = Counter()
    seen: set[int] = set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        tower = tower_of(name)
        if tower is not None:
            out[tower] += p.numel()
    return dict(out)


def tower_lines(towers: Mapping[str, int], text_total: int | None) -> list[str]:
    """The towers beside the text model, and the total with them (the figure makers publish for a
    multimodal checkpoint); [] for a text-only config."""
    if not towers:
        return []
    from attn_core.cost.units import format_count_short

    parts = ", ".join(f"{name} {n:,} ({format_count_short(n, 2)})" for name, n in towers.items())
    lines = [f"Towers beside the text model (transformers' build of the whole config): {parts}"]
    if text_total is not None:
        whole = text_total + sum(towers.values())
        lines.append(
            f"  text model and towers together: {whole:,} ({format_count_short(whole, 2)}) parameters"
        )
    return lines
