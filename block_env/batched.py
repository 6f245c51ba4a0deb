"""N games of Block held in numpy arrays and stepped together: the batched engine.

The same rules as :mod:`block_env.engine` (a test plays the same deals and actions through
both, for every preset, and compares legal actions, ends, passes, results and awards at every
step), laid out for throughput: every state field is an array over games, and one call
advances every selected game by one player action. numpy arrays, with the per-game loops
(legal actions, a step, playouts, determinizations) compiled by numba; deterministic under a
seed.

Layout of the state (N games, P seats, T tiles, S suits, M = max moves per round):

- ``owner`` (N, T) int8: the seat holding each tile, :data:`PLAYED` once in the line, or
  :data:`OUT_OF_PLAY` (never dealt);
- ``left``/``right`` (N,): the open ends' values, -1 before the opening;
- ``current``/``leader`` (N,): the seat to move and the seat that led; ``forced`` (N,) the
  tile the leader must open with under "heaviest" leads, else -1;
- ``counts`` (N, P), ``voids`` (N, P) (suit bitmasks shown by passing), ``passes`` (N,),
  ``opening`` (N,) (the opening tile, -1 before it), ``moves``/``move_seats`` (N, M) and
  ``num_moves`` (N,): this round's move record;
- ``scores`` (N, sides): the match so far; ``round_number`` (N,).

A step ends some rounds: their :class:`BatchResults` are returned, and the games stay as
they ended (so callers can still observe the final position) until :meth:`advance` deals
their next round, or a new episode (``episode="round"``, or a finished match).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit

from block_env.engine import RoundResult
from block_env.options import EPISODES, REWARDS
from block_env.rules import Rules, resolve_rules
from block_env.validation import check_choice, check_int

#: ``owner`` codes besides seats.
OUT_OF_PLAY = -1
PLAYED = -2
#: ``end`` codes of a finished round (RoundResult.end "domino" / "blocked").
DOMINO, BLOCKED = 0, 1
END_NAMES = ("domino", "blocked")
#: What :meth:`BatchedGames.play_until_decision` leaves each game waiting on.
DECISION, ROUND_OVER, EXTERNAL = 0, 1, 2
#: How a deal picks its leader (docs/rules.md, first and later leads).
LEAD_LOT, LEAD_HEAVIEST, LEAD_ROTATE, LEAD_WINNER = 0, 1, 2, 3


@dataclass(frozen=True)
class Tables:
    """Per-rules lookup tables (built once per Rules)."""

    rules: Rules
    num_tiles: int
    num_suits: int
    num_players: int
    num_sides: int
    num_actions: int
    pass_action: int
    max_moves: int
    low: np.ndarray  # (T,) low half
    high: np.ndarray  # (T,) high half
    pips: np.ndarray  # (T,)
    suits: np.ndarray  # (S, T) bool: tile t carries value v
    lead_rank: np.ndarray  # (T,) docs/rules.md heaviest lead: doubles by value above any other tile
    side_of: np.ndarray  # (P,)


@cache
def tables(rules: Rules) -> Tables:
    ts = rules.tile_set
    low = np.array([a for a, _ in ts.tiles], dtype=np.int64)
    high = np.array([b for _, b in ts.tiles], dtype=np.int64)
    suits = np.array([[v in tile for tile in ts.tiles] for v in range(ts.num_suits)], dtype=bool)
    big = 100 * (2 * ts.max_pip + 1)
    # heaviest_holding's order: the heaviest double, else the most pips, ties to the higher half.
    lead_rank = np.where(low == high, big + low, (low + high) * (ts.max_pip + 1) + high)
    return Tables(
        rules=rules,
        num_tiles=ts.num_tiles,
        num_suits=ts.num_suits,
        num_players=rules.num_players,
        num_sides=rules.num_sides,
        num_actions=ts.num_actions,
        pass_action=ts.pass_action,
        max_moves=rules.num_players * (ts.num_tiles + 1),
        low=low,
        high=high,
        pips=low + high,
        suits=suits,
        lead_rank=lead_rank,
        side_of=np.array([rules.side_of(s) for s in range(rules.num_players)], dtype=np.int64),
    )


@dataclass(frozen=True)
class CompiledPolicies:
    """Policies that run inside the compiled loop, one row each: ``ranks`` (K, 2T+1) int64,
    the highest-ranked legal action is played (the first on ties), or where ``uniform`` (K,)
    is set, a uniformly random legal action."""

    ranks: np.ndarray
    uniform: np.ndarray

    @classmethod
    def build(cls, rows: list[np.ndarray | None], num_actions: int) -> CompiledPolicies:
        """From one rank array per policy, None meaning uniform."""
        ranks = np.zeros((max(len(rows), 1), num_actions), dtype=np.int64)
        uniform = np.zeros(max(len(rows), 1), dtype=bool)
        for k, rank in enumerate(rows):
            if rank is None:
                uniform[k] = True
            else:
                ranks[k] = rank
        return cls(ranks, uniform)


@dataclass
class BatchResults:
    """The rounds that one step ended, for the games in ``games`` (arrays aligned with it).

    ``winner``/``winning_side`` are -1 after a tied block; ``episode_over`` marks games whose
    episode ended with this round (always, for round episodes), ``episode_winner`` the side
    that won the episode: the round's winner, or the match's (-1: none, or a draw).
    """

    games: np.ndarray
    end: np.ndarray
    winner: np.ndarray
    winning_side: np.ndarray
    award: np.ndarray
    doubled: np.ndarray
    hand_pips: np.ndarray  # (k, P)
    side_pips: np.ndarray  # (k, sides)
    episode_over: np.ndarray
    episode_winner: np.ndarray

    @classmethod
    def empty(cls, k: int, num_players: int, num_sides: int) -> BatchResults:
        """Room for k results (kernels fill them in)."""
        return cls(
            games=np.empty(k, dtype=np.int64),
            end=np.empty(k, dtype=np.int64),
            winner=np.empty(k, dtype=np.int64),
            winning_side=np.empty(k, dtype=np.int64),
            award=np.empty(k, dtype=np.int64),
            doubled=np.empty(k, dtype=bool),
            hand_pips=np.zeros((k, num_players), dtype=np.int64),
            side_pips=np.zeros((k, num_sides), dtype=np.int64),
            episode_over=np.empty(k, dtype=bool),
            episode_winner=np.empty(k, dtype=np.int64),
        )

    def arrays(self) -> tuple:
        return (
            self.games,
            self.end,
            self.winner,
            self.winning_side,
            self.award,
            self.doubled,
            self.hand_pips,
            self.side_pips,
            self.episode_over,
            self.episode_winner,
        )

    @classmethod
    def concatenate(cls, parts: list[BatchResults], num_players: int, num_sides: int) -> BatchResults:
        if not parts:
            return cls.empty(0, num_players, num_sides)
        return cls(**{name: np.concatenate([vars(p)[name] for p in parts]) for name in vars(parts[0])})

    def result(self, k: int) -> RoundResult:
        """Result ``k`` as the scalar engine's :class:`block_env.RoundResult` (-1 in the arrays: None)."""
        return RoundResult(
            end=END_NAMES[int(self.end[k])],
            winner=None if self.winner[k] < 0 else int(self.winner[k]),
            winning_side=None if self.winning_side[k] < 0 else int(self.winning_side[k]),
            award=int(self.award[k]),
            doubled=bool(self.doubled[k]),
            hand_pips=tuple(self.hand_pips[k].tolist()),
            side_pips=tuple(self.side_pips[k].tolist()),
        )

    def head(self, k: int) -> BatchResults:
        """The first ``k`` results."""
        return BatchResults(**{name: value[:k] for name, value in vars(self).items()})

    def side_values(self, mode: str) -> np.ndarray:
        """(k, sides) values of these rounds under a reward mode, as
        :meth:`block_env.RoundResult.side_values` gives them one by one (a test checks)."""
        check_choice("reward", mode, REWARDS)
        k, sides = self.side_pips.shape
        out = np.zeros((k, sides), dtype=np.float64)
        if mode == "win_loss":
            winner, size = np.where(self.episode_over, self.episode_winner, -1), np.ones(k)
        else:
            winner, size = self.winning_side, self.award.astype(np.float64)
        scored = winner >= 0
        rows = np.flatnonzero(scored)
        if mode != "points":
            out[rows] = (-size[rows] / (sides - 1))[:, None]
        out[rows, winner[rows]] = size[rows]
        return out


