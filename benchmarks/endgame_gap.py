"""Where in a round an agent loses to a teacher: on a training run's kept teacher decisions
(``teacher_decisions.npz`` of a run with ``pretrain.targets: values``, which keeps every legal
move's searched value), for each count of tiles the deciding seat holds, how often each agent
chooses the teacher's best move and how many points a decision its move is worth less than that
best one, by the teacher's own values.

    python benchmarks/endgame_gap.py --decisions runs/partnership_many_worlds_holdout/teacher_decisions.npz \
        --agents pretrained:partnership_average pretrained:partnership search [--per-hand 600] \
        [--held-out 0.1] [--markdown out.md]

Agents read the decisions' encoding ("tracked" or "vector" runs) or one it holds; the teacher's
best is the highest of its noisy estimates, so every agent's loss is read against the same
slightly high mark. ``--held-out SHARE`` reads only the last SHARE of the decisions: those a fit
with ``pretrain.holdout: SHARE`` never saw, where a fitted network's choices are measured fairly.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the arena's workers use

import numpy as np  # noqa: E402
from report_table import add_markdown_argument, show  # noqa: E402

from block_env.agents import make_agent  # noqa: E402
from block_env.observations import layout_for  # noqa: E402
from block_env.rules import PRESETS, Rules  # noqa: E402
from block_env.training.teaching import held_out_cut  # noqa: E402


def gaps(
    path: str, specs: list[str], per_hand: int, held_out: float = 0.0
) -> tuple[list[str], dict[int, int], dict[tuple[int, str], tuple[float, float]]]:
    """(table title, decisions per hand size, (hand size, spec) -> (share of teacher's best
    moves, points lost a decision)) on the first ``per_hand`` decisions of each hand size,
    among the last ``held_out`` share of them (:func:`held_out_cut`) when it is above 0."""
    kept = np.load(path)
    about = json.loads(str(kept["about"]))
    rules, encoding = Rules.from_dict(about["rules"]), about["observation"]
    layout = layout_for(rules, encoding)
    observations = kept["observations"][:, : layout.size]  # an asymmetric critic's runs append the hidden hands
    masks, values = kept["masks"], np.nan_to_num(kept["values"], nan=-np.inf)
    if held_out:
        first = held_out_cut(len(masks), held_out)
        if first == len(masks):
            raise ValueError(f"the last {held_out:g} of {len(masks)} decisions holds none")
        observations, masks, values = observations[first:], masks[first:], values[first:]
    held = observations[:, layout.offset("hand_counts")].astype(int)  # the observer's
    best = values.max(axis=1)
    counts: dict[int, int] = {}
    figures: dict[tuple[int, str], tuple[float, float]] = {}
    agents = [make_agent(spec, rules, seed=0) for spec in specs]
    for hand in sorted(set(held.tolist())):
        rows = np.flatnonzero((held == hand) & (masks.sum(axis=1) > 1))[:per_hand]
        counts[hand] = len(rows)
        for spec, agent in zip(specs, agents):
            columns = layout_for(rules, agent.observation).columns_in(layout)
            chosen = np.array(
                [
                    agent.act({"observation": observations[r][columns], "action_mask": masks[r].astype(np.int8)})
                    for r in rows
                ]
            )
            picked = values[rows, chosen]
            figures[hand, spec] = (float((picked == best[rows]).mean()), float((best[rows] - picked).mean()))
    preset = next((name for name, preset in PRESETS.items() if preset == rules), repr(rules))
    part = f", the last {held_out:g} of its decisions" if held_out else ""
    title = [f"`{path}`{part}: teacher `{about['teacher']}`, rules `{preset}`"]
    return title, counts, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", required=True, help="a teacher_decisions.npz kept with move values")
    parser.add_argument("--agents", nargs="+", required=True, help="agent specs to compare")
    parser.add_argument("--per-hand", type=int, default=600, help="decisions per hand size (the first ones)")
    parser.add_argument(
        "--held-out", type=float, default=0.0, help="read only this last share of the decisions (pretrain.holdout's)"
    )
    add_markdown_argument(parser)
    args = parser.parse_args()
    if args.per_hand < 1:
        parser.error(f"--per-hand must be a positive int, got {args.per_hand}")
    if not 0 <= args.held_out < 1:
        parser.error(f"--held-out must be a share in 0..1 (1 excluded), got {args.held_out}")
    title, counts, figures = gaps(args.decisions, args.agents, args.per_hand, args.held_out)
    lines = [
        *title,
        "",
        "Per tiles held by the deciding seat: the share of decisions where each agent chose the teacher's best move, "
        "and the points a decision its move is worth less than that best one (the teacher's values).",
        "",
        "| tiles held | decisions | " + " | ".join(f"`{s}`" for s in args.agents) + " |",
        "|---:|---:|" + "---:|" * len(args.agents),
    ]
    for hand, count in counts.items():
        cells = [f"{figures[hand, s][0]:.1%}, −{figures[hand, s][1]:.2f}" for s in args.agents]
        lines.append(f"| {hand} | {count} | " + " | ".join(cells) + " |")
    show("\n".join(lines), args.markdown)


if __name__ == "__main__":
    main()
