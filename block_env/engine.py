"""The Block dominoes rules engine: rounds and matches (docs/rules.md).

Pure Python + the standard library: no PettingZoo, no Gymnasium, no numpy in the hot path.
A :class:`Round` is one deal played out; a :class:`Match` deals rounds until the target.
Both are deterministic under a seed, and ``copy()`` is cheap so that search agents can
simulate from any position.

Actions (docs/environments.md, Actions): ``2*i + e`` places tile i on end e (0 left, 1 right); ``2*T`` is
the pass, legal only when nothing fits (a forced pass). The engine validates every action
before changing anything, so a refused action leaves the state exactly as it was.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from block_env.options import REWARDS
from block_env.rules import Rules
from block_env.tiles import Tile, TileSet, bit_indices, format_tile, replay_ends
from block_env.validation import is_int

DOMINO = "domino"
BLOCKED = "blocked"


@dataclass(frozen=True)
class RoundResult:
    """How a round ended and who scored (docs/rules.md, domino award, blocked award).

    Attributes:
        end: "domino" (a player placed their last tile) or "blocked" (every player passed).
        winner: the seat that went out, or in a blocked round the lightest seat of the
            winning side; None after a tied block.
        winning_side: the side that scores, or None after a tied block.
        award: points the winning side scores (0 after a tied block).
        doubled: the award was doubled by club_doubling.
        hand_pips: pips left in each seat's hand.
        side_pips: pips left on each side (a partnership adds both hands).

    Examples:
        >>> from block_env import RoundResult
        >>> result = RoundResult("domino", winner=0, winning_side=0, award=12, doubled=False, hand_pips=(0, 12), side_pips=(0, 12))
        >>> result.side_values("zero_sum")
        [12.0, -12.0]
    """

    end: str
    winner: int | None
    winning_side: int | None
    award: int
    doubled: bool
    hand_pips: tuple[int, ...]
    side_pips: tuple[int, ...]

    @property
    def num_sides(self) -> int:
        return len(self.side_pips)

    def side_values(
        self, mode: str = "zero_sum", *, episode_winner: int | None = None, episode_over: bool = True
    ) -> list[float]:
        """Each side's value of this round under a reward mode (block_env.options.REWARDS).

        - "zero_sum": the winning side +award, every other side -award/(S-1), S sides;
        - "points": the winning side +award, everyone else 0 (docs/environments.md);
        - "win_loss": +1 to ``episode_winner`` (the side that won the episode: the round,
          or the match), -1/(S-1) to the others, and 0 to all unless ``episode_over``.

        A tied block is worth 0 to everyone in every mode.
        """
        sides = self.num_sides
        if mode == "points":
            out = [0.0] * sides
            if self.winning_side is not None:
                out[self.winning_side] = float(self.award)
            return out
        if mode == "zero_sum":
            winner, size = self.winning_side, float(self.award)
        elif mode == "win_loss":
            winner, size = (episode_winner if episode_over else None), 1.0
        else:
            raise ValueError(f"reward mode must be one of {', '.join(map(repr, REWARDS))}; got {mode!r}")
        if winner is None:
            return [0.0] * sides
        out = [-size / (sides - 1)] * sides
        out[winner] = size
        return out

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RoundResult:
        """The inverse of :meth:`as_dict` (e.g. a round record of an arena report)."""
        return cls(
            end=values["end"],
            winner=values["winner"],
            winning_side=values["winning_side"],
            award=values["award"],
            doubled=values["doubled"],
            hand_pips=tuple(values["hand_pips"]),
            side_pips=tuple(values["side_pips"]),
        )

    def as_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready values (seats and sides as ints)."""
        return {
            "end": self.end,
            "winner": self.winner,
            "winning_side": self.winning_side,
            "award": self.award,
            "doubled": self.doubled,
            "hand_pips": list(self.hand_pips),
            "side_pips": list(self.side_pips),
        }


