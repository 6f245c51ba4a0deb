"""The whole game tree of one round of a small two-player set, laid out flat for exact methods.

:func:`build_tree` deals every pair of hands, lets every seat lead (under ``first_lead="lot"``;
under ``"heaviest"`` the holder of the heaviest tile leads it) and plays every legal move with
the engine (:class:`block_env.engine.Round`) until each round ends: each position the engine
reaches is one node. The nodes are numbered by depth (moves played), so that a parent comes
before its children, a node's children are consecutive and ordered by action id, and the
nodes of one depth are consecutive: one sweep down the array or up it is a pass over the tree.

An information state is what the seat to move knows: its seat, the hand it was dealt and the
round's moves so far (who led follows from them, or is the seat itself before the opening).
That is OpenSpiel's perfect-recall information state of the ``block_dominoes`` game, so the
tree's information states are OpenSpiel's, one for one. :mod:`block_env.cfr` runs CFR+ and
exact best responses over these arrays.

The chance part of the game sits at the roots: each root is one deal and one leader, with its
probability (every deal of hands equally likely, the lot uniform over the seats).

Examples:
    >>> tree = build_tree(Rules.preset("tiny"))
    >>> tree.num_infostates, tree.num_roots
    (516, 180)
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from block_env.engine import Round
from block_env.rules import Rules

#: The number of seats the exact methods handle: two-player zero-sum rounds.
SEATS = 2


#: The most deals :func:`build_tree` lays out (double-four, 2 × 3 has 100,100 and its tree takes
#: the solver half a minute; the standard set's two hands have about 1.4e11).
MAX_DEALS = 200_000


def check_solvable(rules: Rules) -> None:
    """ValueError unless ``rules`` is a game :func:`build_tree` can lay out: two seats and at
    most :data:`MAX_DEALS` deals of their hands."""
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a block_env.Rules, got {type(rules).__name__}")
    if rules.num_players != SEATS:
        raise ValueError(
            f"the game tree is built for two-player rounds (zero-sum, one seat against the other), "
            f"got num_players={rules.num_players}"
        )
    tiles, hand = rules.tile_set.num_tiles, rules.resolved_hand_size
    deals = math.comb(tiles, hand) * math.comb(tiles - hand, hand)
    if deals > MAX_DEALS:
        raise ValueError(
            f"the game tree lays out every deal, at most {MAX_DEALS:,} (as the tiny, small and medium "
            f"presets); these rules deal {deals:,} (a {rules.tile_set.num_tiles}-tile set, hands of {hand})"
        )


def all_deals(rules: Rules) -> list[tuple[int, int]]:
    """Every deal of hands (seat 0's, seat 1's) as bitmasks, each hand's tiles in set order."""
    size = rules.resolved_hand_size
    tiles = range(rules.tile_set.num_tiles)
    deals = []
    for first in combinations(tiles, size):
        taken = set(first)
        mask0 = sum(1 << t for t in first)
        for second in combinations([t for t in tiles if t not in taken], size):
            deals.append((mask0, sum(1 << t for t in second)))
    return deals


