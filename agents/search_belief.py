"""Inference from the other players' moves, for a search: which of its sampled deals explain
what the others did this round.

A plain determinized search deals the unseen tiles uniformly among the deals that respect the
public record (hand counts, voids shown by passes). But a player's choices say more than its
passes: an opponent who opened with a light tile probably held no heavy double, a partner who
kept following one suit probably holds more of it. With a model of the players (a trained
policy), each sampled deal is weighted by how likely the model makes the other seats' moves
in it, and the search's worlds are drawn by those weights.

The moves come from the seat's own observation: the "history" encoding lists every move of
the round in order with the seat that made it, for any number of players. Each sampled deal
is replayed from the round's start (every seat's hand now plus the tiles it has placed), and
each move of another seat is scored where it was made.
"""

from __future__ import annotations

import numpy as np

from block_env.agents.policy import PolicyAgent
from block_env.batched import BatchedGames
from block_env.observations import BatchEncoder
from block_env.rules import Rules
from block_env.tiles import ends_after, replay_ends

#: Each observed move's likelihood is (1 - FLOOR) * the model's probability + FLOOR / legal
#: moves: a model that is sure but wrong about one move must not rule a deal out.
FLOOR = 0.1


def move_log_likelihoods(
    rules: Rules,
    worlds: np.ndarray,
    moves: list[tuple[int, int]],
    model: PolicyAgent,
    encode: BatchEncoder,
) -> np.ndarray:
    """(W,) the log-likelihood of the other seats' placements in ``moves`` (the round so far,
    oldest first, as (relative seat, action id): what the "history" encoding lists) in each of
    ``worlds`` ((W, P, T) bool hands now, this seat 0) under ``model``'s policy (its action
    logits on the encoding ``encode`` writes, the one the model reads), each move's probability floored
    (:data:`FLOOR`). Passes are left out (a deal that respects the voids forces them), and so
    is an opening that the lead rules may force ("heaviest")."""
    if not moves:
        return np.zeros(len(worlds))
    ts = rules.tile_set
    num_worlds, num_seats, num_tiles = worlds.shape
    placed = np.zeros((num_seats, num_tiles), dtype=bool)
    for seat, action in moves:
        if action != ts.pass_action:
            placed[seat, action >> 1] = True
    leader = moves[0][0]
    games = BatchedGames(rules, num_worlds)
    games.set_positions(
        worlds | placed[None],  # each seat's hand at the round's start
        ends=None,
        played=np.zeros(num_tiles, dtype=bool),
        current=leader,
        leader=leader,
        passes=0,
        voids=np.zeros(num_seats, dtype=np.int64),
    )
    everyone = np.arange(num_worlds)
    free_opening = rules.first_lead == "lot" and rules.next_lead != "heaviest"
    observations, masks, explaining = [], [], []
    for j, (seat, action, ends, after) in enumerate(replay_ends(ts, moves)):
        if action != ts.pass_action and seat != 0 and (j > 0 or free_opening):
            observations.append(encode(games, everyone, np.full(num_worlds, seat)))
            masks.append(games.legal_mask(everyone))
            tile = action >> 1  # both sides of a tile explain the move when they give the same line
            explaining.append([a for a in (2 * tile, 2 * tile + 1) if ends_after(ts, ends, a) == after])
        games.step(np.full(num_worlds, action), everyone, check=False)
    if not observations:
        return np.zeros(num_worlds)
    num_turns = len(observations)
    # Rows world-major (world * num_turns + turn): one forward pass for every scored move.
    obs = np.stack(observations, axis=1).reshape(num_worlds * num_turns, -1)
    legal = np.stack(masks, axis=1).reshape(num_worlds * num_turns, -1)
    logits = np.where(legal, model.logits(obs), -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    explained = np.zeros_like(probs)
    for j, actions in enumerate(explaining):
        explained[j::num_turns, actions] = 1.0
    p_model = (probs * explained).sum(axis=1)
    legal_count = legal.sum(axis=1)
    legal_explained = (legal & (explained > 0)).any(axis=1)
    p = np.where(legal_explained, (1 - FLOOR) * p_model + FLOOR / legal_count, 1e-6)
    return np.log(p).reshape(num_worlds, num_turns).sum(axis=1)