class BatchedGames:
    """N games of Block in arrays (see the module docstring for the state's layout).

    Args:
        rules: the rules of every game.
        num_games: N.
        episode: "round" (a finished round starts a new game) or "match" (rounds until the
            target; then a new match).
        seed: seeds the deals and lots (numpy's PCG64 draws one splitmix64 seed per deal); ``reset(seed)`` reseeds.
    """

    def __init__(self, rules: Rules | str, num_games: int, *, episode: str = "round", seed: int | None = None) -> None:
        check_int("num_games", num_games, low=1)
        check_choice("episode", episode, EPISODES)
        self.rules = rules = resolve_rules(rules)
        self.tables = tables(rules)
        self.num_games = int(num_games)
        self.episode = episode
        t = self.tables
        n, p = self.num_games, t.num_players
        self.all_games = np.arange(n)
        self.owner = np.full((n, t.num_tiles), OUT_OF_PLAY, dtype=np.int8)
        self.left = np.full(n, -1, dtype=np.int64)
        self.right = np.full(n, -1, dtype=np.int64)
        self.current = np.zeros(n, dtype=np.int64)
        self.leader = np.zeros(n, dtype=np.int64)
        self.forced = np.full(n, -1, dtype=np.int64)
        self.counts = np.zeros((n, p), dtype=np.int64)
        self.voids = np.zeros((n, p), dtype=np.int64)
        self.passes = np.zeros(n, dtype=np.int64)
        self.opening = np.full(n, -1, dtype=np.int64)
        # Narrow types: a step writes one cell of each per game, and at large N these two
        # arrays are most of the state (cache misses, not arithmetic, bound the step).
        self.moves = np.zeros((n, t.max_moves), dtype=np.int16)  # actions < 2*91+1
        self.move_seats = np.zeros((n, t.max_moves), dtype=np.int8)
        self.num_moves = np.zeros(n, dtype=np.int64)
        self.scores = np.zeros((n, t.num_sides), dtype=np.int64)
        self.round_number = np.zeros(n, dtype=np.int64)
        self.over = np.zeros(n, dtype=bool)  # the round ended; advance() deals the next
        self.episode_over = np.zeros(n, dtype=bool)
        self.last_winner = np.full(n, -1, dtype=np.int64)
        # _move_kernel's choosing arguments when step() passes the actions instead.
        self._no_choice = (
            np.zeros(1, dtype=np.int64),
            False,
            np.zeros((1, 1), dtype=np.int64),
            np.zeros((1, t.num_actions), dtype=np.int64),
            np.zeros(1, dtype=bool),
            np.zeros(1, dtype=np.uint64),
            np.zeros(1, dtype=np.int64),
        )
        self.reset(seed)

    # -- dealing ------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, games: np.ndarray | None = None) -> None:
        """Start new episodes (fresh scores, a first round) in ``games`` (default: all);
        reseed the generator first when ``seed`` is given."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        elif not hasattr(self, "rng"):
            self.rng = np.random.default_rng()
        g = self.all_games if games is None else np.asarray(games, dtype=np.int64)
        self.scores[g] = 0
        self.round_number[g] = 0
        self.episode_over[g] = False
        self.last_winner[g] = -1
        self._deal(g, first=True)

    def advance(self, games: np.ndarray) -> None:
        """Deal the next round of each game in ``games`` (finished rounds), or a new episode
        where the episode is over (docs/rules.md, later leaders, match target)."""
        g = np.asarray(games, dtype=np.int64)
        if not self.over[g].all():
            raise ValueError(f"games {g[~self.over[g]].tolist()} have not finished their round")
        new = self.episode_over[g]
        if new.all():
            self.reset(games=g)
        else:
            self.reset(games=g[new])
            self._deal(g[~new], first=False)

    def _deal(self, g: np.ndarray, first: bool) -> None:
        """Deal a round in games ``g``: numpy's generator draws one seed per deal, and a
        compiled loop shuffles the tiles from it (splitmix64, Fisher-Yates), lays out the
        hands and picks the leader (drawing the lot from the same stream)."""
        k = len(g)
        if k == 0:
            return
        t = self.tables
        seeds = self.rng.integers(0, 2**63, size=k, dtype=np.uint64)
        rule = self.rules.first_lead if first else self.rules.next_lead
        if rule == "heaviest":
            lead_rule = LEAD_HEAVIEST
        elif first:
            lead_rule = LEAD_LOT
        else:
            lead_rule = LEAD_ROTATE if rule == "rotate" else LEAD_WINNER
        _deal_kernel(
            g,
            seeds,
            lead_rule,
            self.rules.resolved_hand_size,
            t.lead_rank,
            self.owner,
            self.left,
            self.right,
            self.current,
            self.leader,
            self.forced,
            self.counts,
            self.voids,
            self.passes,
            self.opening,
            self.num_moves,
            self.round_number,
            self.over,
            self.last_winner,
        )

    def dealt_hands(self, game: int) -> list[int]:
        """One game's hands as dealt this round (bitmasks): held tiles plus those placed."""
        held = self.owner[game]
        hands = [sum(1 << int(i) for i in np.flatnonzero(held == seat)) for seat in range(self.tables.num_players)]
        for j in range(int(self.num_moves[game])):
            action = int(self.moves[game, j])
            if action != self.tables.pass_action:
                hands[int(self.move_seats[game, j])] |= 1 << (action >> 1)
        return hands

    def legal_mask(self, games: np.ndarray | None = None) -> np.ndarray:
        """(k, 2T+1) bool: the legal actions of the seat to move (docs/environments.md, Actions). All
        False in a game whose round is over."""
        t = self.tables
        g = self.all_games if games is None else np.asarray(games, dtype=np.int64)
        mask = np.zeros((len(g), t.num_actions), dtype=bool)
        _legal_kernel(g, self.owner, self.left, self.right, self.current, self.forced, self.over, t.low, t.high, mask)
        return mask

    def describe_legal(self, game: int) -> str:
        ts = self.rules.tile_set
        legal = np.flatnonzero(self.legal_mask(np.array([game]))[0])
        return ", ".join(f"{a} ({ts.describe_action(int(a))})" for a in legal)

    # -- play ---------------------------------------------------------------------------------

    def step(self, actions: np.ndarray, games: np.ndarray | None = None, check: bool = True) -> BatchResults:
        """Play ``actions[j]`` for the seat to move in game ``games[j]`` (default: every game,
        in order). ValueError naming the first bad game and its legal actions if any action
        is illegal (then nothing has changed); ``check=False`` skips that check for callers
        that took the actions from :meth:`legal_mask`. Returns the rounds this step ended."""
        t = self.tables
        g = self.all_games if games is None else np.asarray(games, dtype=np.int64)
        a = np.asarray(actions, dtype=np.int64)
        if check:
            self.check_actions(a, g)
        k = len(g)
        t = self.tables
        out = BatchResults.empty(k, t.num_players, t.num_sides)
        ended = _move_kernel(g, a, False, *self._no_choice, self._state(), self._constants(), out.arrays())
        return out.head(ended)

    def play_until_decision(
        self,
        games: np.ndarray,
        learners: np.ndarray,
        seat_policies: np.ndarray,
        policies: CompiledPolicies,
        streams: np.ndarray,
        skip_forced: bool,
        first_moves: np.ndarray | None = None,
        check: bool = True,
    ) -> tuple[np.ndarray, BatchResults]:
        """Play each game in ``games`` in compiled code until the seat ``learners[g]`` must
        decide (DECISION; with ``skip_forced`` its forced moves are played too), a round ends
        (ROUND_OVER) or a seat whose policy index ``seat_policies[g, seat]`` is -1 is to move
        (EXTERNAL: the caller moves it). The other seats play ``policies``; uniform ones draw
        from ``streams[g]`` (uint64, advanced in place). ``first_moves[j]``, if given (a legal
        move in every game), is played in game ``games[j]`` before anything else, by whichever
        seat is to move (ValueError as :meth:`step`'s unless ``check`` is False, and always for
        a wrong shape). Returns each game's status and the results
        of the rounds that ended. The vector env's scripted opponents run here, and a search's
        playouts of its moves."""
        g = np.asarray(games, dtype=np.int64)
        t = self.tables
        if first_moves is None:
            first = np.full(len(g), -1, dtype=np.int64)
        else:
            first = np.asarray(first_moves, dtype=np.int64)
            if first.shape != g.shape:  # checked always: the compiled loop reads one per game
                raise ValueError(f"first_moves must have shape {g.shape}, one per game, got {first.shape}")
            if check:
                self.check_actions(first, g)
        out = BatchResults.empty(len(g), t.num_players, t.num_sides)
        status = np.empty(len(g), dtype=np.int64)
        ended = _move_kernel(
            g,
            first,
            True,
            learners,
            bool(skip_forced),
            seat_policies,
            policies.ranks,
            policies.uniform,
            streams,
            status,
            self._state(),
            self._constants(),
            out.arrays(),
        )
        return status, out.head(ended)

    def set_positions(
        self,
        hands: np.ndarray,
        *,
        ends: tuple[int, int] | np.ndarray | None,
        played: np.ndarray,
        current: int | np.ndarray,
        leader: int | np.ndarray,
        passes: int | np.ndarray,
        voids: np.ndarray,
        opening: int | np.ndarray | None = None,
        scores: np.ndarray | None = None,
        record: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Lay out every game mid-round (a search's sampled worlds): ``hands`` (N, P, T) bool
        per game; the public facts either shared by all games (``ends`` a pair or None,
        ``played`` (T,), ``current``, ``leader``, ``passes``, ``voids`` (P,), ``opening``: the tile
        the line opened with, which observations show) or one per game (``ends`` (N, 2) with -1
        for an empty line, ``played`` (N, T), ``current``/``leader``/``passes``/``opening`` (N,)
        with -1 for no opening yet, ``voids`` (N, P)); ``scores`` the match score per side ((S,)
        or (N, S); zeros by default). ``record``: the round's moves so far as (moves, move_seats,
        num_moves), (N, K) action ids and (N, K) seats, oldest first, of which each game's first
        ``num_moves`` (N,) count (what a "tracked" observation reads); None: records start empty."""
        t = self.tables
        shape = (self.num_games, t.num_tiles)
        hands = np.asarray(hands, dtype=bool)
        if hands.shape != (self.num_games, t.num_players, t.num_tiles):
            raise ValueError(f"hands must have shape {(self.num_games, t.num_players, t.num_tiles)}, got {hands.shape}")
        _owner_kernel(hands, np.broadcast_to(np.asarray(played, dtype=bool), shape), self.owner, self.counts)
        line_ends = np.asarray((-1, -1) if ends is None else ends)
        self.left[:], self.right[:] = line_ends[..., 0], line_ends[..., 1]
        self.current[:] = current
        self.leader[:] = leader
        self.forced[:] = -1
        self.passes[:] = passes
        self.voids[:] = voids
        self.opening[:] = -1 if opening is None else opening
        if record is None:
            self.num_moves[:] = 0
        else:
            moves, move_seats, num_moves = record
            if moves.ndim != 2 or moves.shape != move_seats.shape or moves.shape[0] != self.num_games:
                raise ValueError(
                    f"record moves and move_seats are ({self.num_games}, K) arrays, got {moves.shape} and {move_seats.shape}"
                )
            if moves.shape[1] > t.max_moves:
                raise ValueError(f"a round's record holds at most {t.max_moves} moves, got {moves.shape[1]}")
            num_moves = np.broadcast_to(num_moves, (self.num_games,))
            if (num_moves < 0).any() or (num_moves > moves.shape[1]).any():
                raise ValueError(
                    f"record num_moves must be in 0..{moves.shape[1]} (the moves given), got {num_moves.tolist()}"
                )
            self.moves[:, : moves.shape[1]] = moves
            self.move_seats[:, : moves.shape[1]] = move_seats
            self.num_moves[:] = num_moves
        self.scores[:] = 0 if scores is None else scores
        self.over[:] = False
        self.episode_over[:] = False

    def _state(self) -> tuple:
        return (
            self.owner,
            self.left,
            self.right,
            self.current,
            self.leader,
            self.counts,
            self.voids,
            self.passes,
            self.opening,
            self.moves,
            self.move_seats,
            self.num_moves,
            self.scores,
            self.over,
            self.episode_over,
            self.last_winner,
            self.forced,
        )

    def _constants(self) -> tuple:
        t = self.tables
        rules = self.rules
        return (
            t.low,
            t.high,
            t.pips,
            t.side_of,
            t.num_sides,
            t.pass_action,
            rules.club_doubling,
            rules.blocked_scoring == "subtract_own",
            rules.partnership,
            rules.resolved_target,
            self.episode == "round",
        )

    def check_actions(self, actions: np.ndarray, games: np.ndarray) -> None:
        """ValueError naming the first game whose action is not legal, with its legal actions."""
        t = self.tables
        if actions.shape != games.shape:
            raise ValueError(f"actions must have shape {games.shape}, got {actions.shape}")
        if self.over[games].any():
            bad = int(games[self.over[games]][0])
            raise ValueError(f"game {bad}: the round is over; advance() deals the next one")
        in_range = (actions >= 0) & (actions < t.num_actions)
        legal = self.legal_mask(games)
        ok = in_range.copy()
        ok[in_range] = legal[np.flatnonzero(in_range), actions[in_range]]
        if not ok.all():
            j = int(np.flatnonzero(~ok)[0])
            game = int(games[j])
            raise ValueError(
                f"game {game}: action {int(actions[j])} is not legal for seat {int(self.current[game])}; "
                f"legal actions: {self.describe_legal(game)}"
            )


def random_legal_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(k,) one uniformly random legal action per row of ``masks`` (k, A) bool."""
    out = np.empty(len(masks), dtype=np.int64)
    _random_legal_kernel(masks, rng.random(len(masks)), out)
    return out


# -- compiled kernels: one loop over the selected games, every rule as in engine.Round ------------
# nogil: the kernels touch no Python object, so other threads (a server's requests) run meanwhile.


@njit(cache=True, nogil=True)
def _random_legal_kernel(masks, uniforms, out):  # pragma: no cover - compiled
    """out[j]: the int(uniforms[j] * count)-th legal action of row j, in action order."""
    legal = np.empty(masks.shape[1], dtype=np.int64)
    for j in range(masks.shape[0]):
        count = 0
        for a in range(masks.shape[1]):  # branch-free append: always write, advance if legal
            legal[count] = a
            count += masks[j, a]
        out[j] = legal[int(uniforms[j] * count)] if count else -1


@njit(cache=True, nogil=True)
def _legal_kernel(games, owner, left, right, current, forced, over, low, high, mask):  # pragma: no cover - compiled
    """Row j of ``mask``: the legal actions of game games[j]'s seat to move."""
    for j in range(len(games)):
        if not over[games[j]]:
            _legal_row(games[j], owner, left, right, current, forced, low, high, mask[j])


@njit(cache=True, inline="always")
def _legal_row(g, owner, left, right, current, forced, low, high, row):  # pragma: no cover - compiled
    """Fill ``row`` with game g's legal actions for the seat to move; return how many.
    Branch-free over the tiles (every cell written): which tiles fit is random, so
    branches would mispredict."""
    num_tiles = owner.shape[1]
    seat = current[g]
    end_l, end_r = left[g], right[g]
    opening = end_l < 0
    heaviest = forced[g]
    count = 0
    for i in range(num_tiles):
        held = owner[g, i] == seat
        if opening:  # any held tile on end 0, or only the forced heaviest one
            fits_l = held & ((heaviest < 0) | (heaviest == i))
            fits_r = False
        else:
            fits_l = held & ((low[i] == end_l) | (high[i] == end_l))
            fits_r = held & ((low[i] == end_r) | (high[i] == end_r))
        row[2 * i] = fits_l
        row[2 * i + 1] = fits_r
        count += fits_l + fits_r
    row[2 * num_tiles] = count == 0  # docs/rules.md, pass only when nothing fits
    return max(count, 1)


@njit(cache=True, nogil=True)
def _deal_kernel(
    games,
    seeds,
    lead_rule,
    hand_size,
    lead_rank,
    owner,
    left,
    right,
    current,
    leader,
    forced,
    counts,
    voids,
    passes,
    opening,
    num_moves,
    round_number,
    over,
    last_winner,
):  # pragma: no cover - compiled
    """Deal game games[j] from its seed: the tiles shuffled (Fisher-Yates), hand_size to each
    seat in turn, the rest out of play; then the leader by ``lead_rule`` (a lot: from the
    same stream)."""
    num_players = counts.shape[1]
    num_tiles = owner.shape[1]
    order = np.empty(num_tiles, dtype=np.int64)
    for j in range(len(games)):
        g = games[j]
        state = seeds[j]
        for i in range(num_tiles):
            order[i] = i
        state = shuffle_in_place(order, state)
        for place in range(num_tiles):
            owner[g, order[place]] = place // hand_size if place < num_players * hand_size else OUT_OF_PLAY
        heaviest = -1
        if lead_rule == LEAD_HEAVIEST:  # the heaviest tile dealt leads (doubles first)
            best = -1
            for i in range(num_tiles):
                if owner[g, i] >= 0 and lead_rank[i] > best:
                    best, heaviest = lead_rank[i], i
            seat = owner[g, heaviest]
        elif lead_rule == LEAD_LOT:
            u, state = next_random(state)
            seat = int(u * num_players)
        elif lead_rule == LEAD_ROTATE or last_winner[g] < 0:  # after a tied block the lead rotates
            seat = (leader[g] + 1) % num_players
        else:  # the previous winner leads
            seat = last_winner[g]
        forced[g] = heaviest
        leader[g] = seat
        current[g] = seat
        left[g] = -1
        right[g] = -1
        for s in range(num_players):
            counts[g, s] = hand_size
            voids[g, s] = 0
        passes[g] = 0
        opening[g] = -1
        num_moves[g] = 0
        round_number[g] += 1
        over[g] = False


def mask_bits(mask: int, width: int) -> np.ndarray:
    """(width,) bool: bit i of the int bitmask ``mask`` (a set of tiles or suits) at index i,
    for its low ``width`` bits.

    Examples:
        >>> mask_bits(0b1011, 5).tolist()
        [True, True, False, True, False]
    """
    raw = np.frombuffer(int(mask).to_bytes((width + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, count=width, bitorder="little").view(bool)


@njit(cache=True, nogil=True)
def _owner_kernel(hands, played, owner, counts):  # pragma: no cover - compiled
    """owner[g, t]: the seat whose ``hands[g]`` row holds tile t (the last, should two), PLAYED
    where ``played[g, t]``, else OUT_OF_PLAY; counts[g, s]: the tiles ``hands[g, s]`` holds.
    One pass in compiled code: a search lays out its worlds at every decision."""
    num_players, num_tiles = hands.shape[1], hands.shape[2]
    for g in range(hands.shape[0]):
        for s in range(num_players):
            counts[g, s] = 0
        for t in range(num_tiles):
            code = OUT_OF_PLAY
            for s in range(num_players):
                if hands[g, s, t]:
                    code = s
                    counts[g, s] += 1
            owner[g, t] = PLAYED if played[g, t] else code


@njit(cache=True, nogil=True)
def _move_kernel(
    games, actions, choose, learners, skip_forced, seat_policies, ranks, uniform, streams, status, state, constants, out
):  # pragma: no cover - compiled
    """Play moves in each game games[j] (engine.Round.apply), scoring each round that ends
    (docs/rules.md, domino award, blocked award, match target) into the next row of ``out``;
    returns how many ended. Every rule of a move is written once, here, for both callers:

    - ``choose`` False (:meth:`BatchedGames.step`): one move per game, ``actions[j]``;
    - ``choose`` True (:meth:`BatchedGames.play_until_decision`): ``actions[j]`` first where
      it is not -1 (a search's move in a sampled world), then moves until the seat
      ``learners[g]`` must decide (``status[j]`` DECISION; with ``skip_forced`` its forced
      moves are played), the round ends (ROUND_OVER) or a seat without a compiled policy
      (``seat_policies[g, seat]`` -1) is to move (EXTERNAL). A compiled policy plays the
      highest-``ranks`` legal action (the first on ties), or where ``uniform`` a uniformly
      random one from the game's splitmix64 stream ``streams[g]``.

    One kernel rather than a helper called per move: passing the ~30 state arrays to a
    compiled helper refcounts each of them on every call (measured 10x slower).
    """
    (
        owner,
        left,
        right,
        current,
        leader,
        counts,
        voids,
        passes,
        opening,
        moves,
        move_seats,
        num_moves,
        scores,
        over,
        episode_over,
        last_winner,
        forced,
    ) = state
    (
        low,
        high,
        pips,
        side_of,
        num_sides,
        pass_action,
        club_doubling,
        subtract_own,
        partnership,
        target,
        round_episode,
    ) = constants
    (
        out_games,
        out_end,
        out_winner,
        out_side,
        out_award,
        out_doubled,
        out_hand_pips,
        out_side_pips,
        out_episode_over,
        out_episode_winner,
    ) = out
    num_players = counts.shape[1]
    num_tiles = owner.shape[1]
    num_actions = ranks.shape[1]
    row = np.empty(num_actions, dtype=np.bool_)
    ended = 0
    for j in range(len(games)):
        g = games[j]
        given = actions[j]  # the move to play, or (choose) the first one: -1 for none
        while True:
            if choose and given < 0:
                seat = current[g]
                count = _legal_row(g, owner, left, right, current, forced, low, high, row)
                policy = -1  # the learner's forced move: the only legal action
                if seat == learners[g]:
                    if not (skip_forced and count == 1):
                        status[j] = DECISION
                        break
                else:
                    policy = seat_policies[g, seat]
                    if policy < 0:
                        status[j] = EXTERNAL
                        break
                a = -1
                if policy >= 0 and uniform[policy]:
                    u, streams[g] = next_random(streams[g])
                    pick = int(u * count)
                    for b in range(num_actions):
                        pick -= row[b]
                        if pick < 0:
                            a = b
                            break
                else:
                    best = -(2**62)
                    for b in range(num_actions):
                        rank = 0 if policy < 0 else ranks[policy, b]
                        if row[b] and rank > best:
                            best, a = rank, b
            else:
                a, given = given, -1
            seat = current[g]
            end_l, end_r = left[g], right[g]
            m = num_moves[g]
            moves[g, m] = a
            move_seats[g, m] = seat
            num_moves[g] = m + 1
            domino = False
            club_tile = False
            if a == pass_action:
                # docs/rules.md, must play. A pass proves the seat holds neither end's suit.
                voids[g, seat] |= (1 << end_l) | (1 << end_r)
                passes[g] += 1
                if passes[g] < num_players:
                    current[g] = (seat + 1) % num_players
                    if choose:
                        continue  # this game's next move
                    break
            else:
                i = a >> 1
                x, y = low[i], high[i]
                if end_l < 0:
                    opening[g] = i
                    fitted_both = False
                else:
                    fitted_both = (x == end_l or y == end_l) and (x == end_r or y == end_r)
                left[g], right[g] = ends_after_move(end_l, end_r, x, y, a)
                owner[g, i] = PLAYED
                counts[g, seat] -= 1
                passes[g] = 0
                if counts[g, seat] > 0:
                    current[g] = (seat + 1) % num_players
                    if choose:
                        continue  # this game's next move
                    break
                domino = True
                club_tile = x == y or fitted_both
            hand_pips = out_hand_pips[ended]
            side_pips = out_side_pips[ended]
            for t in range(num_tiles):
                if owner[g, t] >= 0:
                    hand_pips[owner[g, t]] += pips[t]
            for s in range(num_players):
                side_pips[side_of[s]] += hand_pips[s]
            total = side_pips.sum()
            doubled = False
            if domino:
                winner = seat
                side = side_of[seat]
                award = total - side_pips[side]  # all opponents' pips; a partner is no opponent
                if club_doubling and club_tile:
                    award *= 2
                    doubled = True
            else:
                lowest = side_pips.min()
                side = -1
                ties = 0
                for s in range(num_sides):
                    if side_pips[s] == lowest:
                        ties += 1
                        side = s
                if ties > 1:  # a tie for lowest scores nobody
                    side, winner, award = -1, -1, 0
                else:
                    others = total - lowest
                    award = others - lowest if subtract_own else others
                    winner = side
                    if partnership:  # the lighter partner; on a tie, the first from the leader
                        a_pips, b_pips = hand_pips[side], hand_pips[side + 2]
                        if b_pips < a_pips or (
                            b_pips == a_pips and (side + 2 - leader[g]) % num_players < (side - leader[g]) % num_players
                        ):
                            winner = side + 2
            # The match: the award, then the target (reaching it wins; a tie for the highest draws).
            if side >= 0:
                scores[g, side] += award
            best = scores[g].max()
            leaders = 0
            best_side = -1
            for s in range(num_sides):
                if scores[g, s] == best:
                    leaders += 1
                    best_side = s
            if round_episode:
                over_now, episode_winner = True, side
            else:
                over_now = best >= target
                episode_winner = best_side if over_now and leaders == 1 else -1
            over[g] = True
            episode_over[g] = over_now
            last_winner[g] = winner
            out_games[ended] = g
            out_end[ended] = DOMINO if domino else BLOCKED
            out_winner[ended] = winner
            out_side[ended] = side
            out_award[ended] = award
            out_doubled[ended] = doubled
            out_episode_over[ended] = over_now
            out_episode_winner[ended] = episode_winner
            ended += 1
            if choose:
                status[j] = ROUND_OVER
            break
    return ended


@njit(cache=True, nogil=True)
def next_random(rng_state):  # pragma: no cover - compiled
    """splitmix64: a uniform float in [0, 1) and the next state."""
    rng_state = rng_state + np.uint64(0x9E3779B97F4A7C15)
    z = rng_state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0), rng_state


@njit(cache=True, inline="always")
def shuffle_in_place(values, rng_state):  # pragma: no cover - compiled
    """Fisher-Yates shuffle of ``values`` in place from a splitmix64 stream; the next state."""
    for i in range(len(values) - 1, 0, -1):
        u, rng_state = next_random(rng_state)
        k = int(u * (i + 1))
        values[i], values[k] = values[k], values[i]
    return rng_state


@njit(cache=True, inline="always")
def ends_after_move(left, right, x, y, action):  # pragma: no cover - compiled
    """The line's ends after placing tile (x, y) by ``action`` (not the pass) on ends ``left``,
    ``right`` (-1: the opening), as :func:`block_env.tiles.ends_after`: the opening's halves
    are the ends; a tile on an end showing v turns that end to the tile's other half."""
    if left < 0:
        return x, y
    if action & 1:
        return left, x + y - right
    return x + y - left, right


@njit(cache=True, inline="always")
def follows_ends(x, y, left, right):  # pragma: no cover - compiled
    """Whether tile (x, y) could be placed on an end showing ``left`` or ``right``."""
    return x == left or y == left or x == right or y == right
