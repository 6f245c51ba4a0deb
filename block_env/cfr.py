"""CFR+ (and discounted CFR) and exact best responses over a :class:`~block_env.game_tree.GameTree`.

Each iteration is two sweeps per seat over the flat tree, compiled with numba: one down the
tree (each node's reach: the chance of its deal and lead times the probabilities of the moves
that led to it, split into the updating seat's own and everything else), one up it (each
node's value to seat 0 under the current policy, and each of the updating seat's actions'
counterfactual regret, added into its information state's slots).

``CFRSolver(tree, "cfr+")`` is OpenSpiel's ``CFRPlusSolver`` step for step: alternating
updates (seat 0, then seat 1 against seat 0's new policy), regret matching+, and the average
policy weighted by the iteration number; after the same number of iterations the two average
policies agree to rounding. ``"dcfr"`` is discounted CFR (Brown and Sandholm 2019, alpha 1.5,
beta 0, gamma 2): the same sweeps, with positive regrets discounted by t^1.5 / (t^1.5 + 1),
negative ones halved, and the average weighted by t^2.

A policy is an array over the tree's slots (``info_offset``): the probability of each action
of each information state. :func:`best_response` gives a seat's exact best response to the
other seat's policy: the tree is swept up one depth at a time, and at each information state
of the responding seat every action's value, summed over the state's nodes weighted by their
reach, picks the best action. :func:`nash_conv` adds the two best responses' gains.

Examples:
    >>> from block_env.game_tree import build_tree
    >>> from block_env.rules import Rules
    >>> solver = CFRSolver(build_tree(Rules.preset("tiny")))
    >>> for _ in range(200):
    ...     solver.iterate()
    >>> nash_conv(solver.tree, solver.average_policy()) < 1e-3
    True
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from block_env.files import save_atomically
from block_env.game_tree import SEATS, GameTree
from block_env.rules import Rules

ALGORITHMS = ("cfr+", "dcfr")
#: Discounted CFR's exponents (positive regrets, negative regrets, average policy).
DCFR_ALPHA, DCFR_BETA, DCFR_GAMMA = 1.5, 0.0, 2.0


@njit(cache=True)
def _reach(
    player, infostate, first_child, num_children, offset, policy, root_probability, seat, own, other
):  # pragma: no cover - compiled
    """Each node's reach, split into ``seat``'s own moves' share and everything else's."""
    for node in range(len(root_probability)):
        own[node] = 1.0
        other[node] = root_probability[node]
    for node in range(len(player)):
        count = num_children[node]
        if count == 0:
            continue
        base = offset[infostate[node]]
        child = first_child[node]
        mover = player[node]
        for j in range(count):
            p = policy[base + j]
            if mover == seat:
                own[child + j] = own[node] * p
                other[child + j] = other[node]
            else:
                own[child + j] = own[node]
                other[child + j] = other[node] * p


@njit(cache=True)
def _regrets(
    player,
    infostate,
    first_child,
    num_children,
    offset,
    value,
    policy,
    seat,
    own,
    other,
    node_value,
    regret,
    average,
    weight,
):  # pragma: no cover - compiled
    """Node values (to seat 0) up the tree; ``seat``'s counterfactual regrets and its
    reach-weighted policy (times ``weight``) added into its slots."""
    sign = 1.0 if seat == 0 else -1.0
    for node in range(len(player) - 1, -1, -1):
        count = num_children[node]
        if count == 0:
            node_value[node] = value[node]
            continue
        base = offset[infostate[node]]
        child = first_child[node]
        total = 0.0
        for j in range(count):
            total += policy[base + j] * node_value[child + j]
        node_value[node] = total
        if player[node] != seat:
            continue
        reach = other[node]
        mine = own[node] * weight
        for j in range(count):
            regret[base + j] += reach * sign * (node_value[child + j] - total)
            average[base + j] += mine * policy[base + j]


@njit(cache=True)
def _match_regrets(
    info_seat, offset, regret, policy, seat, plus, positive_scale, negative_scale
):  # pragma: no cover - compiled
    """``seat``'s new policy by regret matching (regrets floored at 0 first under ``plus``,
    else positive and negative regrets scaled as discounted CFR does)."""
    for info in range(len(info_seat)):
        if info_seat[info] != seat:
            continue
        start, stop = offset[info], offset[info + 1]
        total = 0.0
        for k in range(start, stop):
            r = regret[k]
            if plus:
                if r < 0.0:
                    r = 0.0
            elif r > 0.0:
                r *= positive_scale
            else:
                r *= negative_scale
            regret[k] = r
            if r > 0.0:
                total += r
        for k in range(start, stop):
            if total > 0.0:
                policy[k] = regret[k] / total if regret[k] > 0.0 else 0.0
            else:
                policy[k] = 1.0 / (stop - start)


@njit(cache=True)
def _best_response(
    player,
    infostate,
    first_child,
    num_children,
    offset,
    value,
    level_start,
    policy,
    seat,
    other,
    node_value,
    action_value,
    choice,
):  # pragma: no cover - compiled
    """``seat``'s best response, one depth at a time from the deepest: node values to ``seat``,
    each of its information states' actions valued over all its nodes (weighted by
    ``other``, the reach of everything but ``seat``'s own moves) and the best chosen."""
    sign = 1.0 if seat == 0 else -1.0
    for level in range(len(level_start) - 2, -1, -1):
        start, stop = level_start[level], level_start[level + 1]
        for node in range(start, stop):
            count = num_children[node]
            if count == 0:
                node_value[node] = sign * value[node]
                continue
            base = offset[infostate[node]]
            child = first_child[node]
            if player[node] == seat:
                for j in range(count):
                    action_value[base + j] += other[node] * node_value[child + j]
                continue
            total = 0.0
            for j in range(count):
                total += policy[base + j] * node_value[child + j]
            node_value[node] = total
        for node in range(start, stop):
            if num_children[node] == 0 or player[node] != seat:
                continue
            info = infostate[node]
            base = offset[info]
            if choice[info] < 0:
                best = 0
                for j in range(1, num_children[node]):
                    if action_value[base + j] > action_value[base + best]:
                        best = j
                choice[info] = best
            node_value[node] = node_value[first_child[node] + choice[info]]


