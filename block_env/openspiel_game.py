"""The OpenSpiel game over this project's engine (registered as ``block_dominoes`` when this
module is imported). Users import :mod:`block_env.openspiel`, which also offers the bots; this
module is the core half that knows nothing of agents.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pyspiel

from block_env.engine import Match, Round
from block_env.hidden_hands import sample_hidden_hands
from block_env.observations import encoder, layout_for
from block_env.options import ENCODINGS
from block_env.render import seat_name
from block_env.rules import PRESETS, Rules
from block_env.tiles import bit_indices, format_tile
from block_env.validation import check_choice

EPISODES = ("round", "match")
#: A match is cut off after this many rounds (OpenSpiel needs a bound on a game's length; a
#: match needs about 4 to 10 rounds).
MAX_MATCH_ROUNDS = 50
SHORT_NAME = "block_dominoes"

#: Parameter -> default. A Rules field's default means "the preset's value".
PARAMETERS: dict[str, Any] = {
    "preset": "standard",
    "episode": "round",
    "num_players": 0,
    "max_pip": 0,
    "hand_size": 0,
    "target": 0,
    "partnership": False,
    "first_lead": "",
    "next_lead": "",
    "blocked_scoring": "",
    "club_doubling": False,
}


def rules_from_parameters(params: dict[str, Any]) -> Rules:
    """The game's Rules: the preset, with every parameter that is not its default applied.

    Examples:
        >>> rules_from_parameters({"preset": "standard", "max_pip": 9, "num_players": 4, "hand_size": 10})
        Rules(num_players=4, max_pip=9, hand_size=10, target=None, partnership=False, first_lead='lot', next_lead='rotate', blocked_scoring='subtract_own', club_doubling=False)
    """
    preset = params.get("preset", "standard")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    changes = {
        name: value for name, value in params.items() if name not in ("preset", "episode") and value != PARAMETERS[name]
    }
    return PRESETS[preset].replace(**changes)


def _max_award(rules: Rules) -> int:
    """The largest award of a round: every pip of the set, doubled by the club rule."""
    total = sum(a + b for a, b in rules.tile_set.tiles)
    return total * (2 if rules.club_doubling else 1)


def _round_length(rules: Rules) -> int:
    """The most decisions in a round: each placement can be preceded by n - 1 passes."""
    n, h = rules.num_players, rules.resolved_hand_size
    return n * h * n + n


class BlockDominoesGame(pyspiel.Game):
    """The OpenSpiel game over this project's engine (see the module docstring)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        params = {**PARAMETERS, **(params or {})}
        self.rules = rules_from_parameters(params)
        self.episode = params["episode"]
        if self.episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}, got {self.episode!r}")
        rules = self.rules
        n, ts = rules.num_players, rules.tile_set
        deal = n * rules.resolved_hand_size + 1  # the deal's chance nodes and the lot
        rounds = 1 if self.episode == "round" else MAX_MATCH_ROUNDS
        award = _max_award(rules)
        bound = award if self.episode == "round" else rules.resolved_target + award
        info = pyspiel.GameInfo(
            num_distinct_actions=ts.num_actions,
            max_chance_outcomes=max(ts.num_tiles, n),
            num_players=n,
            min_utility=-float(bound),
            max_utility=float(bound),
            utility_sum=0.0,
            max_game_length=rounds * (deal + _round_length(rules)),
        )
        super().__init__(GAME_TYPE, info, params)
        self._encode = {observation: encoder(rules, observation) for observation in ("vector", "history")}

    def new_initial_state(self) -> BlockDominoesState:
        return BlockDominoesState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: dict[str, Any] | None = None
    ) -> BlockDominoesObserver:
        if params:
            raise ValueError(f"the block_dominoes observer takes no parameters, got {params}")
        perfect_recall = iig_obs_type is not None and iig_obs_type.perfect_recall
        return BlockDominoesObserver(self, "history" if perfect_recall else "vector")


