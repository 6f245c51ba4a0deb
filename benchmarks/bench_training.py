"""MaskablePPO training throughput (env steps/s) on configs/default.yaml, and where the time
goes, side by side in one run:

- the default config as it is (256 batched games x 16 steps, minibatches of 2,048, 2 epochs,
  PPO updates on every core);
- the same with the earlier update (minibatches of 1,024, 4 epochs): the same learning per
  sample as before, so the difference is the update's share;
- the earlier settings (64 batched games x 64 steps, the same 4,096-step rollout, minibatches
  of 1,024, 4 epochs, updates on one thread);
- SB3's SubprocVecEnv of single envs (4 env processes), the same rollout and update;
- a best response's recipe against search (``block-dominoes exploit --agent search``), its
  games stepping in one process and split across two (``--env-processes 2``): search's moves
  at the other seats are most of that time.

Each run's wall time is split into the env stepping (opponents included), the rollout's policy
forward passes, the PPO update and the rest (the callbacks: snapshots, checkpoints). The warm
start is skipped and the periodic evaluations shrunk to a few deals, so that the figure is
training itself.

    python benchmarks/bench_training.py [--steps 262144] [--search-steps 65536] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.vec_env import VecMonitor

from block_env.training.config import config_from_dict
from block_env.training.exploit import exploit_config
from block_env.training.train import train

DEFAULT = Path(__file__).resolve().parents[1] / "configs" / "default.yaml"
#: (label, class, method) timed in each run; env stepping is timed at the VecMonitor every
#: vectorisation goes through.
PARTS = [
    ("env step", VecMonitor, "step_wait"),
    ("policy forward", MaskableActorCriticPolicy, "forward"),
    ("PPO update", MaskablePPO, "train"),
]
SECONDS: Counter = Counter()


def timed(label: str, method: Callable) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - started

    return wrapper


def run(values: dict, out: Path) -> dict:
    SECONDS.clear()
    summary = train(config_from_dict(values), out, progress=False)
    return summary | {"parts": dict(SECONDS)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=262_144)
    parser.add_argument("--search-steps", type=int, default=65_536, help="steps of each run against search (0: none)")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    for label, cls, name in PARTS:
        setattr(cls, name, timed(label, getattr(cls, name)))
    base = yaml.safe_load(DEFAULT.read_text())
    base["total_timesteps"] = args.steps
    base["pretrain"]["teacher"] = None
    base["eval"] |= {"deals": 4, "every": args.steps, "halfwidth": None}
    base["checkpoint_every"] = args.steps
    base["opponents"]["snapshot_every"] = args.steps // 2
    rollout = base["n_envs"] * base["ppo"]["n_steps"]
    earlier_update = base["ppo"] | {"batch_size": 1024, "n_epochs": 4}
    ppo = base["ppo"]
    runs = {
        f"default.yaml: {base['n_envs']} batched games x {ppo['n_steps']} steps, minibatch {ppo['batch_size']:,}, "
        f"{ppo['n_epochs']} epochs, updates on every core": base,
        "the same, minibatch 1,024, 4 epochs": base | {"ppo": earlier_update},
        "earlier: 64 batched games x 64 steps, minibatch 1,024, 4 epochs, updates on one thread": base
        | {"n_envs": 64, "update_threads": 1, "ppo": earlier_update | {"n_steps": rollout // 64}},
        "SubprocVecEnv: 4 env processes, minibatch 1,024, 4 epochs": base
        | {"vec_env": "subproc", "n_envs": 4, "ppo": earlier_update | {"n_steps": rollout // 4}},
    }
    if args.search_steps:
        for processes in (1, 2):
            values = exploit_config("search", "standard", args.search_steps, env_processes=processes)
            values["eval"] |= {"deals": 4, "every": args.search_steps, "final_deals": 4}
            runs[f"best response to search (exploit's recipe), {processes} env process{'es' * (processes > 1)}"] = (
                values
            )
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, values) in enumerate(runs.items()):
            summary = run(values, Path(tmp) / str(i))
            rows[name] = summary
            print(f"{name}: {summary['steps_per_second']:,.0f} env steps/s", flush=True)
    lines = [
        "| run | env steps/s | seconds | env step | policy forward | PPO update | other |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in rows.items():
        parts = s["parts"]
        shares = [parts.get(label, 0.0) / s["seconds"] for label, _, _ in PARTS]
        other = 1.0 - sum(shares)
        cells = " | ".join(f"{share:.0%}" for share in [*shares, other])
        lines.append(f"| {name} | {s['steps_per_second']:,.0f} | {s['seconds']:.0f} | {cells} |")
    rates = [s["steps_per_second"] for s in rows.values()]
    lines += [
        "",
        f"default / earlier settings: {rates[0] / rates[2]:.2f}x; default / the same with the earlier update: "
        f"{rates[0] / rates[1]:.2f}x; default / SubprocVecEnv: {rates[0] / rates[3]:.1f}x",
    ]
    if args.search_steps:
        lines[-1] += f"; against search, 2 env processes / 1: {rates[5] / rates[4]:.2f}x"
    text = "\n".join(lines)
    print("\n" + text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
