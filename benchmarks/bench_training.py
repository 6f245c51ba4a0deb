"""MaskablePPO training throughput (env steps/s) on configs/default.yaml, the batched vector env
against SB3's SubprocVecEnv of single envs, the same number of steps, printed side by side.

Both runs use the default config's PPO settings and opponent pool (scripted baselines and
self-play snapshots) with the same rollout size (n_envs x n_steps); the SubprocVecEnv run has
4 env processes, as the previous default did. The warm start is skipped and the periodic
evaluations are shrunk to a few deals, so that the figure is training itself.

    python benchmarks/bench_training.py [--steps 200000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import yaml

from block_env.training.config import config_from_dict
from block_env.training.train import train

DEFAULT = Path(__file__).resolve().parents[1] / "configs" / "default.yaml"


def run(values: dict, out: Path) -> dict:
    return train(config_from_dict(values), out, progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    base = yaml.safe_load(DEFAULT.read_text())
    base["total_timesteps"] = args.steps
    base["pretrain"]["teacher"] = None
    base["eval"] |= {"deals": 4, "every": args.steps}
    base["checkpoint_every"] = args.steps
    base["opponents"]["snapshot_every"] = args.steps // 2
    rollout = base["n_envs"] * base["ppo"]["n_steps"]
    runs = {
        f"batched vector env ({base['n_envs']} games, one process)": base,
        "SubprocVecEnv (4 env processes)": base
        | {"vec_env": "subproc", "n_envs": 4, "ppo": base["ppo"] | {"n_steps": rollout // 4}},
    }
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, values) in enumerate(runs.items()):
            summary = run(values, Path(tmp) / str(i))
            rows[name] = (summary["timesteps"], summary["seconds"], summary["steps_per_second"])
            print(f"{name}: {summary['steps_per_second']:,.0f} env steps/s", flush=True)
    lines = ["| vectorisation | env steps | seconds | env steps/s |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {steps:,} | {seconds:.0f} | {rate:,.0f} |" for name, (steps, seconds, rate) in rows.items()]
    (batched, subproc) = (r[2] for r in rows.values())
    lines += ["", f"batched / SubprocVecEnv: {batched / subproc:.1f}x"]
    text = "\n".join(lines)
    print("\n" + text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