def _reach_into(tree: GameTree, policy: np.ndarray, seat: int, own: np.ndarray, other: np.ndarray) -> None:
    """Each node's probability of being reached under ``policy``: ``seat``'s own part in
    ``own``, chance's and the other seat's in ``other`` (filled in place)."""
    _reach(
        tree.player,
        tree.infostate,
        tree.first_child,
        tree.num_children,
        tree.info_offset,
        policy,
        tree.root_probability,
        seat,
        own,
        other,
    )


def _regrets_into(
    tree: GameTree,
    policy: np.ndarray,
    seat: int,
    own: np.ndarray,
    other: np.ndarray,
    node_value: np.ndarray,
    regret: np.ndarray,
    average: np.ndarray,
    weight: float,
) -> None:
    """Each node's value to seat 0 under ``policy`` into ``node_value``, and ``seat``'s
    counterfactual regrets and reach-weighted policy added into ``regret`` and ``average``
    (a seat of -1 matches no node: values only)."""
    _regrets(
        tree.player,
        tree.infostate,
        tree.first_child,
        tree.num_children,
        tree.info_offset,
        tree.value,
        policy,
        seat,
        own,
        other,
        node_value,
        regret,
        average,
        weight,
    )


def uniform_policy(tree: GameTree) -> np.ndarray:
    """Every legal action equally likely in every information state."""
    counts = np.diff(tree.info_offset)
    return np.repeat(1.0 / counts, counts)


def check_policy(tree: GameTree, policy: np.ndarray) -> np.ndarray:
    """``policy`` as float64 over the tree's slots; ValueError unless it has one probability
    per slot, each in 0..1, summing to 1 in each information state."""
    policy = np.asarray(policy, dtype=np.float64)
    if policy.shape != (tree.num_slots,):
        raise ValueError(f"a policy has one probability per action slot ({tree.num_slots}), got shape {policy.shape}")
    if not np.isfinite(policy).all() or (policy < 0).any() or (policy > 1 + 1e-9).any():
        raise ValueError("a policy's probabilities must lie in 0..1")
    sums = np.add.reduceat(policy, tree.info_offset[:-1])
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-6)
    if len(bad):
        raise ValueError(
            f"a policy's probabilities sum to 1 in each information state; state {int(bad[0])} "
            f"{tree.info_key(int(bad[0]))} sums to {sums[bad[0]]:.6f}"
        )
    return policy