@dataclass(frozen=True)
class PublicView:
    """What one seat knows at the table: its own hand plus everything public.

    Seat-relative, like the player observations: relative seat 0 is this seat, 1 the next
    seat clockwise, and relative side 0 is this seat's side. Tile sets are int bitmasks over
    tile indices; ``voids[r]`` is a bitmask over the suits relative seat r has shown it lacks
    by passing (docs/rules.md, must play). Built from the engine by :meth:`Round.public_view` and
    from an observation by :func:`block_env.observations.read_public_view`: the same facts.

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> view = env.public_view("player_0")
        >>> len(view.hand_tiles), view.ends, view.hand_counts
        (7, None, (7, 7))
    """

    rules: Rules
    hand: int
    ends: tuple[int, int] | None
    played: int
    opening: int | None
    leader: int
    to_play: int | None
    hand_counts: tuple[int, ...]
    voids: tuple[int, ...]
    passes: int
    scores: tuple[int, ...]
    legal: tuple[int, ...]

    @property
    def hand_tiles(self) -> list[Tile]:
        return self.rules.tile_set.tiles_of(self.hand)

    @property
    def unseen(self) -> int:
        """Tiles this seat cannot see: in other hands or out of play."""
        return self.rules.tile_set.full_mask & ~self.hand & ~self.played

    @property
    def partner(self) -> int | None:
        """The partner's relative seat (opposite), or None without partnerships."""
        return partner_of(self.rules, 0)

    @property
    def opponents(self) -> list[int]:
        return opponents_of(self.rules, 0)


def partner_of(rules: Rules, seat: int) -> int | None:
    """The partner of ``seat`` (the seat opposite), or None without partnerships."""
    return (seat + 2) % rules.num_players if rules.partnership else None


def opponents_of(rules: Rules, seat: int) -> list[int]:
    """The seats not on ``seat``'s side, in seat order from the next seat round the table
    (relative seats 1, 2, ... for seat 0)."""
    n = rules.num_players
    return [(seat + r) % n for r in range(1, n) if rules.side_of((seat + r) % n) != rules.side_of(seat)]


