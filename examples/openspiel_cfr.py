"""Block dominoes in OpenSpiel: solve the tiny set with CFR+, measure agents exactly, and
play our agents against OpenSpiel's IS-MCTS.

    python examples/openspiel_cfr.py [--iterations 20]
"""

from __future__ import annotations

import argparse

import pyspiel
from open_spiel.python.algorithms import cfr, exploitability

import block_env.openspiel  # noqa: F401  (registers the game "block_dominoes")
from block_env.openspiel import AgentPolicy, make_bot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()

    game = pyspiel.load_game("block_dominoes(preset=tiny)")
    solver = cfr.CFRPlusSolver(game)
    for _ in range(args.iterations):
        solver.evaluate_and_update_policy()
    print(
        f"CFR+ after {args.iterations} iterations: NashConv {exploitability.nash_conv(game, solver.average_policy()):.4f}"
    )
    for spec in ("random", "greedy", "strategic"):
        print(f"{spec}: NashConv {exploitability.nash_conv(game, AgentPolicy(spec, game)):.4f}")

    # Any agent spec as an OpenSpiel bot, in OpenSpiel's own evaluation loop.
    standard = pyspiel.load_game("block_dominoes")
    bots = [
        make_bot("strategic", standard, 0, seed=1),
        make_bot("openspiel:ismcts,simulations=50", standard, 1, seed=2),
    ]
    returns = pyspiel.evaluate_bots(standard.new_initial_state(), bots, 3)
    print(f"strategic vs IS-MCTS, one round: {returns}")


if __name__ == "__main__":
    main()
