"""Save and load a trained model: a plain dict of tensors and numbers, loaded weights-only.

The file holds the model config, the training config, the per-step losses and the state dict.
``torch.load(..., weights_only=True)`` refuses anything but tensors and plain containers, so
opening a checkpoint never runs code from it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from attn_core.trained.model import ModelConfig, TinyTransformer
from attn_core.trained.tasks import TaskId
from attn_core.trained.training import TrainConfig, TrainState

FORMAT = "attn-lab-tiny-transformer/1"
DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[2] / "assets" / "trained" / "induction_2l4h.pt"


@dataclass(frozen=True)
class Checkpoint:
    model: TinyTransformer
    train_config: TrainConfig
    losses: list[float]  # one per training step, nats
    elapsed_s: float  # training time of the run that wrote it


def save(state: TrainState, path: str | Path) -> Path:
    """Write the run's model (float32), configs and loss history to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT,
        "model_config": state.model.config.to_dict(),
        "train_config": {**asdict(state.config), "task": str(state.config.task)},
        "losses": torch.tensor(state.losses, dtype=torch.float32),
        "elapsed_s": float(state.elapsed_s),
        "state_dict": {k: v.detach().clone() for k, v in state.model.state_dict().items()},
    }
    torch.save(payload, path)
    return path


def load(path: str | Path = DEFAULT_CHECKPOINT) -> Checkpoint:
    """Read a file written by ``save``; ValueError with the reason if it is not one."""
    try:
        payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError) as exc:  # missing, truncated or not a torch file
        raise ValueError(f"cannot read checkpoint {Path(path).name}: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{Path(path).name} is not a checkpoint of this lab's tiny transformer")
    model = TinyTransformer(ModelConfig(**payload["model_config"]))
    model.load_state_dict(payload["state_dict"])
    model.eval()
    tc = dict(payload["train_config"])
    train_config = TrainConfig(**{**tc, "task": TaskId(tc["task"])})
    return Checkpoint(model, train_config, payload["losses"].tolist(), payload["elapsed_s"])
