"""Scripted baselines: random, greedy and strategic."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit

from block_env.agents.base import Agent, Observation, legal_actions
from block_env.batched import ends_after_move, follows_ends, tables
from block_env.engine import PublicView, opponents_of, partner_of
from block_env.observations import PublicViews, read_public_views
from block_env.opponents import RandomOpponent
from block_env.rules import Rules


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


#: :func:`move_score` compiled, for the kernels of the strategic agent and the search's playouts.
move_score_compiled = njit(cache=True, inline="always")(move_score)


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
    deterministic = True

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
    ``act_batch`` chooses for many games at once, in compiled code, what ``act`` chooses for each.

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> agent = StrategicAgent(env.rules, seed=0)
        >>> action = agent.act(env.observe(env.agent_selection))
        >>> env.observe(env.agent_selection)["action_mask"][action]
        np.int8(1)
        >>> obs = env.observe(env.agent_selection)
        >>> agent.act_batch(obs["observation"][None], obs["action_mask"][None]).tolist() == [action]
        True
    """

    name = "strategic"
    deterministic = True  # a score of the observation alone: the arena may batch it

    def __init__(
        self, rules: Rules, seed: int | None = None, observation: str = "vector", weights: StrategyWeights | None = None
    ) -> None:
        super().__init__(rules, seed, observation)
        self.weights = weights or StrategyWeights()
        self._tables = tables(self.rules)  # act_batch's constants: these rules' tiles

    def act(self, obs: Observation) -> int:
        legal_actions(obs)  # refuses an all-zero mask
        observation, mask = np.asarray(obs["observation"]), np.asarray(obs["action_mask"])
        return int(self.act_batch(observation[None], mask[None])[0])  # one row of the batched move

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """A move for each of many games (rows of observations and their masks) in one
        compiled pass, the one ``act`` chooses for each, from the rows' views read at once
        (:func:`block_env.observations.read_public_views`). What a vector env's opponent calls."""
        views = read_public_views(observations, masks, self.rules, self.observation)
        playing = views.legal.any(axis=1)
        if not playing.all():
            rows = np.flatnonzero(~playing).tolist()
            raise ValueError(f"the action masks of rows {rows} are all zeros: it is not those seats' turn")
        return self._moves(views)

    def score(self, k: PublicView, action: int) -> float:
        """How much this move (a tile action, legal in ``k`` or not) agrees with the strategy
        tips (higher is better): what ``act`` and ``act_batch`` compare, in the same compiled code."""
        if not 0 <= action < self.rules.tile_set.num_actions - 1:
            raise ValueError(f"score rates tile moves (actions 0..{self.rules.tile_set.num_actions - 2}), got {action}")
        scoring = PublicViews.of([k])
        scoring.legal[:] = False
        scoring.legal[0, action] = True
        scores = np.empty(scoring.legal.shape)
        self._kernel(scoring, np.empty(1, dtype=np.int64), scores)
        return float(scores[0, action])

    def _moves(self, views: PublicViews) -> np.ndarray:
        moves = np.empty(len(views), dtype=np.int64)
        self._kernel(views, moves, np.empty((0, 0)))
        return moves

    def _kernel(self, views: PublicViews, moves: np.ndarray, scores: np.ndarray) -> None:
        """:func:`_strategic_kernel` over ``views`` with these rules' tables and these weights."""
        t = self._tables
        partner, opponents = _partner_and_opponents(self.rules)
        move_weights, terms, lock_terms = _kernel_weights(self.weights)
        _strategic_kernel(
            views.hand, views.played, views.ends, views.opening, views.leader, views.hand_counts, views.voids,
            views.legal, t.low, t.high, t.side_of, t.num_sides, partner, opponents, move_weights, terms, lock_terms,
            moves, scores,
        )  # fmt: skip


@cache
def _partner_and_opponents(rules: Rules) -> tuple[int, np.ndarray]:
    """Seat 0's partner (-1: none) and opponents, as :class:`PublicView` reads them, for the kernel."""
    partner = partner_of(rules, 0)
    return (-1 if partner is None else partner), np.array(opponents_of(rules, 0), dtype=np.int64)