class Round:
    """One deal of Block, from the lead to a domino or a block.

    Build one with :meth:`Round.start` (or :meth:`Match`). Hands are bitmasks over tile
    indices; ``left``/``right`` are the open ends' values, -1 before the opening.

    Examples:
        >>> from block_env import Round, Rules
        >>> rules = Rules()
        >>> ts = rules.tile_set
        >>> rnd = Round.start(rules, [ts.mask_of([(1, 4), (2, 2)]), ts.mask_of([(4, 6), (3, 5)])], lead=0)
        >>> rnd.step(ts.action((1, 4), 0)) is None, rnd.ends, rnd.legal_actions() == [ts.action((4, 6), 1)]
        (True, (1, 4), True)
    """

    __slots__ = (
        "rules",
        "tiles",
        "num_players",
        "hands",
        "counts",
        "left",
        "right",
        "current",
        "leader",
        "passes",
        "played",
        "voids",
        "moves",
        "result",
        "forced_opening",
        "_legal",
    )

    def __init__(
        self,
        rules: Rules,
        hands: Sequence[int],
        leader: int,
        forced_opening: int = -1,
    ) -> None:
        """A round about to be led by ``leader``; prefer :meth:`start`, which validates.

        ``forced_opening`` is the index of the tile the leader must open with
        (first_lead/next_lead "heaviest"), or -1 for a free lead.
        """
        self.rules = rules
        self.tiles: TileSet = rules.tile_set
        self.num_players = rules.num_players
        self.hands = list(hands)
        self.counts = [h.bit_count() for h in self.hands]
        self.left = -1
        self.right = -1
        self.current = leader
        self.leader = leader
        self.passes = 0
        self.played = 0
        self.voids = [0] * self.num_players
        self.moves: list[tuple[int, int]] = []
        self.result: RoundResult | None = None
        self.forced_opening = forced_opening
        self._legal: list[int] | None = None

    # -- construction -------------------------------------------------------------------

    @classmethod
    def start(cls, rules: Rules, hands: Sequence[int], lead: int | str) -> Round:
        """Start a round from dealt ``hands`` (bitmasks, one per seat).

        ``lead`` is a seat (a free lead) or ``"heaviest"``: the holder of the heaviest
        double must lead it (docs/rules.md, first lead "heaviest").
        """
        if lead == "heaviest":
            seat, tile = heaviest_holding(rules.tile_set, hands)
            return cls(rules, hands, seat, forced_opening=tile)
        if not isinstance(lead, int) or not 0 <= lead < rules.num_players:
            raise ValueError(f"leader must be a seat 0..{rules.num_players - 1}, got {lead!r}")
        return cls(rules, hands, lead)

    @classmethod
    def from_position(
        cls,
        rules: Rules,
        hands: Sequence[int],
        *,
        ends: tuple[int, int] | None,
        played: int,
        current: int,
        leader: int,
        passes: int = 0,
        voids: Sequence[int] | None = None,
    ) -> Round:
        """A round in the middle of play, e.g. one determinization of a public view.

        Search agents sample the hidden hands and rebuild the position with this.
        The move history is not rebuilt: only what legality and scoring need.
        """
        r = cls(rules, hands, leader)
        r.current = current
        if ends is not None:
            r.left, r.right = ends
        r.played = played
        r.passes = passes
        if voids is not None:
            r.voids = list(voids)
        return r

    @classmethod
    def from_view(cls, view: PublicView, hands: Sequence[int] | None = None) -> Round:
        """The round at ``view``'s position in its seat's frame (that seat is seat 0): the public
        facts (the ends, the tiles played, the leader, passes, voids; the seat to move is the
        view's, seat 0 once the round is over) with ``hands`` dealt (one bitmask per seat, as a
        search samples them), or by default the seat's own hand alone and the others' counts as
        the view shows them, for a resampler to deal. The move history is not rebuilt.

        Examples:
            >>> from block_env import Rules
            >>> rnd = Round.start(Rules(), [0b111, 0b111000], lead=0)
            >>> rnd.apply(0)
            >>> position = Round.from_view(rnd.public_view(1))
            >>> position.ends, position.current, position.counts
            ((0, 0), 0, [3, 2])
        """
        n = view.rules.num_players
        if hands is not None and len(hands) != n:
            raise ValueError(f"hands holds one bitmask per seat ({n}), got {len(hands)}")
        r = cls.from_position(
            view.rules,
            [view.hand] + [0] * (n - 1) if hands is None else hands,
            ends=view.ends,
            played=view.played,
            current=0 if view.to_play is None else view.to_play,
            leader=view.leader,
            passes=view.passes,
            voids=view.voids,
        )
        if hands is None:
            r.counts = list(view.hand_counts)
        return r

    def copy(self) -> Round:
        """An independent copy (the moves list is copied; everything else is immutable)."""
        r = Round.__new__(Round)
        r.rules = self.rules
        r.tiles = self.tiles
        r.num_players = self.num_players
        r.hands = self.hands.copy()
        r.counts = self.counts.copy()
        r.left = self.left
        r.right = self.right
        r.current = self.current
        r.leader = self.leader
        r.passes = self.passes
        r.played = self.played
        r.voids = self.voids.copy()
        r.moves = self.moves.copy()
        r.result = self.result
        r.forced_opening = self.forced_opening
        r._legal = self._legal
        return r

    # -- queries ------------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        return self.result is not None

    @property
    def ends(self) -> tuple[int, int] | None:
        """(left, right) open values, or None before the opening."""
        return None if self.left < 0 else (self.left, self.right)

    def legal_actions(self) -> list[int]:
        """Legal action ids for the seat to move, ascending (docs/environments.md, Actions).

        Before the opening every held tile may open, on end 0 only (or just the forced
        heaviest tile); afterwards each tile on each end it matches; the pass only when
        nothing fits. Empty once the round is over.
        """
        if self._legal is not None:
            return self._legal
        if self.result is not None:
            self._legal = []
            return self._legal
        hand = self.hands[self.current]
        if self.left < 0:
            if self.forced_opening >= 0:
                legal = [2 * self.forced_opening]
            else:
                legal = [2 * i for i in bit_indices(hand)]
        else:
            suits = self.tiles.suit_masks
            on_left = hand & suits[self.left]
            on_right = hand & suits[self.right]
            legal = []
            fits = on_left | on_right
            while fits:
                low = fits & -fits
                i2 = (low.bit_length() - 1) * 2
                if on_left & low:
                    legal.append(i2)
                if on_right & low:
                    legal.append(i2 + 1)
                fits ^= low
            if not legal:
                legal = [self.tiles.pass_action]
        self._legal = legal
        return legal

    def dealt_hands(self) -> list[int]:
        """Each seat's hand as dealt: what it holds plus what it has placed this round."""
        hands = self.hands.copy()
        for seat, action in self.moves:
            if action != self.tiles.pass_action:
                hands[seat] |= 1 << (action >> 1)
        return hands

    def record(self) -> dict[str, Any]:
        """The round as a JSON-ready move record (what replays read): the dealt ``hands``
        (tiles per seat), the ``lead`` (a seat, or "heaviest" when the holder of the heaviest
        double had to open with it), the ``moves`` as ``[seat, action]`` and the ``result``
        (``RoundResult.as_dict()``, None while the round is running)."""
        ts = self.tiles
        return {
            "hands": [[list(t) for t in ts.tiles_of(h)] for h in self.dealt_hands()],
            "lead": "heaviest" if self.forced_opening >= 0 else self.leader,
            "moves": [[seat, action] for seat, action in self.moves],
            "result": None if self.result is None else self.result.as_dict(),
        }

    def describe_legal(self) -> str:
        return ", ".join(f"{a} ({self.tiles.describe_action(a)})" for a in self.legal_actions())

    def public_view(self, seat: int, scores: Sequence[int] | None = None) -> PublicView:
        """Everything ``seat`` knows (seat-relative), given the match ``scores`` per side."""
        n = self.num_players
        rules = self.rules
        sides = rules.num_sides
        scores = [0] * sides if scores is None else scores
        my_side = rules.side_of(seat)
        return PublicView(
            rules=rules,
            hand=self.hands[seat],
            ends=self.ends,
            played=self.played,
            opening=self.moves[0][1] >> 1 if self.moves else None,
            leader=(self.leader - seat) % n,
            to_play=None if self.result is not None else (self.current - seat) % n,
            hand_counts=tuple(self.counts[(seat + r) % n] for r in range(n)),
            voids=tuple(self.voids[(seat + r) % n] for r in range(n)),
            passes=self.passes,
            scores=tuple(scores[(my_side + r) % sides] for r in range(sides)),
            legal=tuple(self.legal_actions()) if self.current == seat else (),
        )

    def line(self) -> list[Tile]:
        """The line left to right, each tile oriented so touching halves meet."""
        line: list[Tile] = []
        for _, action, ends, new in replay_ends(self.tiles, self.moves):
            if action == self.tiles.pass_action:
                continue
            if ends is None:
                line.append(new)
            elif action & 1:
                line.append((ends[1], new[1]))
            else:
                line.insert(0, (new[0], ends[0]))
        return line

    # -- play ---------------------------------------------------------------------------

    def step(self, action: int) -> RoundResult | None:
        """Play ``action`` for the seat to move; the round's result if it just ended.

        ValueError (naming the legal actions) if the action is not legal, TypeError if it is
        not an integer (numpy integers are); then nothing has changed.
        """
        if self.result is not None:
            raise ValueError("the round is over; no action is legal")
        if type(action) is not int:
            # numpy integers (what rng.choice(legal) returns) are integers; 2.0 or True are not.
            if not is_int(action):
                raise TypeError(
                    f"an action is an integer action id, got {action!r} ({type(action).__name__}); "
                    f"legal actions: {self.describe_legal()}"
                )
            action = int(action)
        legal = self.legal_actions()
        if action not in legal:
            raise ValueError(
                f"action {action!r} is not legal for seat {self.current}; legal actions: {self.describe_legal()}"
            )
        self.apply(action)
        return self.result

    def apply(self, action: int) -> None:
        """Play ``action`` without checking it (callers took it from legal_actions())."""
        seat = self.current
        self._legal = None
        self.moves.append((seat, action))
        n = self.num_players
        if action == self.tiles.pass_action:
            # docs/rules.md, must play. A pass proves the seat holds neither end's suit.
            self.voids[seat] |= (1 << self.left) | (1 << self.right)
            self.passes += 1
            if self.passes == n:
                self._finish(BLOCKED, None, False)
            else:
                self.current = (seat + 1) % n
            return
        i = action >> 1
        bit = 1 << i
        x, y = self.tiles.tiles[i]
        if self.left < 0:
            self.left, self.right = x, y
            fitted_both = False
        else:
            suits = self.tiles.suit_masks
            fitted_both = bool(suits[self.left] & bit) and bool(suits[self.right] & bit)
            if action & 1:
                self.right = y if x == self.right else x
            else:
                self.left = y if x == self.left else x
        self.hands[seat] &= ~bit
        self.counts[seat] -= 1
        self.played |= bit
        self.passes = 0
        if self.counts[seat] == 0:
            self._finish(DOMINO, seat, x == y or fitted_both)
        else:
            self.current = (seat + 1) % n

    def _finish(self, end: str, went_out: int | None, club_tile: bool) -> None:
        rules = self.rules
        hand_pips = tuple(self.tiles.pips_of(h) for h in self.hands)
        side_pips = [0] * rules.num_sides
        for seat, p in enumerate(hand_pips):
            side_pips[rules.side_of(seat)] += p
        total = sum(side_pips)
        doubled = False
        if end == DOMINO:
            assert went_out is not None
            winner: int | None = went_out
            side: int | None = rules.side_of(went_out)
            # docs/rules.md domino award: all opponents' pips (a partner's hand is not an opponent's).
            award = total - side_pips[side]
            if rules.club_doubling and club_tile:
                award *= 2
                doubled = True
        else:
            lowest = min(side_pips)
            if side_pips.count(lowest) > 1:
                winner = side = None  # docs/rules.md, a tie for lowest scores nobody
                award = 0
            else:
                side = side_pips.index(lowest)
                others = total - lowest
                award = others - lowest if rules.blocked_scoring == "subtract_own" else others
                # The lightest seat of the winning side (first from the leader on a tie).
                order = [(self.leader + k) % self.num_players for k in range(self.num_players)]
                winner = min((s for s in order if rules.side_of(s) == side), key=lambda s: hand_pips[s])
        self.result = RoundResult(
            end=end,
            winner=winner,
            winning_side=side,
            award=award,
            doubled=doubled,
            hand_pips=hand_pips,
            side_pips=tuple(side_pips),
        )
        self._legal = []

    def __repr__(self) -> str:
        hands = " / ".join(" ".join(format_tile(t) for t in self.tiles.tiles_of(h)) for h in self.hands)
        return f"Round(ends={self.ends}, current={self.current}, hands={hands}, result={self.result})"