class BlockDominoesState(pyspiel.State):
    """A game in progress: the deal being made, or a ``Match`` of the engine being played."""

    def __init__(self, game: BlockDominoesGame) -> None:
        super().__init__(game)
        self.rules = game.rules
        self.episode = game.episode
        self.match: Match | None = None
        self.dealing: list[list[int]] = [[] for _ in range(self.rules.num_players)]
        self.lot_pending = False
        self.game_over = False
        self.from_position = False  # entered mid-round (enter_position): no deal in the history

    def enter_position(self, rnd: Round) -> None:
        """Start this (fresh) state at ``rnd``, a round in the middle of play with every hand
        known (e.g. a determinization of what one seat saw): for search bots."""
        if self.history():
            raise ValueError("enter_position needs a fresh state")
        self.match = Match(self.rules, seed=0, hands=rnd.hands, leader=rnd.leader)
        self.match.round = rnd.copy()
        self.from_position = True

    # -- whose turn ----------------------------------------------------------------------------

    def current_player(self) -> int:
        if self.game_over:
            return pyspiel.PlayerId.TERMINAL
        if self.is_dealing() or self.lot_pending:
            return pyspiel.PlayerId.CHANCE
        assert self.match is not None
        return self.match.round.current

    def is_dealing(self) -> bool:
        if self.from_position:
            return False
        return any(len(hand) < self.rules.resolved_hand_size for hand in self.dealing)

    def _legal_actions(self, player: int) -> list[int]:
        assert self.match is not None and player == self.match.round.current
        return self.match.round.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self.lot_pending:
            n = self.rules.num_players
            return [(seat, 1.0 / n) for seat in range(n)]
        # A hand is dealt in ascending tile order, each tile with the probability that it is
        # the lowest of the hand's remaining tiles: every hand (a set of tiles) is equally
        # likely, as in a shuffled deal, with a fraction of the chance nodes of dealt orders.
        hand = next(hand for hand in self.dealing if len(hand) < self.rules.resolved_hand_size)
        need = self.rules.resolved_hand_size - len(hand)
        dealt = {tile for tiles in self.dealing for tile in tiles}
        above = [t for t in range(self.rules.tile_set.num_tiles) if t not in dealt and (not hand or t > hand[-1])]
        total = math.comb(len(above), need)
        outcomes = [(tile, math.comb(len(above) - k - 1, need - 1) / total) for k, tile in enumerate(above)]
        return [(tile, p) for tile, p in outcomes if p > 0]

    # -- moves ---------------------------------------------------------------------------------

    def _apply_action(self, action: int) -> None:
        if self.lot_pending:
            self.lot_pending = False
            self._start_round(leader=action)
        elif self.is_dealing():
            next(hand for hand in self.dealing if len(hand) < self.rules.resolved_hand_size).append(action)
            if not self.is_dealing():
                if self.match is None and self.rules.first_lead == "lot":
                    self.lot_pending = True
                else:
                    self._start_round(leader=None)
        else:
            self._play(action)

    def _start_round(self, leader: int | None) -> None:
        hands = [sum(1 << tile for tile in hand) for hand in self.dealing]
        if self.match is None:
            self.match = Match(self.rules, seed=0, hands=hands, leader=leader)
        else:
            self.match.next_round(hands)

    def _play(self, action: int) -> None:
        assert self.match is not None
        result = self.match.step(action)
        if result is None:
            return
        rounds = len(self.match.results)
        if self.episode == "round" or self.match.is_over or rounds >= MAX_MATCH_ROUNDS:
            self.game_over = True
        else:
            self.dealing = [[] for _ in range(self.rules.num_players)]

    # -- outcome -------------------------------------------------------------------------------

    def is_terminal(self) -> bool:
        return self.game_over

    def returns(self) -> list[float]:
        """Each seat's zero-sum points over the rounds played, once the game is over."""
        n = self.rules.num_players
        if not self.game_over or self.match is None:
            return [0.0] * n
        totals = [0.0] * self.rules.num_sides
        for result in self.match.results:
            for side, value in enumerate(result.side_values("zero_sum")):
                totals[side] += value
        return [totals[self.rules.side_of(seat)] for seat in range(n)]

    # -- text ----------------------------------------------------------------------------------

    def _action_to_string(self, player: int, action: int) -> str:
        ts = self.rules.tile_set
        if player == pyspiel.PlayerId.CHANCE:
            if self.lot_pending:
                return f"lot: {seat_name(action)} leads"
            return f"deal {format_tile(ts.tiles[action])}"
        return ts.describe_action(action)

    def __str__(self) -> str:
        ts = self.rules.tile_set
        if self.match is None or self.is_dealing():
            dealt = " / ".join(" ".join(format_tile(ts.tiles[t]) for t in hand) for hand in self.dealing)
            return f"dealing: {dealt}"
        rnd = self.match.round
        hands = " / ".join(" ".join(format_tile(t) for t in ts.tiles_of(h)) for h in rnd.hands)
        line = " ".join(format_tile(t) for t in rnd.line())
        return f"round {len(self.match.results) + (rnd.result is None)}; hands: {hands}; line: {line or '-'}; scores: {self.match.scores}"

    # -- what a seat knows ---------------------------------------------------------------------

    def current_round(self) -> Round | None:
        """The engine's round being played (None while the first deal is being made)."""
        return None if self.match is None or self.is_dealing() else self.match.round

    def observation_in(self, player: int, encoding: str) -> np.ndarray:
        """What ``player`` observes of the round being played in any of this project's
        encodings ("vector", "history", "tracked"): the observation tensor is the vector's and
        the information-state tensor the history's; an agent reads the one it was built for."""
        check_choice("encoding", encoding, ENCODINGS)
        rnd = self.current_round()
        if rnd is None or self.match is None:
            raise ValueError("no round is being played: the deal is still being made")
        return encoder(self.rules, encoding)(rnd, player, self.match.scores)

    def resample_from_infostate(
        self, player_id: int, probability_sampler: Callable[[], float] | None
    ) -> BlockDominoesState:
        """A state ``player_id`` cannot tell from this one: the same public history and
        own hand, the other seats' hidden tiles dealt again (consistent with their counts and
        the suits their passes showed they lack). Used by IS-MCTS."""
        rnd = self.current_round()

        def rng() -> random.Random:  # one draw from the bot's sampler, only when a deal is resampled
            return random.Random(int(probability_sampler() * 2**31) if callable(probability_sampler) else None)

        if self.from_position and rnd is not None and rnd.result is None:
            state = self.get_game().new_initial_state()
            state.enter_position(resample_position(rnd, player_id, rng()))
            return state
        if rnd is None or self.match is None or self.match.results:
            # During a deal nothing hidden has been used yet; later rounds are not resampled.
            return self.clone()
        # Replay the deal (each hand in ascending order, as the chance nodes deal it) and the moves.
        dealt = resample_position(rnd, player_id, rng()).dealt_hands()
        state = self.get_game().new_initial_state()
        for tile in (tile for hand in dealt for tile in bit_indices(hand)):
            state.apply_action(tile)
        if state.lot_pending:
            state.apply_action(rnd.leader)
        for _, action in rnd.moves:
            state.apply_action(action)
        return state


