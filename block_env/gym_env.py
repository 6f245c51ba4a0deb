"""A single-agent Gymnasium view of one seat, for stable-baselines3 (MaskablePPO)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from block_env.aec import as_action, parse_reset_options, raw_env
from block_env.observations import layout_for
from block_env.opponents import Opponent, OpponentFactory, opponent_encoding, resolve_opponents
from block_env.options import ILLEGAL_ACTIONS, MAX_REDEALS, check_learner_seat
from block_env.rules import Rules, resolve_rules
from block_env.seeding import SEED_BOUND
from block_env.validation import check_bool, check_choice, check_number


class BlockDominoesEnv(gymnasium.Env):
    """Block dominoes from one learning seat against opponent agents.

    ## Description
    Wraps :class:`block_env.raw_env`: the learner acts at its seat, every other seat is
    played by an opponent (anything with ``act(obs)`` and ``reset(seed)``, the
    :class:`block_env.opponents.Opponent` protocol: scripted, search or a frozen policy
    snapshot from :mod:`block_env.agents`) until the learner's next decision or the
    episode's end. Each transition carries the learner's own observation and the learner's reward
    (summed over the opponents' moves in between), never the next mover's.

    ## Action Space
    ``Discrete(2*T + 1)``, the layout of the AEC env. ``action_masks()`` returns the legal
    actions as a bool array, for sb3-contrib's MaskablePPO.

    ## Observation Space
    ``Box(float32)``: the learner's "vector" (default), "history" or "tracked" encoding, seat-relative,
    exactly as ``raw_env.observe`` gives it (``block_env.decode_observation`` reads it).

    ## Starting State
    A fresh deal; the learner sits at ``learner_seat`` (or a seat drawn per episode when
    None); each other seat gets an opponent drawn from ``opponents``. Opponents move until
    it is the learner's turn. An episode that ends before the learner's first decision (its
    moves all forced, or opponents who go out first) is dealt again, with a new seat and
    opponents; a scripted deal (``reset(options={"hands": ...})``) is played again from its
    start. After 100 such deals in a row reset raises ValueError. In a match, a round that
    ends before the learner's first decision is paid with the learner's first step.

    ## Rewards
    The AEC env's reward mode (``reward``: "zero_sum", "points" or "win_loss") for the
    learner's seat, multiplied by ``reward_scale``.

    ## Episode End
    Terminates when the AEC episode ends (``episode="round"`` or ``"match"``). An illegal
    action raises ValueError naming the legal actions (``illegal_action="raise"``, default),
    or with ``illegal_action="terminate"`` ends the episode with reward ``-1 * reward_scale``
    and ``info["illegal_action"] = True`` (for algorithms without masks and for env checkers
    that sample unmasked actions).

    ## Arguments
    ``rules``, ``episode``, ``reward``, ``observation`` as for ``raw_env``;
    ``opponents``: Opponents, or agent spec strings when ``opponent_factory`` builds them
    (``gymnasium.make`` and ``block_env.agents.make_env`` pass one); one is drawn uniformly
    per seat per episode;
    ``learner_seat``: int or None; ``reward_scale``: float; ``skip_forced``: play the
    learner's turns that have exactly one legal action automatically (default True);
    ``illegal_action``: "raise" or "terminate"; ``render_mode``: "ansi" or "rgb_array".

    ## Version History
    v0: initial release.

    Examples:
        >>> from block_env import BlockDominoesEnv
        >>> env = BlockDominoesEnv("standard")  # random opponents
        >>> observation, info = env.reset(seed=0)
        >>> observation.shape, int(env.action_masks().sum()) >= 1
        ((121,), True)
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}

    def __init__(
        self,
        rules: Rules | str | None = None,
        *,
        opponents: Sequence[str | Opponent] = ("random",),
        learner_seat: int | None = None,
        episode: str = "round",
        reward: str = "zero_sum",
        observation: str = "vector",
        reward_scale: float = 1.0,
        skip_forced: bool = True,
        illegal_action: str = "raise",
        render_mode: str | None = None,
        opponent_factory: OpponentFactory | None = None,
    ) -> None:
        self.rules = resolve_rules(rules)
        check_choice("render_mode", render_mode, (None, *self.metadata["render_modes"]))
        check_choice("illegal_action", illegal_action, ILLEGAL_ACTIONS)
        check_learner_seat(learner_seat, self.rules.num_players)
        check_number("reward_scale", reward_scale, positive=True)
        check_bool("skip_forced", skip_forced)
        self.aec = raw_env(self.rules, episode=episode, reward=reward, observation=observation, render_mode=render_mode)
        self.observation = observation
        self.learner_seat = learner_seat
        self.reward_scale = float(reward_scale)
        self.skip_forced = skip_forced
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.opponent_factory = opponent_factory
        self.set_opponents(opponents)
        layout = layout_for(self.rules, observation)
        self.observation_space = spaces.Box(0.0, layout.high(), shape=(layout.size,), dtype=np.float32)
        self.action_space = spaces.Discrete(self.rules.tile_set.num_actions)
        self.seat = 0
        self.seat_opponents: list[Opponent | None] = []
        self._ready = False
        self._illegal = False
        self._reward = 0.0

    # -- opponents ----------------------------------------------------------------------

    def set_opponents(self, opponents: Sequence[str | Opponent]) -> None:
        """Replace the opponent pool (takes effect at the next reset). Used by self-play to
        add frozen snapshots of the learner as training goes on."""
        self.opponents = resolve_opponents(opponents, self.opponent_factory, self.rules)

    # -- gymnasium API ------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        parse_reset_options(self.rules, options)  # ValueError before the seat or opponents are drawn
        super().reset(seed=seed)
        n = self.rules.num_players
        # A scripted first round can end before the learner moves; deal again then.
        for _ in range(MAX_REDEALS):
            self.seat = self.learner_seat if self.learner_seat is not None else int(self.np_random.integers(n))
            self.seat_opponents = [
                None if s == self.seat else self.opponents[int(self.np_random.integers(len(self.opponents)))]
                for s in range(n)
            ]
            self.aec.reset(seed=int(self.np_random.integers(SEED_BOUND)), options=options)
            for s, opponent in enumerate(self.seat_opponents):
                if opponent is not None:
                    opponent.reset(seed=int(self.np_random.integers(SEED_BOUND)) + s)
            self._reward = 0.0
            self._advance()
            if not self._episode_over:
                break
        else:
            self._ready = False
            what = "the scripted deal (options['hands'])" if options is not None else "every deal"
            raise ValueError(
                f"{what} ended before the learner's first decision {MAX_REDEALS} times in a row "
                "(each time with a new learner seat and opponents): the learner never plays it; reset() again"
            )
        self._ready = True
        return self._observe(), self._info(0)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not self._ready:
            raise RuntimeError("call reset() before step()")
        if self._episode_over:
            raise RuntimeError("the episode is over; call reset()")
        agent = self.aec.possible_agents[self.seat]
        rounds = len(self.aec.results)
        try:
            as_action(action, self.rules.tile_set.num_actions)
            an_action_id = True
        except (TypeError, ValueError):
            an_action_id = False
        try:
            self.aec.step(action)  # its errors name the legal actions
        except (TypeError, ValueError):
            # Not an action id at all (a float, None, out of range): an error in every mode.
            if self.illegal_action == "raise" or not an_action_id:
                raise
            self._illegal = True
            return (
                self._observe(),
                -1.0 * self.reward_scale,
                True,
                False,
                {**self._info(rounds), "illegal_action": True},
            )
        self._reward += self.aec.rewards[agent]
        self._advance()
        # Here too what rounds ended before the learner's first decision (added up by reset) is paid.
        reward, self._reward = self._reward * self.reward_scale, 0.0
        return self._observe(), reward, self._episode_over, False, self._info(rounds)

    def action_masks(self) -> np.ndarray:
        """Legal actions of the learner (bool); all False when the episode is over."""
        if not self._ready:
            raise RuntimeError("call reset() before action_masks()")
        mask = np.zeros(self.rules.tile_set.num_actions, dtype=bool)
        if not self._episode_over:  # then the learner is to move (see _advance)
            mask[self.aec.legal_actions()] = True
        return mask

    def render(self) -> str | np.ndarray | None:
        return self.aec.render(viewer=self.seat)  # the learner's hand, whoever moved last

    def close(self) -> None:
        self.aec.close()

    # -- internals ----------------------------------------------------------------------

    @property
    def _episode_over(self) -> bool:
        return self._illegal or all(self.aec.terminations.values())

    def _advance(self) -> None:
        """Let the opponents (and the learner's forced moves) play until the learner has a
        real decision or the episode ends, adding up the learner's rewards."""
        self._illegal = False
        learner = self.aec.possible_agents[self.seat]
        while not all(self.aec.terminations.values()):
            agent = self.aec.agent_selection
            seat = self.aec.agent_name_mapping[agent]
            if seat == self.seat:
                legal = self.aec.legal_actions()
                if not (self.skip_forced and len(legal) == 1):
                    return
                action = legal[0]
            else:
                opponent = self.seat_opponents[seat]
                assert opponent is not None
                action = opponent.act(self.aec.observe(agent, opponent_encoding(opponent, self.observation)))
            self.aec.step(action)
            self._reward += self.aec.rewards[learner]

    def _observe(self) -> np.ndarray:
        return self.aec.observe(self.aec.possible_agents[self.seat])["observation"]

    def _info(self, rounds_before: int) -> dict[str, Any]:
        """The learner's seat; ``round_result`` when a round ended since ``rounds_before``
        rounds had (the last of them); at the episode's end the scores and the learner's side."""
        info: dict[str, Any] = {"learner_seat": self.seat}
        results = self.aec.results
        if len(results) > rounds_before:
            info["round_result"] = results[-1].as_dict()
        if self._episode_over:
            info["scores"] = self.aec.scores
            info["learner_side"] = self.rules.side_of(self.seat)
        return info