def heaviest_holding(tiles: TileSet, hands: Sequence[int]) -> tuple[int, int]:
    """(seat, tile index) of the heaviest double held, else of the heaviest tile held.

    docs/rules.md first lead "heaviest": [6|6], else [5|5], ...; with no double dealt, the
    heaviest tile, ties between equal totals to the tile with the higher half.
    """
    held = 0
    for h in hands:
        held |= h
    for v in range(tiles.max_pip, -1, -1):
        d = tiles.double_index[v]
        if held >> d & 1:
            return _holder(hands, d), d
    if not held:
        raise ValueError("no tile is held, so nobody can lead")
    best = max(bit_indices(held), key=lambda i: (tiles.pips[i], tiles.tiles[i][1]))
    return _holder(hands, best), best


def _holder(hands: Sequence[int], tile: int) -> int:
    for seat, h in enumerate(hands):
        if h >> tile & 1:
            return seat
    raise AssertionError("tile not held")


def deal(rules: Rules, rng: random.Random) -> list[int]:
    """Shuffle the set and deal ``resolved_hand_size`` tiles to each seat (bitmasks)."""
    order = list(range(rules.tile_set.num_tiles))
    rng.shuffle(order)
    size = rules.resolved_hand_size
    hands = []
    for seat in range(rules.num_players):
        mask = 0
        for i in order[seat * size : (seat + 1) * size]:
            mask |= 1 << i
        hands.append(mask)
    return hands


