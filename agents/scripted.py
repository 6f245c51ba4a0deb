"""Scripted baselines: random, greedy and strategic."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from block_env.agents.base import Agent, Observation, legal_actions
from block_env.engine import PublicView
from block_env.opponents import RandomOpponent
from block_env.rules import Rules
from block_env.tiles import ends_after


class RandomAgent(RandomOpponent, Agent):
    """Uniform over the legal actions (``act_batch``: for many games in one call): the core's
    :class:`block_env.opponents.RandomOpponent` as an agent of these rules.

    Examples:
        >>> import numpy as np
        >>> from block_env import Rules
        >>> RandomAgent(Rules(), seed=0).act({"action_mask": np.array([0, 1, 1] + [0] * 54, dtype=np.int8)}) in (1, 2)
        True
    """

    def __init__(self, rules: Rules, seed: int | None = None, observation: str = "vector") -> None:
        Agent.__init__(self, rules, seed, observation)
        self.reseed(seed)


#: Weights of a move's score (:func:`move_score`): per pip of the tile, for a double, per tile
#: of the mover's that follows the new ends.
MoveWeights = tuple[float, float, float]

#: Greedy's order as weights of a move's score (the search's "greedy" playout scores moves with these).
GREEDY_WEIGHTS: MoveWeights = (2.0, 1.0, 0.0)


def move_score(weights: MoveWeights, pips: int, double: bool, kept: int) -> float:
    """A move's score on the terms every scripted player shares: the tile's ``pips``, whether it
    is a ``double``, and how many tiles the mover ``kept`` that follow the line's new ends, by
    ``weights`` (:data:`MoveWeights`). Greedy's rank, the strategic agent's first terms and the
    search's scripted playouts; their compiled kernel compiles this same function."""
    return weights[0] * pips + weights[1] * double + weights[2] * kept


@cache
def greedy_rank(rules: Rules) -> np.ndarray:
    """Greedy's rank of every action (2T+1,) int64: heaviest tile first, doubles first among
    equals, the pass last; the lowest action id wins a tie (``argmax`` takes the first)."""
    ranks = [int(move_score(GREEDY_WEIGHTS, a + b, a == b, 0)) for a, b in rules.tile_set.tiles for _end in (0, 1)]
    rank = np.array([*ranks, -1], dtype=np.int64)
    rank.flags.writeable = False  # shared by every greedy agent of these rules
    return rank


class GreedyAgent(Agent):
    """Heaviest tile first (ties: doubles first; then the lower action id).

    Examples:
        >>> import numpy as np
        >>> from block_env import Rules
        >>> rules = Rules()
        >>> mask = np.zeros(rules.tile_set.num_actions, dtype=np.int8)
        >>> mask[[rules.tile_set.action((1, 2), 0), rules.tile_set.action((5, 6), 0)]] = 1
        >>> rules.tile_set.describe_action(GreedyAgent(rules).act({"action_mask": mask}))
        '[5|6] on left'
    """

    name = "greedy"
    observes = False  # act_batch reads the masks alone

    def __init__(self, rules: Rules, seed: int | None = None, observation: str = "vector") -> None:
        super().__init__(rules, seed, observation)
        self.compiled_policy = greedy_rank(self.rules)  # the vector env plays it inside its compiled loop

    def act(self, obs: Observation) -> int:
        return int(self.act_batch(None, obs["action_mask"][None].astype(bool))[0])

    def act_batch(self, observations: np.ndarray | None, masks: np.ndarray) -> np.ndarray:
        if not masks.any(axis=1).all():
            raise ValueError("an action mask is all zeros: it is not this seat's turn")
        return np.where(masks, self.compiled_policy, -2).argmax(axis=1)


