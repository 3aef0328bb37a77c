"""Save and load a trained model as a safetensors file: tensors plus a JSON header, no code.

The tensors are the model's state dict (float32) and the per-step training losses (under
``LOSSES_KEY``); the header's metadata holds the model and training configs as JSON. Loading a
safetensors file only parses that header and copies bytes, so opening a checkpoint never runs
code from it (unlike an unrestricted pickle).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from attn_core.trained.model import ModelConfig, TinyTransformer
from attn_core.trained.tasks import TaskId
from attn_core.trained.training import TrainConfig, TrainState

FORMAT = "attn-lab-tiny-transformer/1"
LOSSES_KEY = "training.losses"  # not a parameter name: nanoGPT names never contain "training."
DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[2] / "assets" / "trained" / "induction_2l4h.safetensors"


@dataclass(frozen=True)
class Checkpoint:
    model: TinyTransformer
    train_config: TrainConfig
    losses: list[float]  # one per training step, nats
    elapsed_s: float  # training time of the run that wrote it
    meta: dict[str, str]  # the header's extra fields (who trained it, threads, …)


def save(state: TrainState, path: str | Path, extra: dict[str, str] | None = None) -> Path:
    """Write the run's model (float32), configs and loss history to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to(torch.float32).contiguous() for k, v in state.model.state_dict().items()}
    tensors[LOSSES_KEY] = torch.tensor(state.losses, dtype=torch.float32)
    metadata = {
        **(extra or {}),
        "format": FORMAT,
        "model_config": json.dumps(state.model.config.to_dict()),
        "train_config": json.dumps({**asdict(state.config), "task": str(state.config.task)}),
        "elapsed_s": repr(float(state.elapsed_s)),
    }
    save_file(tensors, str(path), metadata=metadata)
    return path


def load(path: str | Path = DEFAULT_CHECKPOINT) -> Checkpoint:
    """Read a file written by ``save``; ValueError with the reason if it is not one."""
    path = Path(path)
    try:
        tensors = load_file(str(path), device="cpu")
        with open(path, "rb") as f:  # the header: 8-byte little-endian length, then JSON
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    except (OSError, SafetensorError, ValueError) as exc:  # missing, truncated, not safetensors
        raise ValueError(f"cannot read checkpoint {path.name}: {exc}") from exc
    meta = header.get("__metadata__") or {}
    if meta.get("format") != FORMAT or LOSSES_KEY not in tensors:
        raise ValueError(f"{path.name} is not a checkpoint of this lab's tiny transformer")
    losses = tensors.pop(LOSSES_KEY)
    model = TinyTransformer(ModelConfig(**json.loads(meta["model_config"])))
    model.load_state_dict(tensors)  # strict: a missing or extra weight raises
    model.eval()
    tc = json.loads(meta["train_config"])
    train_config = TrainConfig(**{**tc, "task": TaskId(tc["task"])})
    extra = {k: v for k, v in meta.items() if k not in {"format", "model_config", "train_config"}}
    return Checkpoint(model, train_config, losses.tolist(), float(meta["elapsed_s"]), extra)
