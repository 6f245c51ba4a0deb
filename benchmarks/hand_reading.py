"""How much a trained network knows about the hidden hands: positions from games the agent
plays against itself, and for each tile the observer cannot see, where it is (which other seat
holds it, or none: not dealt), guessed by read-outs fitted on the first 90% of the games'
positions and scored on the last 10% (nats a hidden tile; lower knows more):

- the hand counts alone: each unseen tile in each place as often as that place holds tiles;
- a linear read-out of the observation (what the public record and the own hand tell);
- a linear read-out of the network's last hidden layer (what the policy carries of it);
- with ``--deep``, two-layer read-outs (512 units a layer, four passes) of the observation, and
  of the observation with the round's whole move history (the "history" encoding) beside it:
  whether a small network fitted to these positions reads more from the observation, or from
  the moves in their order, than a linear read-out of the observation does (a lower bound on
  what is there to read, not the most any network could).

A search that infers the hands from the moves beats one that does not by a wide margin; a
policy whose hidden layer reads no better than the counts has not learned that inference.

    python benchmarks/hand_reading.py --agent pretrained:partnership_average --rules partnership \
        --positions 200000 [--deep] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from report_table import add_markdown_argument, show  # noqa: E402

from block_env import raw_env  # noqa: E402
from block_env.agents import make_agent  # noqa: E402
from block_env.agents.policy import PolicyAgent  # noqa: E402
from block_env.observations import Layout, layout_for  # noqa: E402

#: Units in each layer of the ``--deep`` read-outs.
DEEP_UNITS = 512


def self_play_positions(
    agent: PolicyAgent, preset: str, count: int, seed: int, extra_encoding: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``count`` positions (every seat's turn, in game order) from rounds the agent plays at
    every seat (deal seeds ``seed``, ``seed + 1``, ...): its observations, each tile's place
    (:func:`~block_env.training.teaching.tile_places`: the other seat, relative, that holds it,
    from 0; n - 1: none) and, with ``extra_encoding``, the same positions in that encoding
    (None without)."""
    import torch

    from block_env.training.teaching import tile_places

    kept = []  # each observation with the other seats' hands after it, as teacher decisions keep them
    # The extra encoding (the move history: thousands of values a position) filled in place.
    extra = (
        None if extra_encoding is None else np.zeros((count, layout_for(agent.rules, extra_encoding).size), np.float32)
    )
    deal, env = seed, raw_env(preset)  # one env, reset for each deal
    while len(kept) < count:
        env.reset(seed=deal)
        deal += 1
        while not env.episode_over and len(kept) < count:
            seat = env.agent_selection
            obs = env.observe(seat, agent.observation)
            if extra is not None:
                extra[len(kept)] = env.observe(seat, extra_encoding)["observation"]
            kept.append(np.concatenate([obs["observation"], env.hidden_hands(seat)]))
            env.step(agent.act(obs))
    rows = np.asarray(kept, dtype=np.float32)
    width = layout_for(agent.rules, agent.observation).size
    places = tile_places(torch.as_tensor(rows), width, agent.rules.num_players - 1).numpy()
    return rows[:, :width], places, extra


def read_out_loss(
    features: np.ndarray, places: np.ndarray, unseen: np.ndarray, cut: int, seed: int, hidden_units: int = 0
) -> float:
    """A read-out (softmax over the places, per tile) fitted by cross-entropy on rows before
    ``cut`` (three passes of Adam in batches of 512), its mean loss over the unseen tiles of the
    rest: linear, or with ``hidden_units``, two ReLU layers of that many units (four passes in
    batches of 1,024, a smaller step)."""
    import torch

    torch.manual_seed(seed)
    tiles, classes = places.shape[1], int(places.max()) + 1
    x, y, m = torch.as_tensor(features), torch.as_tensor(places), torch.as_tensor(unseen)
    model: torch.nn.Module = torch.nn.Linear(x.shape[1], classes * tiles)
    if hidden_units:
        model = torch.nn.Sequential(
            torch.nn.Linear(x.shape[1], hidden_units),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_units, hidden_units),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_units, classes * tiles),
        )
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4 if hidden_units else 1e-3)

    def loss(rows: torch.Tensor) -> torch.Tensor:
        per_tile = torch.nn.functional.cross_entropy(
            model(x[rows]).view(len(rows), classes, tiles), y[rows], reduction="none"
        )
        return (per_tile * m[rows]).sum() / m[rows].sum()

    for _ in range(4 if hidden_units else 3):
        for rows in torch.randperm(cut).split(1024 if hidden_units else 512):
            optimizer.zero_grad()
            loss(rows).backward()
            optimizer.step()
    with torch.no_grad():
        return float(loss(torch.arange(cut, len(x))))


