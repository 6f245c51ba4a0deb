"""CFR+ per iteration, side by side: OpenSpiel's Python ``CFRPlusSolver`` on the
``block_dominoes`` game against this project's solver (block_env.game_tree + block_env.cfr),
on the same set (``small`` by default), with the memory each holds beside its time.

Each solver builds its tree first (timed apart), then runs ``--iterations`` iterations after
one warm-up (numba compiles on its first call). Memory: the Python heap the OpenSpiel solver's
tables and tree hold (tracemalloc, growth over the build), and the bytes of our tree's and
solver's arrays. Both reach the same average policy (tests/test_solver.py checks it).

    python benchmarks/bench_solver.py [--rules small] [--iterations 5] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from report_table import add_markdown_argument, show  # noqa: E402

from block_env.cfr import CFRSolver, nash_conv
from block_env.game_tree import build_tree
from block_env.rules import Rules


def time_iterations(step, iterations: int) -> float:
    """Seconds per call of ``step`` over ``iterations`` calls, after one warm-up."""
    step()
    start = time.perf_counter()
    for _ in range(iterations):
        step()
    return (time.perf_counter() - start) / iterations


def openspiel_row(preset: str, iterations: int) -> dict[str, float]:
    import pyspiel
    from open_spiel.python.algorithms import cfr

    import block_env.openspiel  # noqa: F401  (registers block_dominoes)

    game = pyspiel.load_game(f"block_dominoes(preset={preset})")
    tracemalloc.start()
    start = time.perf_counter()
    solver = cfr.CFRPlusSolver(game)
    build = time.perf_counter() - start
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per_iteration = time_iterations(solver.evaluate_and_update_policy, iterations)
    return {"build": build, "iteration": per_iteration, "memory": memory}


def our_row(preset: str, iterations: int) -> dict[str, float]:
    start = time.perf_counter()
    tree = build_tree(Rules.preset(preset))
    solver = CFRSolver(tree)
    build = time.perf_counter() - start
    per_iteration = time_iterations(solver.iterate, iterations)
    start = time.perf_counter()
    nash_conv(tree, solver.average_policy())
    exact = time.perf_counter() - start
    return {"build": build, "iteration": per_iteration, "memory": tree.nbytes + solver.nbytes, "nash_conv": exact}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="small", help="a two-player preset (default small)")
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations per solver (default 5)")
    add_markdown_argument(parser)
    args = parser.parse_args()

    theirs = openspiel_row(args.rules, args.iterations)
    ours = our_row(args.rules, args.iterations)
    lines = [
        f"CFR+ on `{args.rules}`, {args.iterations} timed iterations each",
        "",
        "| solver | tree build (s) | ms per iteration | memory (MiB) |",
        "|---|---:|---:|---:|",
        f"| OpenSpiel `cfr.CFRPlusSolver` (Python) | {theirs['build']:.2f} | {1000 * theirs['iteration']:.1f} | "
        f"{theirs['memory'] / 2**20:.1f} |",
        f"| block_env.cfr (numba) | {ours['build']:.2f} | {1000 * ours['iteration']:.2f} | {ours['memory'] / 2**20:.1f} |",
        "",
        f"per iteration: {theirs['iteration'] / ours['iteration']:.0f}x faster; "
        f"an exact NashConv (two best responses) takes {1000 * ours['nash_conv']:.1f} ms",
    ]
    text = "\n".join(lines)
    show(text, args.markdown)


if __name__ == "__main__":
    main()
