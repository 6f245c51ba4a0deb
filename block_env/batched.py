"""N games of Block held in numpy arrays and stepped together: the batched engine.

The same rules as :mod:`block_env.engine` (a test plays the same deals and actions through
both, for every preset, and compares legal actions, ends, passes, results and awards at every
step), laid out for throughput: every state field is an array over games, and one call
advances every selected game by one player action. Pure numpy, deterministic under a seed.

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

from block_env.options import EPISODES, REWARDS
from block_env.rules import Rules, check_choice

#: ``owner`` codes besides seats.
OUT_OF_PLAY = -1
PLAYED = -2
#: ``end`` codes of a finished round (RoundResult.end "domino" / "blocked").
DOMINO, BLOCKED = 0, 1
END_NAMES = ("domino", "blocked")


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
    lead_rank: np.ndarray  # (T,) RULES.md heaviest lead: doubles by value above any other tile
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

    def as_dicts(self) -> list[dict]:
        """The results as ``RoundResult.as_dict()`` gives them, one per game."""
        return [
            {
                "end": END_NAMES[int(self.end[j])],
                "winner": None if self.winner[j] < 0 else int(self.winner[j]),
                "winning_side": None if self.winning_side[j] < 0 else int(self.winning_side[j]),
                "award": int(self.award[j]),
                "doubled": bool(self.doubled[j]),
                "hand_pips": self.hand_pips[j].tolist(),
                "side_pips": self.side_pips[j].tolist(),
            }
            for j in range(len(self.games))
        ]

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
        seed: seeds the deals and lots (numpy's PCG64); ``reset(seed)`` reseeds.
    """

    def __init__(self, rules: Rules, num_games: int, *, episode: str = "round", seed: int | None = None) -> None:
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games must be a positive int, got {num_games!r}")
        check_choice("episode", episode, EPISODES)
        self.rules = rules
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
        self.moves = np.zeros((n, t.max_moves), dtype=np.int64)
        self.move_seats = np.zeros((n, t.max_moves), dtype=np.int64)
        self.num_moves = np.zeros(n, dtype=np.int64)
        self.scores = np.zeros((n, t.num_sides), dtype=np.int64)
        self.round_number = np.zeros(n, dtype=np.int64)
        self.over = np.zeros(n, dtype=bool)  # the round ended; advance() deals the next
        self.episode_over = np.zeros(n, dtype=bool)
        self.last_winner = np.full(n, -1, dtype=np.int64)
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
        where the episode is over (RULES.md: later leaders, match target)."""
        g = np.asarray(games, dtype=np.int64)
        if not self.over[g].all():
            raise ValueError(f"games {g[~self.over[g]].tolist()} have not finished their round")
        new = self.episode_over[g]
        if new.any():
            self.reset(games=g[new])
        if (~new).any():
            self._deal(g[~new], first=False)

    def _deal(self, g: np.ndarray, first: bool) -> None:
        t = self.tables
        rules = self.rules
        k = len(g)
        if k == 0:
            return
        p, size = t.num_players, rules.resolved_hand_size
        order = self.rng.random((k, t.num_tiles)).argsort(axis=1)[:, : p * size]
        owner = np.full((k, t.num_tiles), OUT_OF_PLAY, dtype=np.int8)
        np.put_along_axis(owner, order, np.repeat(np.arange(p, dtype=np.int8), size)[None, :], axis=1)
        rule = rules.first_lead if first else rules.next_lead
        forced = np.full(k, -1, dtype=np.int64)
        if rule == "heaviest":
            forced = np.where(owner >= 0, t.lead_rank[None, :], -1).argmax(axis=1)
            leader = owner[np.arange(k), forced].astype(np.int64)
        elif first or rule == "rotate":
            leader = self.rng.integers(p, size=k) if first else (self.leader[g] + 1) % p
        else:  # "winner": the previous winner leads; after a tied block the lead rotates
            previous = self.last_winner[g]
            leader = np.where(previous >= 0, previous, (self.leader[g] + 1) % p)
        self.owner[g] = owner
        self.left[g] = -1
        self.right[g] = -1
        self.current[g] = leader
        self.leader[g] = leader
        self.forced[g] = forced
        self.counts[g] = size
        self.voids[g] = 0
        self.passes[g] = 0
        self.opening[g] = -1
        self.num_moves[g] = 0
        self.round_number[g] += 1
        self.over[g] = False

    def set_round(self, game: int, hands: list[int], leader: int, forced: int = -1) -> None:
        """Lay out one game's round from hands as bitmasks (a scripted deal): its episode's
        first round, with the scores reset. For tests and scripted scenarios."""
        t = self.tables
        owner = np.full(t.num_tiles, OUT_OF_PLAY, dtype=np.int8)
        for seat, hand in enumerate(hands):
            for i in range(t.num_tiles):
                if hand >> i & 1:
                    owner[i] = seat
        self.owner[game] = owner
        self.counts[game] = [h.bit_count() for h in hands]
        self.left[game] = self.right[game] = -1
        self.current[game] = self.leader[game] = leader
        self.forced[game] = forced
        self.voids[game] = 0
        self.passes[game] = 0
        self.opening[game] = -1
        self.num_moves[game] = 0
        self.scores[game] = 0
        self.round_number[game] = 1
        self.over[game] = False
        self.episode_over[game] = False

    # -- queries ------------------------------------------------------------------------------

    def dealt_hands(self, game: int) -> list[int]:
        """One game's hands as dealt this round (bitmasks): held tiles plus those placed."""
        held = self.owner[game]
        hands = [sum(1 << int(i) for i in np.flatnonzero(held == seat)) for seat in range(self.tables.num_players)]
        for j in range(int(self.num_moves[game])):
            action = int(self.moves[game, j])
            if action != self.tables.pass_action:
                hands[int(self.move_seats[game, j])] |= 1 << (action >> 1)
        return hands

    def hands_of(self, seats: np.ndarray, games: np.ndarray | None = None) -> np.ndarray:
        """(k, T) bool: the tiles each game's ``seats`` entry holds."""
        owner = self.owner if games is None else self.owner[games]
        return owner == seats[:, None]

    def legal_mask(self, games: np.ndarray | None = None) -> np.ndarray:
        """(k, 2T+1) bool: the legal actions of the seat to move (CONTRACT.md layout). All
        False in a game whose round is over."""
        t = self.tables
        g = self.all_games if games is None else games
        left, right = self.left[g], self.right[g]
        hand = self.hands_of(self.current[g], None if games is None else g)
        opening = left < 0
        on_left = hand & t.suits[np.maximum(left, 0)]
        on_right = hand & t.suits[np.maximum(right, 0)] & ~opening[:, None]
        # Under "heaviest" leads the opening tile is forced: the leader's only legal action.
        forced = self.forced[g]
        rows = np.flatnonzero(opening & (forced >= 0))
        if len(rows):
            hand = hand.copy()
            hand[rows] = False
            hand[rows, forced[rows]] = True
        mask = np.zeros((len(g), t.num_actions), dtype=bool)
        mask[:, 0 : 2 * t.num_tiles : 2] = np.where(opening[:, None], hand, on_left)
        mask[:, 1 : 2 * t.num_tiles : 2] = on_right
        mask[:, t.pass_action] = ~mask[:, : t.pass_action].any(axis=1)
        mask[self.over[g]] = False
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
        cur = self.current[g]
        left, right = self.left[g], self.right[g]
        nm = self.num_moves[g]
        self.moves[g, nm] = a
        self.move_seats[g, nm] = cur
        self.num_moves[g] = nm + 1
        is_pass = a == t.pass_action
        place = ~is_pass
        # RULES.md: must play. A pass proves the seat holds neither end's suit.
        passed = np.flatnonzero(is_pass)
        if len(passed):
            gp = g[passed]
            self.voids[gp, cur[passed]] |= (1 << left[passed]) | (1 << right[passed])
        passes = np.where(place, 0, self.passes[g] + 1)
        self.passes[g] = passes
        tile = np.where(place, a >> 1, 0)
        x, y = t.low[tile], t.high[tile]
        opening = left < 0
        fitted_both = ~opening & t.suits[np.maximum(left, 0), tile] & t.suits[np.maximum(right, 0), tile]
        on_right = (a & 1) == 1
        new_left = np.where(opening, x, np.where(on_right, left, x + y - left))
        new_right = np.where(opening, y, np.where(on_right, x + y - right, right))
        self.left[g] = np.where(place, new_left, left)
        self.right[g] = np.where(place, new_right, right)
        placed = np.flatnonzero(place)
        gpl, tpl, spl = g[placed], tile[placed], cur[placed]
        self.owner[gpl, tpl] = PLAYED
        self.counts[gpl, spl] -= 1
        first = placed[opening[placed]]
        self.opening[g[first]] = tile[first]
        domino = np.zeros(k, dtype=bool)
        domino[placed] = self.counts[gpl, spl] == 0
        blocked = is_pass & (passes == t.num_players)
        ended = domino | blocked
        self.current[g] = np.where(ended, cur, (cur + 1) % t.num_players)
        done = np.flatnonzero(ended)
        club_tile = (x == y) | fitted_both
        return self._finish(g[done], domino[done], cur[done], club_tile[done])

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

    def _finish(self, g: np.ndarray, domino: np.ndarray, went_out: np.ndarray, club_tile: np.ndarray) -> BatchResults:
        """Score the rounds that ended in games ``g`` (RULES.md: domino award, blocked award)."""
        t = self.tables
        rules = self.rules
        k = len(g)
        owner = self.owner[g]
        hand_pips = np.zeros((k, t.num_players), dtype=np.int64)
        for seat in range(t.num_players):
            hand_pips[:, seat] = (owner == seat) @ t.pips
        side_pips = np.zeros((k, t.num_sides), dtype=np.int64)
        for seat in range(t.num_players):
            side_pips[:, t.side_of[seat]] += hand_pips[:, seat]
        total = side_pips.sum(axis=1)
        rows = np.arange(k)
        # Domino: all opponents' pips (a partner's hand is not an opponent's).
        domino_side = t.side_of[went_out]
        domino_award = total - side_pips[rows, domino_side]
        doubled = domino & rules.club_doubling & club_tile
        domino_award = np.where(doubled, 2 * domino_award, domino_award)
        # Blocked: the unique lightest side scores; a tie scores nobody.
        lowest = side_pips.min(axis=1)
        unique = (side_pips == lowest[:, None]).sum(axis=1) == 1
        lightest = side_pips.argmin(axis=1)
        others = total - lowest
        blocked_award = others - lowest if rules.blocked_scoring == "subtract_own" else others
        blocked_winner = self._lightest_seat(g, lightest, hand_pips)
        winning_side = np.where(domino, domino_side, np.where(unique, lightest, -1))
        winner = np.where(domino, went_out, np.where(unique, blocked_winner, -1))
        award = np.where(domino, domino_award, np.where(unique, blocked_award, 0))
        # The match: award, then the target (reaching it wins; a tie for the highest is a draw).
        scored = np.flatnonzero(winning_side >= 0)
        self.scores[g[scored], winning_side[scored]] += award[scored]
        scores = self.scores[g]
        best = scores.max(axis=1)
        reached = best >= rules.resolved_target
        alone = (scores == best[:, None]).sum(axis=1) == 1
        if self.episode == "round":  # the round is the episode: its winner wins it
            episode_over, episode_winner = np.ones(k, dtype=bool), winning_side
        else:
            episode_over, episode_winner = reached, np.where(reached & alone, scores.argmax(axis=1), -1)
        self.over[g] = True
        self.episode_over[g] = episode_over
        self.last_winner[g] = winner
        return BatchResults(
            games=g,
            end=np.where(domino, DOMINO, BLOCKED),
            winner=winner,
            winning_side=winning_side,
            award=award,
            doubled=doubled,
            hand_pips=hand_pips,
            side_pips=side_pips,
            episode_over=episode_over,
            episode_winner=episode_winner,
        )

    def _lightest_seat(self, g: np.ndarray, side: np.ndarray, hand_pips: np.ndarray) -> np.ndarray:
        """The lightest seat of each winning side; on a tie, the first from the leader."""
        if not self.rules.partnership:
            return side  # a side is one seat
        p = self.tables.num_players
        first, second = side, side + 2
        # Seat order from the leader: (seat - leader) % p.
        lead = self.leader[g]
        first_earlier = (first - lead) % p < (second - lead) % p
        a, b = hand_pips[np.arange(len(g)), first], hand_pips[np.arange(len(g)), second]
        return np.where(a < b, first, np.where(b < a, second, np.where(first_earlier, first, second)))
