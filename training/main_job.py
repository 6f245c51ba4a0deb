"""The main job: train an agent with a config, then meet the baselines in the arena.

``block-dominoes main --config configs/default.yaml`` runs :func:`run_main_job`: training
(:func:`block_env.training.train.train`) writes the run folder, then the trained agent, its
own step-0 policy (the warm start: what PPO itself added) and the config's final opponents
(``eval.final_opponents``, else ``eval.opponents``) play duplicate deals that the
training-time evaluations never saw.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from block_env.arena import ArenaConfig, ArenaReport, evaluate_into
from block_env.seeding import derive_seed
from block_env.training.config import TrainConfig
from block_env.training.train import BEST, STEP_0, train


@dataclass
class MainJobResult:
    """What the main job produced: training's summary, and the arena's report and files
    (None when training was interrupted)."""

    training: dict[str, Any]
    report: ArenaReport | None
    files: dict[str, Path]


def final_arena(config: TrainConfig, out: Path, workers: int) -> ArenaConfig:
    """The trained agent, its step-0 policy and the final opponents, on fresh deals."""
    opponents = config.eval.opponents if config.eval.final_opponents is None else config.eval.final_opponents
    return ArenaConfig(
        agents=(f"policy:{out / BEST}", f"policy:{out / STEP_0}", *opponents),
        rules=config.resolved_rules(),
        episode=config.episode,
        deals=config.eval.final_deals,
        seed=derive_seed(config.seed, "final_arena"),  # deals the training-time evaluations never saw
        workers=workers,
    )


def final_arena_command(config: TrainConfig, out: Path, workers: int) -> str | None:
    """The ``block-dominoes eval`` command line of :func:`final_arena` (``--resume`` continues
    one that was stopped), or None for rules that are not a preset name."""
    if not isinstance(config.rules, str):
        return None
    arena = final_arena(config, out, workers)
    words = ["block-dominoes", "eval", "--agents", *arena.agents, "--rules", config.rules]
    words += ["--episode", arena.episode, "--deals", str(arena.deals), "--seed", str(arena.seed)]
    return shlex.join([*words, "--workers", str(workers), "--out", str(out / "arena")])


def run_main_job(config: TrainConfig, out: Path, *, workers: int = 1, progress: bool = True) -> MainJobResult:
    """Train with ``config`` into ``out``, then run the final arena into ``out/arena``."""
    summary = train(config, out, progress=progress)
    if summary.get("interrupted"):
        return MainJobResult(summary, None, {})
    started = time.perf_counter()
    report, files = evaluate_into(final_arena(config, out, workers), out / "arena", progress=progress)
    summary["phases"]["arena"] = round(time.perf_counter() - started, 1)
    return MainJobResult(summary, report, files)


def phase_times(phases: dict[str, float]) -> str:
    """One line: each phase's time, in the order they ran, and the total.

    Examples:
        >>> phase_times({"warm_start": 40.0, "ppo": 95.5, "arena": 30.0})
        'warm start 40 s, ppo 96 s, arena 30 s; total 2 min 46 s'
    """
    total = sum(phases.values())
    parts = ", ".join(f"{name.replace('_', ' ')} {seconds:.0f} s" for name, seconds in phases.items())
    return f"{parts}; total {int(total // 60)} min {total % 60:.0f} s"