def counts_loss(observations: np.ndarray, places: np.ndarray, unseen: np.ndarray, layout: Layout, cut: int) -> float:
    """Each unseen tile in each place in proportion to the tiles that place holds (the other
    seats' hand counts, and the tiles not dealt), scored on the rows from ``cut``."""
    held = observations[:, layout.slices["hand_counts"]][:, 1:]  # the other seats, relative
    undealt = np.clip(unseen.sum(1) - held.sum(1), 0, None)
    share = np.concatenate([held, undealt[:, None]], 1) / unseen.sum(1, keepdims=True).clip(min=1)
    chance = np.take_along_axis(share, places, 1)
    rows = slice(cut, None)
    return float(-(np.log(np.clip(chance[rows], 1e-12, None)) * unseen[rows]).sum() / unseen[rows].sum())


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", default="pretrained:partnership_average")
    parser.add_argument("--rules", default="partnership")
    parser.add_argument("--positions", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--deep", action="store_true", help="add two-layer read-outs of the observation and of the move history"
    )
    add_markdown_argument(parser)
    args = parser.parse_args(argv)
    if args.positions < 10:
        parser.error(f"--positions must be at least 10 (a tenth is held out), got {args.positions}")
    try:
        agent = make_agent(args.agent, args.rules, seed=args.seed)
    except ValueError as e:
        parser.error(f"--agent {args.agent!r} with --rules {args.rules!r}: {e}")
    if not isinstance(agent, PolicyAgent) or agent.observation == "history":
        parser.error(f"--agent must be a trained agent reading 'vector' or 'tracked', got {args.agent!r}")
    observations, places, history = self_play_positions(
        agent, args.rules, args.positions, args.seed, extra_encoding="history" if args.deep else None
    )
    layout = layout_for(agent.rules, agent.observation)
    unseen = 1.0 - observations[:, layout.slices["hand"]] - observations[:, layout.slices["played"]]
    cut = round(0.9 * len(observations))
    figures = {
        "the hand counts alone": counts_loss(observations, places, unseen, layout, cut),
        "a linear read-out of the observation": read_out_loss(observations, places, unseen, cut, args.seed),
        f"a linear read-out of {args.agent}'s last hidden layer": read_out_loss(
            agent.last_hidden_layer(observations), places, unseen, cut, args.seed
        ),
    }
    if history is not None:
        figures["a two-layer read-out of the observation"] = read_out_loss(
            observations, places, unseen, cut, args.seed, hidden_units=DEEP_UNITS
        )
        both = np.concatenate([observations, history], axis=1)
        del history  # the widest arrays: one copy at a time
        figures["a two-layer read-out of the observation and the move history"] = read_out_loss(
            both, places, unseen, cut, args.seed, hidden_units=DEEP_UNITS
        )
    table = [
        f"Where the hidden tiles are, on {len(observations) - cut:,} held-out positions of {args.agent} playing "
        f"itself ({args.rules}; read-outs fitted on {cut:,}):",
        "",
        "| guessed from | nats per hidden tile |",
        "|---|---:|",
        *(f"| {name} | {loss:.3f} |" for name, loss in figures.items()),
    ]
    show("\n".join(table), args.markdown)
    return figures


if __name__ == "__main__":
    main()
