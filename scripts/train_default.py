"""Train the default tiny transformer on the induction task and ship it.

Default model (attention-only, 2 layers, 4 heads, d_model 64), seed 0, on at most 2 CPU threads.
Records steps/s and when the loss passes the phase change (the 50-step mean loss at or below
``phase_threshold``: 0.81 nats, 2.45 below the unigram baseline ln 26; argued in
attn_core/trained/training.py), writes the checkpoint into assets/trained/ and appends the
figures to benchmarks/RESULTS.md.

Wall times depend on what else runs on the machine; CPU time (process_time, all threads) is
printed beside them, with the load average at start and end.

Usage: .venv/bin/python scripts/train_default.py [--steps N] [--threads K] [--no-results]
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

from attn_core.trained import checkpoint
from attn_core.trained.analysis import head_scores, map_check, probe_batch, run_trace
from attn_core.trained.model import ModelConfig, TinyTransformer
from attn_core.trained.tasks import TASKS, TaskId, seq_len
from attn_core.trained.training import TrainConfig, eval_loss, new_run, phase_threshold, train

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "RESULTS.md"
TARGET_S = 60.0  # the phase change within 60 s on 2 cores (RESULTS.md, "Trained heads")


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=1, choices=[1, 2])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=checkpoint.DEFAULT_CHECKPOINT)
    parser.add_argument("--no-results", action="store_true", help="do not append to RESULTS.md")
    return parser.parse_args()


def _append_results(threads: int, when: str, lines: list[str]) -> None:
    """The run's lines as a section of benchmarks/RESULTS.md."""
    with RESULTS.open("a") as f:
        f.write(
            f"\n## Trained heads — `.venv/bin/python scripts/train_default.py --threads {threads}` "
            f"({when})\n\n" + "".join(f"- {line}\n" for line in lines)
        )


def main() -> None:
    args = _args()
    torch.set_num_threads(args.threads)

    task = TaskId.INDUCTION
    model_config = ModelConfig(block_size=seq_len(task))
    state = new_run(model_config, TrainConfig(task=task, steps=args.steps, seed=args.seed))
    clocks: list[tuple[float, float]] = []  # (wall s, CPU s) after each step
    load_start = os.getloadavg()[0]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")  # the run's start
    wall0, cpu0 = time.perf_counter(), time.process_time()

    def tick(_progress) -> None:
        clocks.append((time.perf_counter() - wall0, time.process_time() - cpu0))

    train(state, on_progress=tick, report_every=1)
    load_end = os.getloadavg()[0]
    wall, cpu = clocks[-1]
    phase = state.phase_change_step
    phase_wall, phase_cpu = clocks[phase - 1] if phase else (float("nan"), float("nan"))

    trained = head_scores(state.model)
    random_init = head_scores(TinyTransformer(model_config, seed=args.seed))
    layer, head = divmod(int(trained.induction.argmax()), model_config.n_head)
    check = map_check(run_trace(state.model, probe_batch()))
    held_out = eval_loss(state.model, task)
    path = checkpoint.save(
        state,
        args.out,
        extra={"trained_by": "scripts/train_default.py", "threads": str(args.threads), "date": when},
    )
    size = path.stat().st_size

    lines = [
        f"default model {model_config.n_layer}L × {model_config.n_head}H, d_model {model_config.n_embd}, "
        f"attention-only; induction task T = {model_config.block_size}; seed {args.seed}; "
        f"{args.threads} threads; {args.steps} steps of batch {state.config.batch_size}, AdamW lr {state.config.lr}",
        f"steps/s: {args.steps / wall:.1f} wall, {args.steps / cpu:.1f} per CPU-second "
        f"(load average {load_start:.2f} → {load_end:.2f})",
        f"phase change (50-step mean ≤ {phase_threshold(task):.2f} nats; unigram baseline "
        f"{TASKS[task].uniform_loss:.2f}): step {phase}, after {phase_wall:.1f} s wall / "
        f"{phase_cpu:.1f} CPU-s (target {TARGET_S:.0f} s)",
        f"final 50-step mean loss {sum(state.losses[-50:]) / 50:.3f} nats; held-out {held_out:.3f} nats",
        f"best induction score {trained.induction.max():.3f} (layer {layer}, head {head}); "
        f"random init max {random_init.induction.max():.3f}",
        f"oracle: maps recomputed by attn_core.attention in float64, max |Δ| {check.max_abs_diff:.2e} "
        f"(tol {check.tol:.2e})",
        f"checkpoint {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}: "
        f"{size:,} bytes ({size / 1024:.1f} KiB)",
    ]
    print("\n".join(lines))
    if not args.no_results:
        _append_results(args.threads, when, lines)


if __name__ == "__main__":
    main()