@dataclass(frozen=True)
class StrategyWeights:
    """Weights of the strategic agent's move score (the game's strategy tips: docs/agents.md).

    Chosen by a random search against greedy (40 weight sets x 300 duplicate 2-player deals),
    then checked on fresh deals for 2, 3, 4 players and partnerships.
    """

    pips: float = 1.5  # lead heavy, finish light
    pips_near_lock: float = 3.0  # extra per pip when few tiles can still follow the ends
    control: float = 2.0  # per tile I keep that matches a new end
    double: float = 4.0  # doubles are the hardest tiles to place later
    opponent_void: float = 8.0  # per opponent that has shown it lacks a new end's suit
    partner_void: float = 3.0  # per new end my partner lacks
    partner_suit: float = 5.0  # keep my partner's lead suits open
    sole_control: float = 12.0  # only I can follow the new ends
    block_win: float = 10.0  # locking the line while lighter than everyone
    block_loss: float = 80.0  # locking it while not clearly lighter
    near_lock: int = 2  # "about to lock": at most this many unseen tiles fit the ends
    lighter_margin: float = 0.85  # "lighter than everyone": my pips below this share of each other side's estimate

    @property
    def move_weights(self) -> MoveWeights:
        """The weights of the terms every scripted move score shares (:func:`move_score`)."""
        return (self.pips, self.double, self.control)


class StrategicAgent(Agent):
    """The game's strategy tips made concrete, as a score over legal moves.

    Keeps numbers it holds on the ends; reads passes (steers toward suits opponents lack,
    away from those its partner lacks); counts suits, so it knows which numbers are dead for
    everyone else; blocks on purpose only when its hand is light against the unseen-pip
    estimate; sheds heavy tiles when the line is about to lock; follows a partner's lead.

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> agent = StrategicAgent(env.rules, seed=0)
        >>> action = agent.act(env.observe(env.agent_selection))
        >>> env.observe(env.agent_selection)["action_mask"][action]
        np.int8(1)
    """

    name = "strategic"

    def __init__(
        self, rules: Rules, seed: int | None = None, observation: str = "vector", weights: StrategyWeights | None = None
    ) -> None:
        super().__init__(rules, seed, observation)
        self.weights = weights or StrategyWeights()

    def act(self, obs: Observation) -> int:
        legal = legal_actions(obs)
        if len(legal) == 1:
            return legal[0]
        k = self.view(obs)
        scores = [self.score(k, a) for a in legal]
        best = max(scores)
        return legal[scores.index(best)]

    def score(self, k: PublicView, action: int) -> float:
        """How much this move agrees with the strategy tips (higher is better)."""
        w = self.weights
        rules = k.rules
        ts = rules.tile_set
        suits = ts.suit_masks
        i = action >> 1
        x, y = ts.tiles[i]
        hand_after = k.hand & ~(1 << i)
        ends = ends_after(ts, k.ends, action)
        on_ends = suits[ends[0]] | suits[ends[1]]
        mine_on_ends = (hand_after & on_ends).bit_count()
        others_on_ends = (k.unseen & on_ends).bit_count()  # tiles anyone else could follow with

        score = move_score(w.move_weights, x + y, x == y, mine_on_ends)
        if others_on_ends <= w.near_lock:
            score += w.pips_near_lock * (x + y)
        for v in set(ends):
            score += w.opponent_void * sum(k.voids[o] >> v & 1 for o in k.opponents)
            if k.partner is not None and k.voids[k.partner] >> v & 1:
                score -= w.partner_void
        if k.partner is not None and k.leader == k.partner and k.opening is not None:
            score += w.partner_suit * sum(v in ts.tiles[k.opening] for v in set(ends))
        if others_on_ends == 0:
            if mine_on_ends == 0:  # nobody can follow: the line locks and the round blocks
                score += w.block_win if self._lighter_than_everyone(k, hand_after, w.lighter_margin) else -w.block_loss
            else:
                score += w.sole_control
        return score

    @staticmethod
    def _lighter_than_everyone(k: PublicView, hand_after: int, margin: float) -> bool:
        """Is my side lighter than every other side, on the unseen-pip estimate?"""
        rules = k.rules
        unseen = k.unseen
        unseen_tiles = unseen.bit_count()
        per_tile = rules.tile_set.pips_of(unseen) / unseen_tiles if unseen_tiles else 0.0
        n = rules.num_players
        counts = list(k.hand_counts)
        counts[0] = hand_after.bit_count()
        estimate = [per_tile * counts[r] for r in range(n)]
        estimate[0] = float(rules.tile_set.pips_of(hand_after))
        sides = [0.0] * rules.num_sides
        for r in range(n):
            sides[rules.side_of(r)] += estimate[r]
        mine = sides[0]
        return all(mine < margin * other for other in sides[1:])