class Match:
    """Rounds dealt until a side reaches the target (docs/rules.md, match target, later leaders).

    ``scores`` are per side. After each round's award the target is checked: reaching or
    passing it wins, excess kept; a tie for the highest qualifying score is a draw.

    Examples:
        >>> from block_env import Match, Rules
        >>> match = Match(Rules(target=20), seed=3)
        >>> while not match.is_over:
        ...     if match.round.result is not None:
        ...         _ = match.next_round()
        ...     _ = match.step(match.round.legal_actions()[0])
        >>> max(match.scores) >= 20
        True
    """

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        *,
        hands: Sequence[int] | None = None,
        leader: int | None = None,
    ) -> None:
        """Deal the first round from ``seed`` (OS entropy if None), unless ``hands``
        (bitmasks, one per seat, already validated) script it; ``leader`` scripts the first
        lead (ignored under first_lead "heaviest")."""
        self.rules = rules
        self.rng = random.Random(seed)
        self.scores = [0] * rules.num_sides
        self.results: list[RoundResult] = []
        #: The finished rounds, oldest first (``results[i]`` is ``finished_rounds[i].result``).
        self.finished_rounds: list[Round] = []
        self.winner_side: int | None = None
        self.is_draw = False
        if hands is None:
            hands = deal(rules, self.rng)
        lead: int | str
        if rules.first_lead == "heaviest":
            lead = "heaviest"
        elif leader is not None:
            lead = leader
        else:
            lead = self.rng.randrange(rules.num_players)  # docs/rules.md, first leader by fair lot
        self.round = Round.start(rules, hands, lead)

    def __deepcopy__(self, memo: dict[int, Any]) -> Match:
        """An independent copy, cheaply: the rules and the finished rounds are shared (they no
        longer change), the random generator's state copied at C speed."""
        copied = Match.__new__(Match)
        copied.__dict__.update(self.__dict__)
        copied.rng = random.Random()
        copied.rng.setstate(self.rng.getstate())
        copied.scores = list(self.scores)
        copied.results = list(self.results)
        copied.finished_rounds = list(self.finished_rounds)
        copied.round = self.round.copy()
        return copied

    @property
    def is_over(self) -> bool:
        return self.winner_side is not None or self.is_draw

    def step(self, action: int) -> RoundResult | None:
        """Play ``action`` in the current round; when the round ends, award it, check the
        target and return the result (call :meth:`next_round` to deal the next one)."""
        result = self.round.step(action)
        if result is not None:
            self._award(result)
        return result

    def _award(self, result: RoundResult) -> None:
        self.results.append(result)
        self.finished_rounds.append(self.round)
        if result.winning_side is not None:
            self.scores[result.winning_side] += result.award
        target = self.rules.resolved_target
        best = max(self.scores)
        if best >= target:
            leaders = [side for side, s in enumerate(self.scores) if s == best]
            if len(leaders) == 1:
                self.winner_side = leaders[0]
            else:
                self.is_draw = True

    def next_round(self, hands: Sequence[int] | None = None) -> Round:
        """Deal the next round (or play the dealt ``hands``, bitmasks per seat, already
        validated); the lead moves per ``rules.next_lead``."""
        if self.round.result is None:
            raise ValueError("the current round is not over yet")
        if self.is_over:
            raise ValueError("the match is over")
        if hands is None:
            hands = deal(self.rules, self.rng)
        self.round = Round.start(self.rules, hands, next_lead(self.rules, self.round))
        return self.round


def next_lead(rules: Rules, previous: Round) -> int | str:
    """Who leads the round after ``previous`` (docs/rules.md, later leaders): a seat, or
    "heaviest" (the holder of the heaviest double leads it)."""
    rule = rules.next_lead
    if rule == "heaviest":
        return "heaviest"
    if rule == "winner" and previous.result is not None and previous.result.winner is not None:
        return previous.result.winner
    return (previous.leader + 1) % rules.num_players  # rotate, and "winner" after a tied block
