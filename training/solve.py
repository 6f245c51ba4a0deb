"""Exact methods on the small two-player sets: CFR+ to an approximate Nash equilibrium, and the
exact NashConv of any agent, over the game tree built from the engine
(:mod:`block_env.game_tree`, :mod:`block_env.cfr`; docs/solver.md).

``block-dominoes solve --rules medium --iterations 200 --out runs/solve-medium`` runs
:func:`solve`: CFR+ (or discounted CFR) on one round of those rules, the NashConv of its
average policy at log-spaced iterations (``nash_conv.csv`` and ``nash_conv.png``), the average
policy (``policy.npz``, what the ``solved:PATH`` agent plays; also ``average_policy.json``,
information state -> action probabilities, on trees of up to 100,000 information states),
and, with ``--agents``, each agent's exact NashConv beside it (``agents.csv``, ``summary.md``).
``solve.json`` holds all of it with the tree's size, its memory and the time per iteration.

NashConv is the sum over the two seats of what a best response gains against the other's
policy (0 at a Nash equilibrium), in points per round; the tables also give it as a share of
the mean award of a round (the mean points a round pays, under uniform random play).
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from block_env.agents import make_agent, parse_spec
from block_env.agents.policy import check_new_folder
from block_env.agents.solved import SolvedAgent
from block_env.cfr import ALGORITHMS, POLICY_FILE, CFRSolver, mean_award, nash_conv, uniform_policy, write_policy
from block_env.files import save_atomically, write_atomically, write_csv_atomically
from block_env.game_tree import SEATS, GameTree, build_tree, check_solvable
from block_env.observations import encoder
from block_env.rules import Rules, resolve_rules
from block_env.validation import check_int

#: Trees with more information states than this get no ``average_policy.json`` (``policy.npz`` only).
JSON_POLICY_LIMIT = 100_000
#: How each algorithm's average policy is named in the tables.
LABELS = {"cfr+": "CFR+ average policy", "dcfr": "DCFR average policy"}


def checkpoints(iterations: int) -> list[int]:
    """Iterations at which NashConv is measured: 1, 2, 5, 10, 20, 50, ... and the last."""
    points, scale = [], 1
    while scale <= iterations:
        points += [k * scale for k in (1, 2, 5) if k * scale <= iterations]
        scale *= 10
    return sorted({*points, iterations})


def solve(
    rules: Rules | str,
    iterations: int,
    out: str | Path,
    agents: Sequence[str] = (),
    progress: bool = True,
    algorithm: str = "cfr+",
    until: float | None = None,
) -> dict[str, Any]:
    """CFR+ (``algorithm="dcfr"``: discounted CFR) on one round of ``rules`` for
    ``iterations`` (or until a checkpoint's NashConv is at most ``until`` times the mean
    award), then the exact NashConv of ``agents``; writes the outputs listed in the module
    docstring into ``out`` and returns the summary."""
    resolved = resolve_rules(rules)
    check_int("iterations", iterations, low=1)
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    if until is not None and not (isinstance(until, float | int) and 0 < until < 1):
        raise ValueError(f"until is a share of the mean award between 0 and 1, got {until!r}")
    folder = Path(out)
    check_solvable(resolved)  # a set too large to lay out is refused before anything is written
    check_new_folder(folder, "a solve writes its policy and tables to a new folder: choose another --out")
    for spec in agents:  # an agent that cannot play these rules (e.g. trained on another set) fails before the solve
        name, options = parse_spec(spec)
        if name == "human":
            raise ValueError(
                "a solve's agents cannot be 'human': each is asked for its policy at every information state"
            )
        if name == "solved" and Path(options["path"]).resolve() in {folder.resolve(), (folder / POLICY_FILE).resolve()}:
            continue  # the policy this solve writes
        make_agent(spec, resolved)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tree = build_tree(resolved)
    built = time.perf_counter() - started
    scale = mean_award(tree)
    solver = CFRSolver(tree, algorithm)
    if progress:
        print(
            f"game tree: {tree.num_nodes:,} histories, {tree.num_infostates:,} information states, "
            f"{(tree.nbytes + solver.nbytes) / 2**20:.0f} MiB, built in {built:.1f} s"
        )
    curve: list[dict[str, float]] = []
    solving = 0.0  # seconds in iterations alone (NashConv checkpoints apart)
    wanted = set(checkpoints(iterations))
    for iteration in range(1, iterations + 1):
        tick = time.perf_counter()
        solver.iterate()
        solving += time.perf_counter() - tick
        if iteration in wanted or (until is not None and iteration % 10 == 0):
            value = nash_conv(tree, solver.average_policy())
            curve.append({"iteration": iteration, "nash_conv": value, "seconds": time.perf_counter() - started})
            if progress:
                print(
                    f"{algorithm} iteration {iteration}: NashConv {value:.5f} "
                    f"({100 * value / scale:.2f}% of the mean award), {solving / iteration * 1000:.1f} ms per iteration"
                )
            if until is not None and value <= until * scale:
                break
    average = solver.average_policy()
    write_policy(folder / POLICY_FILE, tree, average)
    if tree.num_infostates <= JSON_POLICY_LIMIT:
        write_atomically(folder / "average_policy.json", json.dumps(readable_policy(tree, average), indent=0))
    _write_curve(folder, curve, resolved, scale, algorithm)
    rows = [{"agent": LABELS[algorithm], "nash_conv": curve[-1]["nash_conv"]}]
    for spec in agents:
        tick = time.perf_counter()
        rows.append({"agent": spec, "nash_conv": nash_conv(tree, agent_policy(tree, spec))})
        if progress:
            print(f"{spec}: NashConv {rows[-1]['nash_conv']:.4f} ({time.perf_counter() - tick:.0f} s)")
    for row in rows:
        row["share_of_mean_award"] = row["nash_conv"] / scale
    done = solver.iteration
    _write_agents(folder, rows, resolved, algorithm, done, scale)
    summary = {
        "rules": resolved.as_dict(),
        "algorithm": algorithm,
        "iterations": done,
        "mean_award": scale,
        "histories": tree.num_nodes,
        "information_states": tree.num_infostates,
        "memory_bytes": tree.nbytes + solver.nbytes,
        "build_seconds": built,
        "seconds_per_iteration": solving / done,
        "curve": curve,
        "agents": rows,
    }
    write_atomically(folder / "solve.json", json.dumps(summary, indent=2) + "\n")
    return summary


def readable_policy(tree: GameTree, policy: np.ndarray) -> dict[str, dict[str, float]]:
    """The policy keyed by what each information state's seat knows, in words."""
    ts = tree.rules.tile_set
    moves, leaders = tree.info_moves()
    out: dict[str, dict[str, float]] = {}
    for info in range(tree.num_infostates):
        played = ", ".join(ts.describe_action(int(a)) for a in moves[info] if a >= 0)
        dealt = " ".join(f"[{a}|{b}]" for a, b in ts.tiles_of(int(tree.info_hand[info])))
        key = f"seat {tree.info_seat[info]}; dealt {dealt}; seat {leaders[info]} led; moves: {played or '-'}"
        start, stop = tree.info_offset[info], tree.info_offset[info + 1]
        out[key] = {
            ts.describe_action(int(a)): float(p)
            for a, p in zip(tree.slot_action[start:stop], policy[start:stop])
            if p > 0
        }
    return out


