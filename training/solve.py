"""Exact methods on the small sets: CFR+ to an approximate Nash equilibrium, and the exact
NashConv (OpenSpiel's best responses over the whole game tree) of any agent.

``block-dominoes solve --rules tiny --iterations 200 --out runs/solve-tiny`` runs
:func:`solve`: CFR+ (OpenSpiel's) on the ``block_dominoes`` game of those rules, the NashConv
of its average policy at log-spaced iterations (``nash_conv.csv`` and ``nash_conv.png``), the
average policy itself (``average_policy.json``: information state -> action probabilities),
and, with ``--agents``, each agent's exact NashConv beside it (``agents.csv``, ``summary.md``).

NashConv is the sum over players of what a best response gains against the others' policies
(0 at a Nash equilibrium), in points per round; the tables also give it as a share of the
mean award of a round (the mean points a round pays, under uniform random play).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyspiel

from block_env.files import save_atomically, write_atomically, write_csv_atomically
from block_env.openspiel import AgentPolicy
from block_env.validation import check_int

#: The sets ``solve`` accepts: the full tree must fit in memory and time.
SOLVABLE = ("tiny", "small")


def mean_award(game: Any) -> float:
    """The expected points a round pays (|a seat's return| in 2-player zero-sum play) when
    every decision is uniform over the legal moves: the scale NashConv is read against."""

    def walk(state: Any) -> float:
        if state.is_terminal():
            return abs(state.returns()[0])
        if state.is_chance_node():
            return sum(p * walk(state.child(a)) for a, p in state.chance_outcomes())
        legal = state.legal_actions()
        return sum(walk(state.child(a)) for a in legal) / len(legal)

    return walk(game.new_initial_state())


def nash_conv(game: Any, policy: Any) -> float:
    """The exact NashConv of ``policy`` (OpenSpiel's best responses over the whole tree)."""
    from open_spiel.python.algorithms import exploitability

    value: Any = exploitability.nash_conv(game, policy)  # a float with the default arguments
    return float(value)


def checkpoints(iterations: int) -> list[int]:
    """Iterations at which NashConv is measured: 1, 2, 5, 10, 20, 50, ... and the last."""
    points, scale = [], 1
    while scale <= iterations:
        points += [k * scale for k in (1, 2, 5) if k * scale <= iterations]
        scale *= 10
    return sorted({*points, iterations})


def solve(
    rules: str, iterations: int, out: str | Path, agents: Sequence[str] = (), progress: bool = True
) -> dict[str, Any]:
    """CFR+ on ``rules`` for ``iterations``, then the exact NashConv of ``agents``; writes the
    outputs listed in the module docstring into ``out`` and returns the summary."""
    from open_spiel.python.algorithms import cfr

    if rules not in SOLVABLE:
        raise ValueError(f"solve works on the small sets {SOLVABLE}, got {rules!r}")
    check_int("iterations", iterations, low=1)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    game = pyspiel.load_game(f"block_dominoes(preset={rules})")
    scale = mean_award(game)
    solver = cfr.CFRPlusSolver(game)
    curve: list[dict[str, float]] = []
    started = time.perf_counter()
    wanted = set(checkpoints(iterations))
    for iteration in range(1, iterations + 1):
        solver.evaluate_and_update_policy()
        if iteration in wanted:
            value = nash_conv(game, solver.average_policy())
            curve.append({"iteration": iteration, "nash_conv": value, "seconds": time.perf_counter() - started})
            if progress:
                print(
                    f"CFR+ iteration {iteration}: NashConv {value:.5f} ({100 * value / scale:.2f}% of the mean award)"
                )
    average = solver.average_policy()
    policy = {key: {a: float(p) for a, p in pairs if p > 0} for key, pairs in average.to_dict().items()}
    write_atomically(folder / "average_policy.json", json.dumps(policy, indent=0, sort_keys=True))
    _write_curve(folder, curve, rules, scale)
    rows = [{"agent": "CFR+ average policy", "nash_conv": curve[-1]["nash_conv"]}]
    for spec in agents:
        rows.append({"agent": spec, "nash_conv": nash_conv(game, AgentPolicy(spec, game))})
        if progress:
            print(f"{spec}: NashConv {rows[-1]['nash_conv']:.4f}")
    for row in rows:
        row["share_of_mean_award"] = row["nash_conv"] / scale
    _write_agents(folder, rows, rules, iterations, scale)
    summary = {"rules": rules, "iterations": iterations, "mean_award": scale, "curve": curve, "agents": rows}
    write_atomically(folder / "solve.json", json.dumps(summary, indent=2) + "\n")
    return summary


def _write_curve(folder: Path, curve: list[dict[str, float]], rules: str, scale: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    write_csv_atomically(folder / "nash_conv.csv", ["iteration", "nash_conv", "seconds"], curve)
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    ax.loglog([c["iteration"] for c in curve], [c["nash_conv"] for c in curve], marker="o", color="#2f7d4f")
    ax.axhline(0.01 * scale, color="grey", linestyle="--", label="1% of the mean award")
    ax.set_xlabel("CFR+ iterations")
    ax.set_ylabel("NashConv (points per round)")
    ax.set_title(f"CFR+ on block_dominoes(preset={rules})")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    save_atomically(folder / "nash_conv.png", lambda temporary: fig.savefig(temporary, dpi=110, format="png"))
    plt.close(fig)


def _write_agents(folder: Path, rows: list[dict[str, Any]], rules: str, iterations: int, scale: float) -> None:
    write_csv_atomically(folder / "agents.csv", ["agent", "nash_conv", "share_of_mean_award"], rows)
    lines = [
        f"Exact NashConv on `{rules}` (points per round; the mean award under uniform play is {scale:.3f}); "
        f"CFR+ after {iterations} iterations.",
        "",
        "| agent | NashConv | share of the mean award |",
        "|---|---:|---:|",
        *(f"| `{r['agent']}` | {r['nash_conv']:.4f} | {100 * r['share_of_mean_award']:.1f}% |" for r in rows),
    ]
    write_atomically(folder / "summary.md", "\n".join(lines) + "\n")
