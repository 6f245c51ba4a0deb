"""How noisy a teacher's moves are: on positions from games search plays against itself, how
often a search teacher chooses the same move twice (two seeds: its own sampled deals differ)
and how often each student chooses the teacher's move. A student imitates the teacher's
moves one label per decision, so where the teacher disagrees with itself the labels are noise;
a student that always chose the teacher's most likely move would match any one run of it at
least as often as two runs match each other.

    python benchmarks/teacher_agreement.py --rules partnership --positions 200 \
        --teacher "search:prior=pretrained:partnership_vector,playout=policy,belief=prior,confidence=0" \
        --students pretrained:partnership_average [--markdown out.md]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the arena's workers use

import numpy as np  # noqa: E402
from report_table import add_markdown_argument, show  # noqa: E402

from block_env import raw_env  # noqa: E402
from block_env.agents import make_agent  # noqa: E402
from block_env.rules import resolve_rules  # noqa: E402

#: Plain search plays the games the positions are drawn from (a cheap, strong player).
PLAYER = "search:worlds=32"


def positions(preset: str, count: int, seed: int) -> list[dict[str, dict]]:
    """``count`` decisions with two or more legal moves from games of :data:`PLAYER` at every
    seat (deal seeds ``seed``, ``seed + 1``, ...), each observed in every encoding an agent may read."""
    player = make_agent(PLAYER, preset, seed=seed)
    found: list[dict[str, dict]] = []
    deal = seed
    while len(found) < count:
        env = raw_env(preset)
        env.reset(seed=deal)
        deal += 1
        while not env.episode_over:
            seat = env.agent_selection
            seen = {e: env.observe(seat, e) for e in ("vector", "history", "tracked")}
            if seen["vector"]["action_mask"].sum() > 1:
                found.append(seen)
            env.step(player.act(seen[player.observation]))
    return found[:count]


def agreement(preset: str, teacher: str, students: list[str], count: int, seed: int) -> list[tuple[str, float]]:
    """(row name, share of positions) for the teacher against itself and each student against it."""
    rules = resolve_rules(preset)
    found = positions(preset, count, seed)
    first, second = (make_agent(teacher, rules, seed=seed + k) for k in (1, 2))
    moves = [np.array([agent.act(p[agent.observation]) for p in found]) for agent in (first, second)]
    rows = [("teacher, two seeds", float((moves[0] == moves[1]).mean()))]
    for spec in students:
        student = make_agent(spec, rules, seed=seed)
        chosen = np.array([student.act(p[student.observation]) for p in found])
        rows.append((f"{spec}, the teacher's move", float(np.mean([(chosen == m).mean() for m in moves]))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rules", default="standard")
    parser.add_argument("--teacher", required=True, help="a search agent's spec")
    parser.add_argument("--students", nargs="*", default=[], help="agent specs compared with the teacher")
    parser.add_argument("--positions", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1000)
    add_markdown_argument(parser)
    args = parser.parse_args()
    if args.positions < 1:
        parser.error(f"--positions must be a positive int, got {args.positions}")
    rows = agreement(args.rules, args.teacher, args.students, args.positions, args.seed)
    lines = [
        f"Agreement on {args.positions} decisions (two or more legal moves) of `{PLAYER}` games, "
        f"rules `{args.rules}`, teacher `{args.teacher}`:",
        "",
        "| who | same move |",
        "|---|---:|",
        *(f"| {name} | {share:.1%} |" for name, share in rows),
    ]
    show("\n".join(lines), args.markdown)


if __name__ == "__main__":
    main()