@dataclass(frozen=True)
class GameTree:
    """The flat game tree of one round (see the module docstring). Arrays are indexed by node
    (``player`` .. ``value``), by depth (``level_start``), by root (``root_*``), by information
    state (``info_*``) or by an information state's action slot (``slot_action``).

    Attributes:
        rules: the rules the tree was built from.
        player: the seat to move at each node; -1 where the round is over.
        infostate: the information state of the seat to move; -1 where the round is over.
        first_child: the index of the node's first child (its children follow it); -1 for none.
        num_children: the number of legal moves (0 where the round is over).
        parent: the node's parent; -1 for a root.
        action: the action id that led to the node; -1 for a root.
        value: seat 0's points where the round is over (seat 1's are the opposite), else 0.
        level_start: nodes of depth d are ``level_start[d]:level_start[d + 1]``.
        root_probability: the chance of each root (a deal and a leader); roots are nodes
            ``0..num_roots - 1``.
        root_hands: the dealt hands (bitmasks) per root and seat.
        root_leader: the seat that leads at each root.
        info_seat, info_hand: the seat of each information state and the hand it was dealt.
        info_node: one node of each information state (its moves are that node's).
        info_offset: the information state's actions are slots
            ``info_offset[i]:info_offset[i + 1]`` (in ascending action id, as the children).
        slot_action: the action id of each slot.
    """

    rules: Rules
    player: np.ndarray
    infostate: np.ndarray
    first_child: np.ndarray
    num_children: np.ndarray
    parent: np.ndarray
    action: np.ndarray
    value: np.ndarray
    level_start: np.ndarray
    root_probability: np.ndarray
    root_hands: np.ndarray
    root_leader: np.ndarray
    info_seat: np.ndarray
    info_hand: np.ndarray
    info_node: np.ndarray
    info_offset: np.ndarray
    slot_action: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.player)

    @property
    def num_roots(self) -> int:
        return len(self.root_probability)

    @property
    def num_infostates(self) -> int:
        return len(self.info_seat)

    @property
    def num_slots(self) -> int:
        return len(self.slot_action)

    @property
    def nbytes(self) -> int:
        """Memory held by the tree's arrays, in bytes."""
        return sum(v.nbytes for v in self.__dict__.values() if isinstance(v, np.ndarray))

    def moves(self, node: int) -> list[int]:
        """The action ids played from the root to ``node``, oldest first."""
        if not 0 <= node < self.num_nodes:
            raise ValueError(f"node must be in 0..{self.num_nodes - 1}, got {node}")
        out = []
        while self.parent[node] >= 0:
            out.append(int(self.action[node]))
            node = int(self.parent[node])
        return out[::-1]

    def root_of(self, node: int) -> int:
        while self.parent[node] >= 0:
            node = int(self.parent[node])
        return node

    def round_at(self, node: int) -> Round:
        """The engine's round at ``node``: its root's deal and leader, and its moves played."""
        root = self.root_of(node)
        rnd = self.start(root)
        for action in self.moves(node):
            rnd.apply(action)
        return rnd

    def start(self, root: int) -> Round:
        """The engine's round at ``root``, before the first move."""
        hands = [int(h) for h in self.root_hands[root]]
        if self.rules.first_lead == "heaviest":
            return Round.start(self.rules, hands, "heaviest")
        return Round.start(self.rules, hands, int(self.root_leader[root]))

    def info_leader(self, info: int) -> int:
        """The seat that led in information state ``info`` (the seat itself before the opening)."""
        return int(self.root_leader[self.root_of(int(self.info_node[info]))])

    def info_key(self, info: int) -> tuple[int, int, int, tuple[int, ...]]:
        """``(seat, dealt hand, leader, moves)``: what the seat to move knows."""
        node = int(self.info_node[info])
        return int(self.info_seat[info]), int(self.info_hand[info]), self.info_leader(info), tuple(self.moves(node))

    def info_moves(self) -> tuple[np.ndarray, np.ndarray]:
        """Every information state's moves (rows padded with -1 after its last move) and the
        seat that led in it."""
        node = self.info_node.copy()
        depth = np.searchsorted(self.level_start, node, side="right") - 1
        moves = np.full((len(node), max(int(depth.max()), 1)), -1, np.int16)
        rows = np.arange(len(node))
        for back in range(int(depth.max())):
            up = depth > back
            moves[rows[up], depth[up] - 1 - back] = self.action[node[up]]
            node[up] = self.parent[node[up]]
        return moves, self.root_leader[node]

    def info_actions(self, info: int) -> np.ndarray:
        return self.slot_action[self.info_offset[info] : self.info_offset[info + 1]]