#: Tries at a deal that respects every shown void; the last one ignores them (a last resort).
RESAMPLE_ATTEMPTS = 200


def resample_position(rnd: Round, player: int, rng: random.Random) -> Round:
    """``rnd`` with the other seats' current hands dealt again from the tiles ``player`` cannot
    see, each seat keeping its count and holding none of the suits it passed on (the search
    agents' sampler, :func:`block_env.hidden_hands.sample_hidden_hands`, seeded from ``rng``)."""
    n = rnd.num_players
    view = rnd.public_view(player)
    (dealt,) = sample_hidden_hands(
        rnd.rules,
        hand=view.hand,
        unseen=view.unseen,
        hand_counts=view.hand_counts,
        voids=view.voids,
        worlds=1,
        attempts=RESAMPLE_ATTEMPTS,
        seed=rng.getrandbits(63),
    )
    hands = list(rnd.hands)
    for r in range(1, n):  # relative seat r is seat player + r
        hands[(player + r) % n] = sum(1 << int(t) for t in np.flatnonzero(dealt[r]))
    position = rnd.copy()
    position.hands = hands
    return position


class BlockDominoesObserver:
    """OpenSpiel's observer for this game: ``tensor`` is this project's ``vector`` (default)
    or ``history`` (perfect recall) encoding of the observing seat, and ``dict`` its named
    pieces (the piece table, ``block-dominoes encodings``)."""

    def __init__(self, game: BlockDominoesGame, observation: str) -> None:
        self.game = game
        self.observation = observation
        self.layout = layout_for(game.rules, observation)
        self.tensor = np.zeros(self.layout.size, np.float32)
        self.dict = self.layout.views(self.tensor)

    def set_from(self, state: BlockDominoesState, player: int) -> None:
        rnd = state.current_round()
        if rnd is not None:
            assert state.match is not None  # a round is being played
            self.tensor[:] = self.game._encode[self.observation](rnd, player, state.match.scores)
            return
        # The deal is being made: the tiles dealt to this seat so far, and the match score.
        self.tensor.fill(0.0)
        for tile in state.dealing[player]:
            self.dict["hand"][tile] = 1.0
        if state.match is not None:
            target, sides = self.game.rules.resolved_target, self.game.rules.num_sides
            mine = self.game.rules.side_of(player)
            for r in range(sides):
                self.dict["scores"][r] = state.match.scores[(mine + r) % sides] / target

    def string_from(self, state: BlockDominoesState, player: int) -> str:
        ts = self.game.rules.tile_set
        rnd = state.current_round()
        hand = " ".join(format_tile(ts.tiles[t]) for t in sorted(state.dealing[player]))
        if rnd is None:
            return f"{seat_name(player)} dealt: {hand or '-'}"
        view = rnd.public_view(player, state.match.scores if state.match else None)
        text = (
            f"{seat_name(player)} hand: {' '.join(format_tile(t) for t in view.hand_tiles) or '-'}; "
            f"ends: {'-' if view.ends is None else view.ends}; counts: {list(view.hand_counts)}; "
            f"scores: {list(view.scores)}"
        )
        if self.observation == "history":
            moves = ", ".join(f"{seat_name(seat)} {ts.describe_action(a)}" for seat, a in rnd.moves)
            text += f"; dealt: {hand}; moves: {moves or '-'}"
        else:
            played = " ".join(format_tile(t) for t in ts.tiles_of(view.played))
            voids = [[v for v in range(ts.num_suits) if m >> v & 1] for m in view.voids]
            text += f"; played: {played or '-'}; voids: {voids}"
        return text


GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="Block dominoes (block_env)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=PARAMETERS,
)

pyspiel.register_game(GAME_TYPE, BlockDominoesGame)