@cache
def _kernel_weights(w: StrategyWeights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel's weight arrays: the shared move weights, the other terms, the lock terms."""
    terms = (w.pips_near_lock, w.opponent_void, w.partner_void, w.partner_suit, w.sole_control)
    lock_terms = (w.near_lock, w.block_win, w.block_loss, w.lighter_margin)
    arrays = [np.array(x, dtype=np.float64) for x in (w.move_weights, terms, lock_terms)]
    for a in arrays:
        a.flags.writeable = False  # shared by every agent with these weights
    return arrays[0], arrays[1], arrays[2]


@njit(cache=True, nogil=True)
def _strategic_kernel(
    hand,
    played,
    ends,
    opening,
    leader,
    hand_counts,
    voids,
    legal,
    low,
    high,
    side_of,
    num_sides,
    partner,
    opponents,
    move_weights,
    terms,
    lock_terms,
    moves,
    scores,
):  # pragma: no cover - compiled
    """The strategic agent's score of every legal tile move of each row of a batch of views
    (the one place it is computed: :meth:`StrategicAgent.score`, ``move``, ``act`` and
    ``act_batch`` all read it), and each row's move: the best-scoring legal move, the first
    among equals; the only legal move as it is. With a ``scores`` array of the legal masks'
    shape, every legal tile move is scored into it (the rest are left as they are).
    ``terms``: pips near a lock, opponent void, partner void, partner suit, sole control;
    ``lock_terms``: near lock, block win, block loss, lighter margin."""
    num_tiles = hand.shape[1]
    pass_action = legal.shape[1] - 1
    every_score = scores.shape[0] > 0
    pips_near_lock, opponent_void, partner_void, partner_suit, sole_control = terms
    near_lock, block_win, block_loss, lighter_margin = lock_terms
    sides = np.zeros(num_sides)
    for j in range(hand.shape[0]):
        count = 0
        for b in range(pass_action + 1):
            if legal[j, b]:
                count += 1
        if count == 1 and not every_score:
            moves[j] = np.argmax(legal[j])
            continue
        left, right = ends[j, 0], ends[j, 1]
        hand_pips = 0
        unseen_tiles = 0
        unseen_pips = 0
        for t in range(num_tiles):
            if hand[j, t]:
                hand_pips += low[t] + high[t]
            elif not played[j, t]:
                unseen_tiles += 1
                unseen_pips += low[t] + high[t]
        best = 0.0
        moves[j] = -1 if count > 1 else np.argmax(legal[j])
        for b in range(pass_action):
            if not legal[j, b]:
                continue
            i = b >> 1
            x, y = low[i], high[i]
            new_left, new_right = ends_after_move(left, right, x, y, b)
            mine = 0  # tiles I keep that follow the new ends
            others = 0  # unseen tiles that do: anyone else could follow with them
            for t in range(num_tiles):
                if follows_ends(low[t], high[t], new_left, new_right):
                    if hand[j, t]:
                        if t != i:
                            mine += 1
                    elif not played[j, t]:
                        others += 1
            score = move_score_compiled(move_weights, x + y, x == y, mine)
            if others <= near_lock:
                score += pips_near_lock * (x + y)
            for e in range(1 if new_left == new_right else 2):  # each new end once, the left first
                v = new_left if e == 0 else new_right
                shown = 0
                for o in opponents:
                    if voids[j, o, v]:
                        shown += 1
                score += opponent_void * shown
                if partner >= 0 and voids[j, partner, v]:
                    score -= partner_void
            if partner >= 0 and leader[j] == partner and opening[j] >= 0:
                led = 0  # new ends in the tile my partner opened with
                for e in range(1 if new_left == new_right else 2):
                    v = new_left if e == 0 else new_right
                    if low[opening[j]] == v or high[opening[j]] == v:
                        led += 1
                score += partner_suit * led
            if others == 0:
                if mine == 0:  # nobody can follow: the line locks; is my side lighter than every other?
                    # My pips after the move against the unseen pips' mean per tile times each hand's count.
                    per_tile = unseen_pips / unseen_tiles if unseen_tiles else 0.0
                    sides[:] = 0.0
                    for r in range(len(side_of)):
                        sides[side_of[r]] += float(hand_pips - x - y) if r == 0 else per_tile * hand_counts[j, r]
                    lighter = True
                    for side in range(1, num_sides):
                        lighter = lighter and sides[0] < lighter_margin * sides[side]
                    score += block_win if lighter else -block_loss
                else:
                    score += sole_control
            if every_score:
                scores[j, b] = score
            if count > 1 and (moves[j] < 0 or score > best):
                best = score
                moves[j] = b
