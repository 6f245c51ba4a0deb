"""Continue a scored agent's move scorer on more teacher decisions, its network frozen, and
write the agent with the refitted scorer to OUT: python continue_scorer.py AGENT_FOLDER OUT
PASSES STEP DECISIONS.npz ... (the last tenth of each file held out, the pass with the lowest
held-out loss kept, the step falling linearly from STEP over the passes, seed 38 for the
batches). It prints the held-out figures before the fit and after each pass, one JSON line
each; where no pass lowers the held-out loss it writes nothing.

It repeats the package's ``block_env.training.move_scorer.fit_move_scorer`` but for its start
(the agent's own scorer, not a new one), as that function fits only an agent without a scorer."""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch

from block_env.agents.move_scorer import MoveScorer, scored_moves
from block_env.agents.policy import PolicyAgent
from block_env.observations import layout_for
from block_env.rules import Rules
from block_env.seeding import derive_seed
from block_env.training.move_scorer import load_values
from block_env.training.teaching import held_out_cut, move_value_targets, with_mirrored

if len(sys.argv) < 6:
    sys.exit(__doc__)
folder, out, passes, step = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
if out.exists():
    sys.exit(f"{out} already exists")
if passes < 1 or not step > 0:
    sys.exit(f"PASSES must be 1 or more and STEP above 0, got {sys.argv[3]!r} and {sys.argv[4]!r}")
metadata = json.loads((folder / "agent.json").read_text())
rules, observation = Rules.from_dict(metadata["rules"]), metadata["observation"]
agent = PolicyAgent(rules, path=folder, mirror=False, endgame=False)
start, agent.move_scorer = agent.move_scorer, None  # the frozen logits are the network's alone
if start is None:
    sys.exit(f"{folder} has no move scorer to continue")
sets = [load_values(path, rules, observation) for path in sys.argv[5:]]
cuts = [held_out_cut(len(data["masks"]), 0.1) for data in sets]
fit = {key: np.concatenate([data[key][:cut] for data, cut in zip(sets, cuts)]) for key in sets[0]}
held = {key: np.concatenate([data[key][cut:] for data, cut in zip(sets, cuts)]) for key in sets[0]}
actions = rules.tile_set.num_actions

fit_targets = move_value_targets(np.where(fit["masks"], fit["values"], np.nan), 1.0)
fit_obs, fit_masks, fit_targets, _ = with_mirrored(
    layout_for(rules, observation),
    rules.tile_set,
    fit["observations"],
    fit["masks"],
    fit_targets,
    np.zeros(len(fit_targets), np.float32),
)
held_targets = move_value_targets(np.where(held["masks"], held["values"], np.nan), 1.0)
fit_moves, fit_features = scored_moves(rules, observation, fit_obs)
held_moves, held_features = scored_moves(rules, observation, held["observations"])


def frozen(observations: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    chunks = range(0, len(observations), 8192)
    hidden = np.concatenate([agent.last_hidden_layer(observations[i : i + 8192]) for i in chunks])
    logits = np.concatenate([agent.logits(observations[i : i + 8192]) for i in chunks])
    return torch.from_numpy(hidden), torch.from_numpy(logits)


fit_hidden, fit_base = frozen(fit_obs)
held_hidden, held_base = frozen(held["observations"])
weights = {name: torch.tensor(array, dtype=torch.float32, requires_grad=True) for name, array in start.arrays().items()}
optimizer = torch.optim.Adam(list(weights.values()), lr=step)
fit_first = np.searchsorted(fit_moves[:, 0], np.arange(len(fit_obs) + 1))


def scored(
    hidden: torch.Tensor, base: torch.Tensor, moves: np.ndarray, features: np.ndarray, rows: np.ndarray
) -> torch.Tensor:
    inner = torch.tanh(
        (hidden @ weights["hidden_weight"])[torch.from_numpy(rows)]
        + torch.from_numpy(features) @ weights["move_weight"]
        + weights["bias"]
    )
    scores = inner @ weights["out_weight"] + weights["out_bias"]
    where = torch.from_numpy(rows * actions + 2 * moves[:, 1] + moves[:, 2])
    return base.reshape(-1).index_add(0, where, scores).reshape(base.shape)


def held_out(logits: torch.Tensor) -> dict[str, float]:
    """Loss, the share of the teacher's best moves chosen, and the points a decision given up."""
    masked = logits.masked_fill(~torch.from_numpy(held["masks"]), -1e9)
    loss = float(-(torch.from_numpy(held_targets) * torch.log_softmax(masked, 1)).sum(1).mean())
    values = held["values"]
    chosen = values[np.arange(len(values)), masked.argmax(1).numpy()]
    best = np.where(held["masks"], values, -np.inf).max(1)
    return {"loss": loss, "best_move": float((chosen >= best).mean()), "given_up": float((best - chosen).mean())}


with torch.no_grad():
    report = {
        "fitted_rows": len(fit_obs),
        "held_out_decisions": len(held["masks"]),
        "network_alone": held_out(held_base),
    }
    report["start"] = held_out(scored(held_hidden, held_base, held_moves, held_features, held_moves[:, 0]))
print(json.dumps(report), flush=True)
kept = (report["start"]["loss"], 0, {name: tensor.detach().clone() for name, tensor in weights.items()})
order_generator = np.random.default_rng(derive_seed(38, "cont"))
for done in range(passes):
    for group in optimizer.param_groups:
        group["lr"] = step * (1 - done / passes)
    order = order_generator.permutation(len(fit_obs))
    for batch in range(len(fit_obs) // 512 or 1):
        rows = np.sort(order[batch * 512 : (batch + 1) * 512])
        starts, counts = fit_first[rows], fit_first[rows + 1] - fit_first[rows]
        local = np.repeat(np.arange(len(rows)), counts)
        picked = starts[local] + np.arange(len(local)) - np.repeat(np.cumsum(counts) - counts, counts)
        logits = scored(fit_hidden[rows], fit_base[rows], fit_moves[picked], fit_features[picked], local)
        masked = logits.masked_fill(~torch.from_numpy(fit_masks[rows]), -1e9)
        loss = -(torch.from_numpy(fit_targets[rows]) * torch.log_softmax(masked, 1)).sum(1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        figures = held_out(scored(held_hidden, held_base, held_moves, held_features, held_moves[:, 0]))
    print(json.dumps({"pass": done + 1, **figures}), flush=True)
    if figures["loss"] < kept[0]:
        kept = (figures["loss"], done + 1, {name: tensor.detach().clone() for name, tensor in weights.items()})
print(json.dumps({"kept_pass": kept[1]}))
if kept[1]:
    shutil.copytree(folder, out)
    MoveScorer(**{name: tensor.numpy().astype(np.float32) for name, tensor in kept[2].items()}).save(out)