def normalize(tree: GameTree, weights: np.ndarray) -> np.ndarray:
    """Per information state, ``weights`` scaled to sum to 1 (uniform where they sum to 0)."""
    counts = np.diff(tree.info_offset)
    sums = np.repeat(np.add.reduceat(weights, tree.info_offset[:-1]), counts)
    return np.where(sums > 0, weights / np.where(sums > 0, sums, 1.0), np.repeat(1.0 / counts, counts))


@dataclass(frozen=True)
class BestResponse:
    """A seat's exact best response to the other seat's policy.

    Attributes:
        seat: the responding seat.
        value: what it scores per round (points, its own sign).
        choice: per information state of ``seat``, the index of its best action among the
            state's slots (-1 for the other seat's states).
        node_value: each node's value to ``seat`` when it plays the best response from there.
    """

    seat: int
    value: float
    choice: np.ndarray
    node_value: np.ndarray


def best_response(tree: GameTree, policy: np.ndarray, seat: int) -> BestResponse:
    """``seat``'s exact best response to the other seat's part of ``policy``."""
    if seat not in range(SEATS):
        raise ValueError(f"seat must be 0 or 1, got {seat!r}")
    policy = check_policy(tree, policy)
    own = np.empty(tree.num_nodes)
    other = np.empty(tree.num_nodes)
    _reach_into(tree, policy, seat, own, other)
    node_value = np.empty(tree.num_nodes)
    action_value = np.zeros(tree.num_slots)
    choice = np.full(tree.num_infostates, -1, np.int32)
    _best_response(
        tree.player,
        tree.infostate,
        tree.first_child,
        tree.num_children,
        tree.info_offset,
        tree.value,
        tree.level_start,
        policy,
        seat,
        other,
        node_value,
        action_value,
        choice,
    )
    roots = tree.num_roots
    value = float(np.dot(tree.root_probability, node_value[:roots]))
    return BestResponse(seat, value, choice, node_value)


def expected_value(tree: GameTree, policy: np.ndarray) -> float:
    """Seat 0's expected points per round when both seats play ``policy`` (seat 1's is the opposite)."""
    policy = check_policy(tree, policy)
    node_value = _values(tree, policy)
    return float(np.dot(tree.root_probability, node_value[: tree.num_roots]))


def _values(tree: GameTree, policy: np.ndarray) -> np.ndarray:
    own = np.empty(tree.num_nodes)
    other = np.empty(tree.num_nodes)
    node_value = np.empty(tree.num_nodes)
    scratch = np.zeros(tree.num_slots)
    _regrets_into(tree, policy, -1, own, other, node_value, scratch, scratch, 0.0)
    return node_value


def nash_conv(tree: GameTree, policy: np.ndarray) -> float:
    """What the two seats' exact best responses gain against ``policy``, added (0 at a Nash
    equilibrium; points per round): OpenSpiel's ``exploitability.nash_conv``."""
    policy = check_policy(tree, policy)
    return best_response(tree, policy, 0).value + best_response(tree, policy, 1).value


def mean_award(tree: GameTree) -> float:
    """The expected points a round pays (|seat 0's points|) when every decision is uniform
    over the legal moves: the scale NashConv is read against."""
    award = np.abs(tree.value)
    return expected_value_of(tree, uniform_policy(tree), award)


def expected_value_of(tree: GameTree, policy: np.ndarray, payoff: np.ndarray) -> float:
    """The expectation of ``payoff`` (per node, read where the round is over) under ``policy``."""
    own = np.empty(tree.num_nodes)
    other = np.empty(tree.num_nodes)
    _reach_into(tree, policy, 0, own, other)
    over = tree.num_children == 0
    return float(np.sum(own[over] * other[over] * payoff[over]))


