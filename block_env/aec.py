"""The PettingZoo AEC environment: a thin adapter over :mod:`block_env.engine`."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from block_env.engine import Match, PublicView, RoundResult
from block_env.observations import encode_hidden, encode_state, encoder, state_layout
from block_env.options import ENCODINGS, EPISODES, RENDER_MODES, REWARDS
from block_env.render import render_image, render_text, seat_name
from block_env.rules import Rules, resolve_rules
from block_env.seeding import SEED_BOUND
from block_env.tiles import Tile, format_tile
from block_env.validation import check_choice, is_int

#: The keys ``reset(options=...)`` reads (docs/environments.md).
RESET_OPTION_KEYS = ("hands", "leader")


@dataclass(frozen=True)
class Scenario:
    """A validated scripted first round: hands as bitmasks, and the leader (None = by rule)."""

    hands: tuple[int, ...] | None
    leader: int | None


def parse_reset_options(rules: Rules, options: object) -> Scenario | None:
    """Validate reset ``options`` ({"hands": [[(a, b), ...], ...], "leader": i}).

    ValueError names what is wrong: a wrong number of hands, an empty hand, a tile outside
    the set or with non-integer halves, a tile dealt twice, or a leader that is not a seat.
    Tiles not listed are out of play; unknown keys are ignored with a warning. "leader" is
    ignored under first_lead "heaviest" (docs/environments.md).
    """
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ValueError(f"options must be a dict with keys {RESET_OPTION_KEYS}, got {options!r}")
    unknown = set(options) - set(RESET_OPTION_KEYS)
    if unknown:
        # Not an error: PettingZoo's api_test resets with an arbitrary option to check that
        # envs tolerate options they do not use. A typo still gets named.
        warnings.warn(
            f"reset options {sorted(map(str, unknown))} are not used; block_env reads {list(RESET_OPTION_KEYS)}",
            stacklevel=3,
        )
    hands = options.get("hands")
    leader = options.get("leader")
    masks = _hands_from_tiles(rules, hands) if hands is not None else None
    if leader is not None:
        n = rules.num_players
        if not (is_int(leader) and 0 <= leader < n):
            raise ValueError(f"options['leader'] must be a seat 0..{n - 1}, got {leader!r}")
        leader = int(leader)
        if rules.first_lead == "heaviest":
            leader = None
    if masks is None and leader is None:
        return None
    return Scenario(hands=masks, leader=leader)


def _hands_from_tiles(rules: Rules, hands: object) -> tuple[int, ...]:
    n = rules.num_players
    if not isinstance(hands, (list, tuple)) or len(hands) != n:
        got = f"{len(hands)} lists" if isinstance(hands, (list, tuple)) else repr(hands)
        raise ValueError(f"options['hands'] needs one list of tiles per seat ({n} lists), got {got}")
    masks: list[int] = []
    seen = 0
    ts = rules.tile_set
    for seat, hand in enumerate(hands):
        if not isinstance(hand, (list, tuple)) or not hand:
            raise ValueError(f"options['hands'][{seat}] must be a non-empty list of (a, b) tiles, got {hand!r}")
        mask = 0
        for tile in hand:
            try:
                i = ts.tile_index(tile)
            except ValueError as e:
                raise ValueError(f"options['hands'][{seat}]: {e}") from None
            if (seen | mask) >> i & 1:
                raise ValueError(f"options['hands'][{seat}]: tile {format_tile(ts.tiles[i])} is dealt twice")
            mask |= 1 << i
        seen |= mask
        masks.append(mask)
    return tuple(masks)


def as_action(action: object, num_actions: int) -> int:
    """The action as a Python int; TypeError if it is not an integer, ValueError if out of range."""
    if type(action) is int and 0 <= action < num_actions:  # the common case, without ABC checks
        return action
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action.item()
    if not is_int(action):
        raise TypeError(f"an action is an integer in 0..{num_actions - 1}, got {action!r} ({type(action).__name__})")
    action = int(action)
    if not 0 <= action < num_actions:
        raise ValueError(f"action {action} is out of range 0..{num_actions - 1}")
    return action


class raw_env(AECEnv):
    """Block dominoes (docs/rules.md) as a PettingZoo AEC environment.

    ## Description
    Two to four players place tiles from their hands on either open end of a line, matching
    that end's value; nobody draws, and a player who cannot place passes. The round ends when
    a player places their last tile (domino) or every player passes in turn (blocked); the
    winner scores the remaining pips (see docs/rules.md). ``rules`` chooses every variant.

    ## Agents
    ``"player_0"`` ... ``"player_{n-1}"``; seat order is turn order (clockwise).

    ## Action Space
    ``Discrete(2*T + 1)`` for a set of T tiles in canonical order (0,0), (0,1), ... (N,N):

    | action | meaning |
    |---|---|
    | ``2*i`` | place tile i on the left end (the opening: tile (a, b) gives ends a, b) |
    | ``2*i + 1`` | place tile i on the right end (not legal for the opening) |
    | ``2*T`` | pass: legal only when no tile fits, and then the only legal action |

    Under first_lead/next_lead "heaviest" the leader's only legal action is that tile.
    ``step`` raises ValueError for an illegal or out-of-range action and TypeError for a
    non-integer, naming the legal actions, and changes nothing.

    ## Observation Space
    ``{"observation": Box(float32), "action_mask": Box(int8, 2T+1)}``. The mask is all zeros
    for every agent but the one to move. ``observation`` chooses the encoding: "vector"
    (default), "history" or "tracked"; ``block_env.decode_observation`` reads each back, and
    ``block-dominoes encodings`` prints their piece tables. ``state()`` returns the
    full-information state (all hands) for centralised critics.

    ## Starting State
    A shuffled deal of ``rules.resolved_hand_size`` tiles per seat; the rest are out of
    play. The leader is drawn by lot (from the seeded RNG) or per ``rules.first_lead``.
    ``reset(options={"hands": [[(a, b), ...], ...], "leader": i})`` scripts the first
    round's deal (tiles not listed are out of play) and leader; "leader" may be omitted and
    is ignored under first_lead "heaviest". Bad options raise ValueError and keep the
    previous game.

    ## Rewards
    Given on the step that ends a round, to every agent of a side
    (:meth:`block_env.RoundResult.side_values`):
    - "zero_sum" (default): the winning side +award, every other side -award/(S-1), S sides;
    - "points": the winning side +award, everyone else 0 (docs/environments.md);
    - "win_loss": +1 to the side that wins the episode (the round, or the match in match
      episodes), -1/(S-1) to the others, 0 to all on a tied block or a drawn match; only
      given when the episode ends.

    ## Episode End
    ``episode="round"``: every agent terminates when the round ends. ``episode="match"``:
    rounds are dealt (lead moving per ``rules.next_lead``) until a side reaches
    ``rules.resolved_target``; then every agent terminates. Nothing truncates.
    ``infos[agent]["round_result"]`` describes each finished round
    (``RoundResult.as_dict()`` plus its number, ``"round"``); ``results`` holds them all.

    ## Arguments
    ``rules``: a :class:`block_env.Rules`, a preset name (``block_env.PRESETS``) or None;
    ``episode``: "round" | "match"; ``reward``: "zero_sum" | "points" | "win_loss";
    ``observation``: "vector" | "history" | "tracked"; ``render_mode``: None | "human" | "ansi" | "rgb_array".

    ## Version History
    v0: initial release.

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=42)
        >>> for agent in env.agent_iter():
        ...     observation, reward, termination, truncation, info = env.last()
        ...     action = None if termination or truncation else int(observation["action_mask"].argmax())
        ...     env.step(action)
        >>> env.results[-1].end in ("domino", "blocked")
        True
    """

    metadata = {
        "render_modes": list(RENDER_MODES),
        "name": "block_dominoes_v0",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        rules: Rules | str | None = None,
        *,
        episode: str = "round",
        reward: str = "zero_sum",
        observation: str = "vector",
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        self.rules = resolve_rules(rules)
        check_choice("episode", episode, EPISODES)
        check_choice("reward", reward, REWARDS)
        check_choice("observation", observation, ENCODINGS)
        check_choice("render_mode", render_mode, (None, *RENDER_MODES))
        self.episode = episode
        self.reward_mode = reward
        self.observation_mode = observation
        self.render_mode = render_mode

        n = self.rules.num_players
        self.possible_agents = [seat_name(s) for s in range(n)]
        self.agent_name_mapping = {a: s for s, a in enumerate(self.possible_agents)}
        self._num_actions = self.rules.tile_set.num_actions
        self._encode = encoder(self.rules, observation)
        layout = self._encode.layout
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, layout.high(), shape=(layout.size,), dtype=np.float32),
                "action_mask": spaces.Box(0, 1, shape=(self._num_actions,), dtype=np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(self._num_actions) for a in self.possible_agents}
        state = state_layout(self.rules)
        self.state_space = spaces.Box(0.0, state.high(), shape=(state.size,), dtype=np.float32)
        self._engine: Match | None = None  # the engine behind the env; callers use the methods below
        self.round_number = 0

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # -- episode ------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        scenario = parse_reset_options(self.rules, options)  # ValueError before anything changes
        if seed is not None or not hasattr(self, "_np_random_ready"):
            self.np_random, self.np_random_seed = seeding.np_random(seed)
            self._np_random_ready = True
        # One below the bound: the draw every published seed was made with (a wider range draws other numbers).
        engine_seed = int(self.np_random.integers(0, SEED_BOUND - 1))
        if scenario is None:
            self._engine = Match(self.rules, engine_seed)
        else:
            self._engine = Match(self.rules, engine_seed, hands=scenario.hands, leader=scenario.leader)
        self.round_number = 1
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self._engine.round.current]

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._match("last()")
        if not self.agents:
            raise RuntimeError("the episode is over and every agent is done: call reset() to start another")
        return super().last(observe)

    def step(self, action: Any) -> None:
        match = self._match("step()")
        if not self.agents:
            raise RuntimeError("the episode is over and every agent is done: call reset() to start another")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        try:
            act = as_action(action, self._num_actions)
        except ValueError as e:
            raise ValueError(f"{e}; legal actions for {agent}: {match.round.describe_legal()}") from None
        except TypeError as e:
            raise TypeError(f"{e}; legal actions for {agent}: {match.round.describe_legal()}") from None
        result = match.step(act)  # ValueError naming the legal actions; nothing changed
        self._cumulative_rewards[agent] = 0.0
        self.infos[agent] = {}  # read by now, as its reward was: a round's result is told once
        self._clear_rewards()
        if result is not None:
            self._end_round(result)
        if not self.terminations[self.agent_selection]:
            self.agent_selection = self.possible_agents[match.round.current]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _end_round(self, result: RoundResult) -> None:
        match = self._match("step()")
        over = self.episode == "round" or match.is_over
        episode_winner = result.winning_side if self.episode == "round" else match.winner_side
        per_side = result.side_values(self.reward_mode, episode_winner=episode_winner, episode_over=over)
        info = {"round_result": {"round": self.round_number, **result.as_dict()}, "scores": list(match.scores)}
        for seat, agent in enumerate(self.possible_agents):
            self.rewards[agent] = per_side[self.rules.side_of(seat)]
            self.infos[agent] = dict(info)
        if over:
            for agent in self.agents:
                self.terminations[agent] = True
        else:
            match.next_round()
            self.round_number += 1

    # -- what callers may read --------------------------------------------------------------

    def legal_actions(self) -> list[int]:
        """Legal action ids of the agent to move (empty once the episode is over)."""
        match = self._match("legal_actions()")
        if not self.agents or self.terminations[self.agent_selection]:
            return []
        return match.round.legal_actions()

    @property
    def results(self) -> list[RoundResult]:
        """Every finished round of this episode, oldest first."""
        return [] if self._engine is None else self._engine.results

    @property
    def scores(self) -> list[int]:
        """Match score per side (the rounds' awards so far this episode)."""
        match = self._match("scores")
        return list(match.scores)

    @property
    def match_winner(self) -> int | None:
        """The side that won the match (match episodes), else None."""
        return None if self._engine is None else self._engine.winner_side

    @property
    def episode_over(self) -> bool:
        """Whether every agent has terminated (or no episode was started)."""
        return self._engine is None or all(self.terminations.values())

    def seat_of(self, agent: str) -> int:
        """The seat of ``agent`` ("player_2" -> 2); ValueError names the agents."""
        if agent not in self.agent_name_mapping:
            raise ValueError(f"unknown agent {agent!r}; agents: {', '.join(self.possible_agents)}")
        return self.agent_name_mapping[agent]

    def public_view(self, agent: str) -> PublicView:
        """Everything ``agent`` knows at the table now, seat-relative: its hand, the ends,
        the tiles played, every seat's tile count and shown voids, whose turn it is and, on
        its turn, its legal actions. The same facts as its observation, decoded."""
        match = self._match("public_view()")
        return match.round.public_view(self.seat_of(agent), match.scores)

    def line(self) -> list[Tile]:
        """The current round's line, left to right, each tile oriented so touching halves meet."""
        return self._match("line()").round.line()

    def round_records(self) -> list[dict[str, Any]]:
        """The move record of every round of this episode, oldest first: each finished round,
        then the current one if a move was made in it and it is not over. A record is plain
        JSON (:meth:`block_env.Round.record`): what replays are made of."""
        match = self._match("round_records()")
        records = [rnd.record() for rnd in match.finished_rounds]
        if match.round.moves and match.round.result is None:
            records.append(match.round.record())
        return records

    def current_round_record(self) -> dict[str, Any]:
        """The move record of the current round (the finished one, once a round episode is over)."""
        return self._match("current_round_record()").round.record()

    def hidden_hands(self, agent: str) -> np.ndarray:
        """Every other seat's hand, seat-relative (float32, (n - 1) * T): full information,
        like ``state()``, for centralised critics and teachers, never for a policy's input."""
        return encode_hidden(self._match("hidden_hands()").round, self.seat_of(agent))

    def _match(self, what: str) -> Match:
        if self._engine is None:
            raise RuntimeError(f"call reset() before {what}")
        return self._engine

    def deal(self) -> dict[str, Any]:
        """The current round's dealt hands (full information, like ``state()``) and leader:
        what duplicate play keeps identical across seatings."""
        match = self._match("deal()")
        rnd = match.round
        hands: list[list[Tile]] = [rnd.tiles.tiles_of(h) for h in rnd.dealt_hands()]
        return {"hands": hands, "leader": rnd.leader}

    # -- observing ----------------------------------------------------------------------

    def observe(self, agent: str, encoding: str | None = None) -> dict[str, np.ndarray]:
        """``agent``'s observation dict, in the env's encoding or in ``encoding`` (any of
        "vector", "history", "tracked"): what lets agents that read different encodings play at one table (the
        arena gives each its own, :func:`block_env.episodes.play_moves`)."""
        match = self._match("observe()")
        rnd = match.round
        encode = self._encode if encoding in (None, self.observation_mode) else self._other_encoder(encoding)
        obs = encode(rnd, self.seat_of(agent), match.scores)
        mask = np.zeros(self._num_actions, dtype=np.int8)
        if agent == self.agent_selection and not self.terminations.get(agent, True):
            for action in rnd.legal_actions():  # a few items: faster than fancy indexing
                mask[action] = 1
        return {"observation": obs, "action_mask": mask}

    def _other_encoder(self, encoding: str) -> Any:
        check_choice("encoding", encoding, ENCODINGS)
        return encoder(self.rules, encoding)  # cached per rules and encoding

    def state(self) -> np.ndarray:
        match = self._match("state()")
        return encode_state(match.round, match.scores)

    def render(self, viewer: int | None = None) -> str | np.ndarray | None:
        """The table as ``viewer`` (a seat) sees it; by default the seat to move."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() was called without a render_mode; pass render_mode= to the env.")
            return None
        match = self._match("render()")
        if viewer is None:
            viewer = self.agent_name_mapping.get(self.agent_selection, 0)
        elif not (is_int(viewer) and 0 <= viewer < self.rules.num_players):
            raise ValueError(f"viewer is a seat 0..{self.rules.num_players - 1}, got {viewer!r}")
        rnd = match.round
        if self.render_mode == "rgb_array":
            return render_image(rnd, viewer)
        text = render_text(rnd, match.scores, viewer, self.round_number)
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text

    def close(self) -> None:
        pass


def env(
    rules: Rules | str | None = None,
    *,
    episode: str = "round",
    reward: str = "zero_sum",
    observation: str = "vector",
    render_mode: str | None = None,
) -> AECEnv:
    """``raw_env`` wrapped as PettingZoo's classic environments are: an illegal move ends the
    game with reward -1 for the mover (TerminateIllegalWrapper), an out-of-range action
    fails an assertion, and calls out of order are refused (OrderEnforcingWrapper).

    Examples:
        >>> from block_env import env
        >>> wrapped = env("standard_3p")
        >>> wrapped.reset(seed=1)
        >>> wrapped.agent_selection in wrapped.possible_agents
        True
    """
    wrapped: AECEnv = raw_env(rules, episode=episode, reward=reward, observation=observation, render_mode=render_mode)
    wrapped = wrappers.TerminateIllegalWrapper(wrapped, illegal_reward=-1)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    wrapped = wrappers.OrderEnforcingWrapper(wrapped)
    return wrapped
