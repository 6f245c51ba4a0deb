"""Solve the medium set (double-three, 2 players x 3 tiles) with CFR+ and print each agent's
exact NashConv beside the equilibrium's (docs/solver.md).

    python examples/solve_medium.py [--until 0.01] [--agents random greedy strategic search]

Builds the game tree from the engine (about 2 s), runs CFR+ until the average policy's
NashConv is at most ``--until`` times the mean award of a round (checked every 10
iterations), then measures each agent with two exact best responses: about 10 s in all on
the project's machine. Each agent is asked for its move at every information state its own
moves reach (8,082 for a deterministic one); ``openspiel:ismcts`` (the [openspiel] extra)
takes about 7 minutes there.
"""

from __future__ import annotations

import argparse
import time

from block_env.cfr import CFRSolver, mean_award, nash_conv
from block_env.game_tree import build_tree
from block_env.rules import Rules
from block_env.training.solve import agent_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", type=float, default=0.01, help="target NashConv as a share of the mean award")
    parser.add_argument("--max-iterations", type=int, default=2000, help="stop here if the target is not reached")
    parser.add_argument("--agents", nargs="*", default=["random", "greedy", "strategic", "search"])
    args = parser.parse_args()

    start = time.perf_counter()
    tree = build_tree(Rules.preset("medium"))
    scale = mean_award(tree)
    print(
        f"medium: {tree.num_nodes:,} histories, {tree.num_infostates:,} information states, "
        f"built in {time.perf_counter() - start:.1f} s; mean award {scale:.3f} points"
    )
    solver = CFRSolver(tree)
    while True:
        for _ in range(10):
            solver.iterate()
        value = nash_conv(tree, solver.average_policy())
        if value <= args.until * scale or solver.iteration >= args.max_iterations:
            break
    print(
        f"CFR+ reached NashConv {value:.5f} after {solver.iteration} iterations, {time.perf_counter() - start:.1f} s in all"
    )

    print("\n| agent | NashConv | share of the mean award |\n|---|---:|---:|")
    print(f"| CFR+ average policy | {value:.4f} | {100 * value / scale:.2f}% |")
    for spec in args.agents:
        exploitability = nash_conv(tree, agent_policy(tree, spec))
        print(f"| {spec} | {exploitability:.4f} | {100 * exploitability / scale:.1f}% |")


if __name__ == "__main__":
    main()