class CFRSolver:
    """CFR+ (OpenSpiel's) or discounted CFR over a game tree (see the module docstring).

    Attributes:
        tree: the game tree.
        algorithm: "cfr+" or "dcfr".
        iteration: iterations done.
        policy: the current policy (regret matching's), over the slots.
        regret: the cumulative regrets, over the slots.
        average: the cumulative reach-weighted policy, over the slots.
    """

    def __init__(self, tree: GameTree, algorithm: str = "cfr+") -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
        self.tree = tree
        self.algorithm = algorithm
        self.iteration = 0
        self.policy = uniform_policy(tree)
        self.regret = np.zeros(tree.num_slots)
        self.average = np.zeros(tree.num_slots)
        self._own = np.empty(tree.num_nodes)
        self._other = np.empty(tree.num_nodes)
        self._node_value = np.empty(tree.num_nodes)

    @property
    def nbytes(self) -> int:
        """Memory the solver holds beside the tree, in bytes."""
        arrays = (self.policy, self.regret, self.average, self._own, self._other, self._node_value)
        return sum(a.nbytes for a in arrays)

    def iterate(self) -> None:
        """One iteration: seat 0's update, then seat 1's against seat 0's new policy."""
        self.iteration += 1
        t = float(self.iteration)
        tree = self.tree
        plus = self.algorithm == "cfr+"
        if plus:
            weight = t
        else:
            self.average *= ((t - 1.0) / t) ** DCFR_GAMMA
            weight = 1.0
        positive = t**DCFR_ALPHA / (t**DCFR_ALPHA + 1.0)
        negative = t**DCFR_BETA / (t**DCFR_BETA + 1.0)
        for seat in range(SEATS):
            _reach_into(tree, self.policy, seat, self._own, self._other)
            _regrets_into(
                tree, self.policy, seat, self._own, self._other, self._node_value, self.regret, self.average, weight
            )
            _match_regrets(tree.info_seat, tree.info_offset, self.regret, self.policy, seat, plus, positive, negative)

    def average_policy(self) -> np.ndarray:
        """The average policy over the slots (uniform where a state was never reached)."""
        return normalize(self.tree, self.average)


#: The file a solved policy is kept in (what the ``solved:PATH`` agent reads).
POLICY_FILE = "policy.npz"


def write_policy(path: str | Path, tree: GameTree, policy: np.ndarray) -> None:
    """Write ``policy`` with what identifies each information state (seat, dealt hand,
    leader, moves) and the rules, atomically, as a ``.npz`` file (:func:`read_policy`)."""
    policy = check_policy(tree, policy)
    moves, leader = tree.info_moves()
    arrays: dict[str, Any] = {
        "rules": np.array(json.dumps(tree.rules.as_dict())),
        "info_seat": tree.info_seat,
        "info_hand": tree.info_hand,
        "info_leader": leader,
        "info_moves": moves,
        "info_offset": tree.info_offset,
        "slot_action": tree.slot_action,
        "probability": policy,
    }

    def save(temporary: Path) -> None:
        with open(temporary, "wb") as f:
            np.savez_compressed(f, **arrays)

    save_atomically(path, save)


@dataclass(frozen=True)
class SolvedPolicy:
    """A policy read back by :func:`read_policy`: per information state (seat, dealt hand,
    leader, moves) the probability of each of its actions."""

    rules: Rules
    info_seat: np.ndarray
    info_hand: np.ndarray
    info_leader: np.ndarray
    info_moves: np.ndarray
    info_offset: np.ndarray
    slot_action: np.ndarray
    probability: np.ndarray

    def index(self, seat: int) -> dict[tuple[int, int, bytes], int]:
        """``(dealt hand, leader, moves as int16 bytes)`` -> information state, for ``seat``."""
        out = {}
        for info in np.flatnonzero(self.info_seat == seat):
            row = self.info_moves[info]
            moves = row[row >= 0].astype(np.int16).tobytes()
            out[(int(self.info_hand[info]), int(self.info_leader[info]), moves)] = int(info)
        return out

    def actions(self, info: int) -> tuple[np.ndarray, np.ndarray]:
        """The action ids of information state ``info`` and their probabilities."""
        start, stop = self.info_offset[info], self.info_offset[info + 1]
        return self.slot_action[start:stop], self.probability[start:stop]


def read_policy(path: str | Path) -> SolvedPolicy:
    """A policy written by :func:`write_policy`; ValueError naming the file if it is not one."""
    path = Path(path)
    if path.is_dir():
        path = path / POLICY_FILE
    if not path.is_file():
        raise ValueError(f"no solved policy at {path} (solve writes {POLICY_FILE} into its --out folder)")
    try:
        with np.load(path) as data:
            fields = {name: data[name] for name in SolvedPolicy.__dataclass_fields__ if name != "rules"}
            rules = Rules.from_dict(json.loads(str(data["rules"])))
    except (KeyError, OSError, ValueError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path} is not a solved policy written by block_env.cfr.write_policy: {e}") from None
    return SolvedPolicy(rules=rules, **fields)