def build_tree(rules: Rules) -> GameTree:
    """Every deal, lead and move of one round of ``rules``, played with the engine (see the
    module docstring). Two seats only; ValueError otherwise."""
    check_solvable(rules)
    ts = rules.tile_set
    num_tiles = ts.num_tiles
    deals = all_deals(rules)
    leads: list[int | str] = ["heaviest"] if rules.first_lead == "heaviest" else list(range(SEATS))
    # Per node, in the order the nodes are made (a node's children are made together).
    parent, depth, player, action, value = array("q"), array("b"), array("b"), array("h"), array("d")
    info_key = array("q")  # public history id * 2**T + the mover's dealt hand; -1 where over
    public: dict[tuple[int, int], int] = {}  # (parent's public history, action) -> id
    root_hands, root_leader = [], []

    def add(rnd: Round, dealt: tuple[int, int], up: int, level: int, move: int, history: int) -> None:
        parent.append(up)
        depth.append(level)
        action.append(move)
        if rnd.result is not None:
            player.append(-1)
            value.append(rnd.result.side_values("zero_sum")[0])
            info_key.append(-1)
        else:
            seat = rnd.current
            player.append(seat)
            value.append(0.0)
            info_key.append(history << num_tiles | dealt[seat])

    for hands in deals:
        for lead in leads:
            rnd = Round.start(rules, list(hands), lead)
            root_hands.append(hands)
            root_leader.append(rnd.leader)
            index = len(parent)
            add(rnd, hands, -1, 0, -1, rnd.leader)  # a root's public history: who leads
            stack = [(rnd, index, rnd.leader, 0)]
            while stack:
                rnd, index, history, level = stack.pop()
                for move in rnd.legal_actions():
                    child = rnd.copy()
                    child.apply(move)
                    key = (history, move)
                    child_history = public.get(key)
                    if child_history is None:
                        child_history = public[key] = len(public) + SEATS
                    child_index = len(parent)
                    add(child, hands, index, level + 1, move, child_history)
                    if child.result is None:
                        stack.append((child, child_index, child_history, level + 1))
    return _lay_out(
        rules,
        np.frombuffer(parent, np.int64),
        np.frombuffer(depth, np.int8),
        np.frombuffer(player, np.int8),
        np.frombuffer(action, np.int16),
        np.frombuffer(value, np.float64),
        np.frombuffer(info_key, np.int64),
        np.array(root_hands, np.int64).reshape(-1, SEATS),
        np.array(root_leader, np.int8),
        num_tiles,
    )


def _lay_out(
    rules: Rules,
    parent: np.ndarray,
    depth: np.ndarray,
    player: np.ndarray,
    action: np.ndarray,
    value: np.ndarray,
    info_key: np.ndarray,
    root_hands: np.ndarray,
    root_leader: np.ndarray,
    num_tiles: int,
) -> GameTree:
    """Renumber the nodes by depth (stable, so siblings stay together and in order) and
    number the information states."""
    order = np.argsort(depth, kind="stable")
    new_index = np.empty_like(order)
    new_index[order] = np.arange(len(order))
    parent = parent[order]
    parent = np.where(parent >= 0, new_index[np.maximum(parent, 0)], -1)
    depth, player, action, value, info_key = depth[order], player[order], action[order], value[order], info_key[order]
    num_nodes = len(parent)
    num_children = np.bincount(parent[parent >= 0], minlength=num_nodes).astype(np.int16)
    first_child = np.full(num_nodes, -1, np.int64)
    children = np.flatnonzero(parent >= 0)
    owners, first = np.unique(parent[children], return_index=True)
    first_child[owners] = children[first]
    level_start = np.searchsorted(depth, np.arange(int(depth.max()) + 2)).astype(np.int64)
    decision = np.flatnonzero(player >= 0)
    keys, first_node, inverse = np.unique(info_key[decision], return_index=True, return_inverse=True)
    infostate = np.full(num_nodes, -1, np.int32)
    infostate[decision] = inverse
    info_node = decision[first_node]
    info_seat = player[info_node].astype(np.int8)
    info_hand = keys & ((1 << num_tiles) - 1)
    counts = num_children[info_node].astype(np.int64)
    info_offset = np.zeros(len(keys) + 1, np.int64)
    np.cumsum(counts, out=info_offset[1:])
    slot_action = np.empty(int(info_offset[-1]), np.int16)
    for j in range(int(counts.max())):  # the j-th child's action of each state with more than j
        has = counts > j
        slot_action[info_offset[:-1][has] + j] = action[first_child[info_node[has]] + j]
    roots = int(level_start[1])
    index = np.int32 if num_nodes < 2**31 else np.int64  # node numbers, as compact as they fit
    return GameTree(
        rules=rules,
        player=player,
        infostate=infostate,
        first_child=first_child.astype(index),
        num_children=num_children,
        parent=parent.astype(index),
        action=action,
        value=value,
        level_start=level_start,
        root_probability=np.full(roots, 1.0 / roots),
        root_hands=root_hands,
        root_leader=root_leader,
        info_seat=info_seat,
        info_hand=info_hand,
        info_node=info_node.astype(index),
        info_offset=info_offset,
        slot_action=slot_action,
    )
