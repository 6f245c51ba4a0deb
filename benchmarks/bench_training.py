"""MaskablePPO training throughput (env steps/s), and where the time goes, side by side in
one run:

- the main job's settings of 2026-12 written out here (so that later edits of
  configs/default.yaml do not move the comparison): 256 batched games x 16 steps, minibatches
  of 2,048, 2 epochs, a [256, 256] tanh network on the vector encoding, against random, greedy,
  strategic and self-play snapshots;
- configs/default.yaml as it is now;
- the belief student's PPO setting: the tracked encoding, a full-information critic and
  configs/belief_student.yaml's ``ppo`` section (minibatches of 1,024, 4 epochs), against the
  scripted opponents, in one process;
- unless ``--quick``: the first with the earlier update (minibatches of 1,024, 4 epochs: the
  difference is the update's share), the earlier settings (64 batched games x 64 steps, the
  same 4,096-step rollout, minibatches of 1,024, 4 epochs, updates on one thread), SB3's
  SubprocVecEnv of single envs (4 env processes), and a best response's recipe against search
  (``block-dominoes exploit --agent search``), its games stepping in one process and split
  across two (``--env-processes 2``): search's moves at the other seats are most of that time.

Each run's wall time is split into the env stepping (opponents included), the rollout's policy
forward passes, the PPO update and the rest (the callbacks: snapshots, checkpoints), after a
short untimed run that pays the process's one-off costs. The warm start is skipped and the
periodic evaluations shrunk to a few deals, so that the figure is training itself.

    python benchmarks/bench_training.py [--steps 262144] [--search-steps 65536] [--quick] [--markdown FILE]
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
from report_table import add_markdown_argument, show  # noqa: E402
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.vec_env import VecMonitor

from block_env.training.config import config_from_dict
from block_env.training.exploit import exploit_config
from block_env.training.train import train

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
#: The main job's config of 2026-12 (configs/default.yaml then), less its warm start: the
#: settings the speed-ups were measured on.
MAIN_JOB_2026_12 = {
    "rules": "standard",
    "episode": "round",
    "reward": "zero_sum",
    "reward_scale": 0.05,
    "observation": "vector",
    "n_envs": 256,
    "vec_env": "batched",
    "seed": 0,
    "ppo": {
        "learning_rate": 0.0003,
        "n_steps": 16,
        "batch_size": 2048,
        "n_epochs": 2,
        "gamma": 1.0,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "net_arch": [256, 256],
        "activation": "tanh",
    },
    "pretrain": {"teacher": None},
    "opponents": {"scripted": ["random", "greedy", "strategic"], "self_play": True, "max_snapshots": 3},
    "eval": {"opponents": ["random", "greedy", "strategic"]},
}
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
    parser.add_argument("--quick", action="store_true", help="only the 2026-12 job, default.yaml and the belief PPO")
    add_markdown_argument(parser)
    args = parser.parse_args()
    for label, cls, name in PARTS:
        setattr(cls, name, timed(label, getattr(cls, name)))

    def short(values: dict) -> dict:
        """``values`` without the warm start, for ``args.steps`` steps, evaluating a few deals."""
        values = dict(values)
        values["total_timesteps"] = args.steps
        values["pretrain"] = {"teacher": None}  # no warm start of any kind
        values["eval"] = {**values.get("eval", {}), "deals": 4, "every": args.steps, "halfwidth": None}
        values["checkpoint_every"] = args.steps
        values["opponents"] = {**values.get("opponents", {}), "snapshot_every": args.steps // 2}
        return values

    base = short(MAIN_JOB_2026_12)
    ppo = base["ppo"]
    belief_ppo = yaml.safe_load((CONFIGS / "belief_student.yaml").read_text())["ppo"]
    runs = {
        f"main job of 2026-12: {base['n_envs']} batched games x {ppo['n_steps']} steps, minibatch "
        f"{ppo['batch_size']:,}, {ppo['n_epochs']} epochs, updates on every core": base,
        "configs/default.yaml as it is now": short(yaml.safe_load((CONFIGS / "default.yaml").read_text())),
        f"belief student's PPO: tracked, full-information critic, minibatch {belief_ppo['batch_size']:,}, "
        f"{belief_ppo['n_epochs']} epochs, scripted opponents": base
        | {"observation": "tracked", "ppo": belief_ppo, "opponents": base["opponents"] | {"self_play": False}},
    }
    rollout = base["n_envs"] * ppo["n_steps"]
    earlier_update = ppo | {"batch_size": 1024, "n_epochs": 4}
    if not args.quick:
        runs |= {
            "the 2026-12 job, minibatch 1,024, 4 epochs": base | {"ppo": earlier_update},
            "earlier: 64 batched games x 64 steps, minibatch 1,024, 4 epochs, updates on one thread": base
            | {"n_envs": 64, "update_threads": 1, "ppo": earlier_update | {"n_steps": rollout // 64}},
            "SubprocVecEnv: 4 env processes, minibatch 1,024, 4 epochs": base
            | {"vec_env": "subproc", "n_envs": 4, "ppo": earlier_update | {"n_steps": rollout // 4}},
        }
    if args.search_steps and not args.quick:
        for processes in (1, 2):
            values = exploit_config("search", "standard", args.search_steps, env_processes=processes)
            values["eval"] |= {"deals": 4, "every": args.search_steps, "final_deals": 4}
            runs[f"best response to search (exploit's recipe), {processes} env process{'es' * (processes > 1)}"] = (
                values
            )
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        # A short untimed run first: the process's first training pays one-off costs (imports,
        # compiling the engine's kernels) that would otherwise count against the first row.
        run(base | {"total_timesteps": 2 * rollout, "checkpoint_every": 2 * rollout}, Path(tmp) / "warm_up")
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
    if not args.quick:
        lines += [
            "",
            f"2026-12 job / earlier settings: {rates[0] / rates[4]:.2f}x; 2026-12 job / the same with the earlier "
            f"update: {rates[0] / rates[3]:.2f}x; 2026-12 job / SubprocVecEnv: {rates[0] / rates[5]:.1f}x",
        ]
        if args.search_steps:
            lines[-1] += f"; against search, 2 env processes / 1: {rates[7] / rates[6]:.2f}x"
    text = "\n".join(lines)
    print()
    show(text, args.markdown)


if __name__ == "__main__":
    main()
