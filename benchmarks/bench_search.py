"""Search agent speed: decisions per second at its default budget (and at others), on
positions from real games with at least two legal moves, for each ladder preset.

    python benchmarks/bench_search.py [--decisions 200] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from block_env import Rules, raw_env
from block_env.agents import make_agent


def positions(rules: Rules, count: int, seed: int = 0) -> list[dict]:
    """Observations of real decisions (two or more legal moves) from random games."""
    env = raw_env(rules)
    rng = np.random.default_rng(seed)
    out: list[dict] = []
    episode = 0
    while len(out) < count:
        env.reset(seed=episode)
        episode += 1
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            legal = np.flatnonzero(obs["action_mask"])
            if len(legal) > 1:
                out.append(obs)
            env.step(int(rng.choice(legal)))
    return out[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--specs", nargs="+", default=["search", "search:worlds=24", "strategic"])
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    presets = ["standard", "standard_3p", "standard_4p", "partnership"]
    lines = ["| agent | " + " | ".join(presets) + " |", "|---|" + "---:|" * len(presets)]
    for spec in args.specs:
        cells = []
        for preset in presets:
            rules = Rules.preset(preset)
            obs = positions(rules, args.decisions)
            agent = make_agent(spec, rules, seed=0)
            agent.act(obs[0])  # warm-up: the batched search compiles its kernels on first use
            start = time.perf_counter()
            for o in obs:
                agent.act(o)
            cells.append(f"{len(obs) / (time.perf_counter() - start):,.0f}")
            print(f"  {spec} on {preset}: {cells[-1]} decisions/s", flush=True)
        lines.append(f"| `{spec}` | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print("\ndecisions per second (positions with 2+ legal moves):\n" + table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