def _write_curve(folder: Path, curve: list[dict[str, float]], rules: Rules, scale: float, algorithm: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    write_csv_atomically(folder / "nash_conv.csv", ["iteration", "nash_conv", "seconds"], curve)
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    ax.loglog([c["iteration"] for c in curve], [c["nash_conv"] for c in curve], marker="o", color="#2f7d4f")
    ax.axhline(0.01 * scale, color="grey", linestyle="--", label="1% of the mean award")
    ax.set_xlabel(f"{algorithm} iterations")
    ax.set_ylabel("NashConv (points per round)")
    ax.set_title(f"{algorithm} on {_describe(rules)}")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    save_atomically(folder / "nash_conv.png", lambda temporary: fig.savefig(temporary, dpi=110, format="png"))
    plt.close(fig)


def _describe(rules: Rules) -> str:
    return f"double-{rules.max_pip}, {rules.num_players} × {rules.resolved_hand_size} tiles"


def _write_agents(
    folder: Path, rows: list[dict[str, Any]], rules: Rules, algorithm: str, iterations: int, scale: float
) -> None:
    write_csv_atomically(folder / "agents.csv", ["agent", "nash_conv", "share_of_mean_award"], rows)
    lines = [
        f"Exact NashConv on {_describe(rules)} (points per round; the mean award under uniform play is "
        f"{scale:.3f}); {algorithm} after {iterations} iterations.",
        "",
        "| agent | NashConv | share of the mean award |",
        "|---|---:|---:|",
        *(f"| `{r['agent']}` | {r['nash_conv']:.4f} | {100 * r['share_of_mean_award']:.1f}% |" for r in rows),
    ]
    write_atomically(folder / "summary.md", "\n".join(lines) + "\n")


def agent_policy(tree: GameTree, spec: str, seed_of: Callable[[int], int] | None = None) -> np.ndarray:
    """``spec``'s policy over ``tree``'s slots (both seats), for exact best responses.

    ``random`` is uniform and ``solved:PATH`` its own probabilities; any other agent puts
    probability 1 on the move it chooses, seeded per information state (a search is one
    fixed policy), at each information state its own moves can reach; elsewhere the policy
    stays uniform (no best response or value reads it there). ``seed_of(info)`` gives the
    seed (by default a checksum of the information state's seat, hand, leader and moves).
    """
    policy = uniform_policy(tree)
    if spec == "random":
        return policy
    agent = make_agent(spec, tree.rules)
    encode = encoder(tree.rules, agent.observation)
    seed_of = seed_of or (lambda info: zlib.crc32(repr(tree.info_key(info)).encode()))
    offset = tree.info_offset
    for seat in range(SEATS):
        own = np.zeros(tree.num_nodes)
        own[: tree.num_roots] = 1.0
        for level in range(len(tree.level_start) - 1):
            start, stop = int(tree.level_start[level]), int(tree.level_start[level + 1])
            nodes = np.arange(start, stop)
            deciding = nodes[(tree.player[nodes] == seat) & (own[nodes] > 0) & (tree.num_children[nodes] > 1)]
            for info in np.unique(tree.infostate[deciding]):
                rnd = tree.round_at(int(tree.info_node[info]))
                mask = np.zeros(tree.rules.tile_set.num_actions, np.int8)
                mask[rnd.legal_actions()] = 1
                obs = {"observation": encode(rnd, seat, [0] * SEATS), "action_mask": mask}
                actions = tree.info_actions(info)
                if isinstance(agent, SolvedAgent):
                    chosen = agent.probabilities(obs)
                    policy[offset[info] : offset[info + 1]] = [chosen[int(a)] for a in actions]
                else:
                    agent.reset(seed=seed_of(int(info)))
                    move = int(agent.act(obs))
                    policy[offset[info] : offset[info + 1]] = actions == move
            parents = nodes[tree.num_children[nodes] > 0]
            for j in range(int(tree.num_children[parents].max(initial=0))):
                has = parents[tree.num_children[parents] > j]
                child = tree.first_child[has] + j
                share = np.where(tree.player[has] == seat, policy[offset[tree.infostate[has]] + j], 1.0)
                own[child] = own[has] * share
    return policy
