"""N single-agent views stepped together on the batched engine (docs/environments.md,
The vector view): a Gymnasium ``VectorEnv`` in one process.

Made by ``gymnasium.make_vec("block_env/BlockDominoes-v0", num_envs=N,
vectorization_mode="vector_entry_point", ...)`` with the single env's options. Each game has a
learning seat; the other seats are played by opponents until the learner's next decision.
Random and greedy opponents (a ``compiled_policy``, see :mod:`block_env.opponents`) and the
learner's forced moves are played inside the batched engine's compiled loop, with no call per
move. Other opponents with ``act_batch(observations, masks)`` (the :class:`BatchOpponent`
protocol: frozen policy snapshots, search, strategic) act for every game waiting on them in one
call; the rest act game by game through ``act(obs)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from block_env.aec import parse_reset_options
from block_env.batched import DECISION, EXTERNAL, BatchedGames, BatchResults, CompiledPolicies
from block_env.engine import partner_of
from block_env.observations import BatchEncoder, batch_encoder, layout_for, privileged_layout
from block_env.opponents import (
    BatchOpponent,
    Opponent,
    OpponentFactory,
    compiled_policy,
    opponent_encoding,
    resolve_opponents,
)
from block_env.options import (
    ENCODINGS,
    EPISODES,
    ILLEGAL_ACTIONS,
    MAX_REDEALS,
    REWARDS,
    check_learner_seat,
)
from block_env.rules import Rules, resolve_rules
from block_env.seeding import SEED_BOUND
from block_env.validation import check_bool, check_choice, check_int, check_number


class _Step:
    """What one step (or reset) gathers per game while the games play on."""

    def __init__(self, num_envs: int, size: int, num_sides: int) -> None:
        self.rewards = np.zeros(num_envs, dtype=np.float64)
        self.terminated = np.zeros(num_envs, dtype=bool)
        self.episode_done = np.zeros(num_envs, dtype=bool)  # ended, not yet restarted
        self.fresh = np.zeros(num_envs, dtype=bool)  # a new episode before the learner's first decision
        self.redeals = np.zeros(num_envs, dtype=np.int64)
        self.final_obs = np.zeros((num_envs, size), dtype=np.float32)
        self.final_seats = np.zeros(num_envs, dtype=np.int64)
        self.final_scores = np.zeros((num_envs, num_sides), dtype=np.int64)


class BlockDominoesVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` games of Block, each from one learning seat against opponents.

    ## Spaces
    ``single_observation_space`` is the single env's ``Box`` (the "vector", "history" or "tracked"
    encoding of the learner's seat); ``observation_space`` batches it to ``(N, size)``.
    ``single_action_space`` is ``Discrete(2T+1)``; ``action_space`` is ``MultiDiscrete``.
    ``action_masks()`` returns the learners' legal actions, ``(N, 2T+1)`` bool.

    ## Autoreset
    Gymnasium's ``AutoresetMode.SAME_STEP`` (``metadata["autoreset_mode"]``): a game whose
    episode ends is reset within the same step; the returned observation is the new
    episode's first, and ``info["final_obs"][i]``/``info["final_info"]`` (with the masks
    ``info["_final_obs"]``/``info["_final_info"]``) keep the finished one's last.

    ## Rewards, episodes, options
    As the single env (``block_env.BlockDominoesEnv``): the reward mode's value for the
    learner's side, summed over the opponents' moves, times ``reward_scale``; nothing
    truncates. An action array of the wrong shape or dtype, or an illegal action in any game,
    raises ValueError naming the game and its legal actions and changes no game, unless
    ``illegal_action="terminate"``: then those games end with reward ``-reward_scale`` and
    ``info["illegal_action"]``, and the others step.

    ## Seeding
    ``reset(seed=s)`` makes the whole batch reproducible: same seed, same actions, same
    trajectories.

    ## Privileged observations (asymmetric critics)
    ``privileged=True`` (not a single-env option) appends to each learner observation what the
    learner cannot see, the ``hidden_hands`` piece of
    :func:`block_env.observations.privileged_layout`: for training a critic on full
    information while the actor reads only the first ``layout_for(rules, observation).size``
    values. Opponents still observe the player encoding.

    ## Partner
    With partnership rules every opponent seat, the learner's partner's included, draws from
    the pool at each new episode. ``partner`` (an agent spec or object; :meth:`set_partner`
    changes it) seats one agent opposite the learner in every game instead, and only the two
    seats of the other side draw from the pool: a copy of the learner, so that both seats of
    its side play its policy as in the arena, or the agent it should learn to play beside.

    Examples:
        >>> import gymnasium, block_env
        >>> envs = gymnasium.make_vec(block_env.GYM_ID, num_envs=4, vectorization_mode="vector_entry_point", opponents=["greedy"])
        >>> observations, infos = envs.reset(seed=0)
        >>> observations.shape, envs.action_masks().shape
        ((4, 121), (4, 57))
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
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
        opponent_factory: OpponentFactory | None = None,
        privileged: bool = False,
        partner: str | Opponent | None = None,
    ) -> None:
        self.rules = resolve_rules(rules)
        check_choice("episode", episode, EPISODES)
        check_choice("reward", reward, REWARDS)
        check_choice("observation", observation, ENCODINGS)
        check_choice("illegal_action", illegal_action, ILLEGAL_ACTIONS)
        n = self.rules.num_players
        check_learner_seat(learner_seat, n)
        check_number("reward_scale", reward_scale, positive=True)
        check_bool("skip_forced", skip_forced)
        check_bool("privileged", privileged)
        check_int("num_envs", num_envs, low=1)
        self.games = BatchedGames(self.rules, num_envs, episode=episode)
        self.num_envs = self.games.num_games
        self.episode = episode
        self.reward_mode = reward
        self.observation = observation
        self.learner_seat = learner_seat
        self.reward_scale = float(reward_scale)
        self.skip_forced = skip_forced
        self.illegal_action = illegal_action
        self.opponent_factory = opponent_factory
        self.seats = np.zeros(self.num_envs, dtype=np.int64)  # each game's learner seat
        # Rounds that ended in a new episode before the learner's first decision (match
        # episodes): their value is paid with that decision's step, as the single env does.
        self._unpaid = np.zeros(self.num_envs, dtype=np.float64)
        self.seat_opponents = np.zeros((self.num_envs, n), dtype=np.int64)  # pool index per seat
        self._partner_of = np.array([partner_of(self.rules, s) for s in range(n)]) if self.rules.partnership else None
        self.partner: Opponent | None = None
        self._drawn: list[Opponent] = []
        self.set_opponents(opponents)
        if partner is not None:
            self.set_partner(partner)
        self.privileged = privileged
        layout = privileged_layout(self.rules, observation) if privileged else layout_for(self.rules, observation)
        self._encode_learner = (
            BatchEncoder(self.rules, layout) if privileged else batch_encoder(self.rules, observation)
        )
        self.single_observation_space = spaces.Box(0.0, layout.high(), shape=(layout.size,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(self.rules.tile_set.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._side_of = np.array([self.rules.side_of(s) for s in range(n)])
        self._masks: np.ndarray | None = None

    # -- opponents ----------------------------------------------------------------------------

    def set_opponents(self, opponents: Sequence[str | Opponent]) -> None:
        """Replace the opponent pool. Games mid-episode keep each seat's pool index (modulo
        the new pool's size); every new episode draws its opponents from the new pool."""
        self._drawn = resolve_opponents(opponents, self.opponent_factory, self.rules)
        self._build_pool()

    def set_partner(self, partner: str | Opponent | None) -> None:
        """Seat ``partner`` (an agent spec or object) opposite the learner in every game, from
        now on, mid-episode games included (it is reset with the pool at the next ``reset``).
        None draws the partner's seat from the pool again at each new episode; games in progress
        finish with a pool entry there. Partnership rules only (the constructor's ``partner``)."""
        if self._partner_of is None:
            raise ValueError(
                f"partner: only partnership rules seat a partner, these rules have {self.rules.num_players} players "
                "each for themselves"
            )
        try:
            seated = None if partner is None else resolve_opponents([partner], self.opponent_factory, self.rules)[0]
        except ValueError as e:
            raise ValueError(f"partner: {e}".replace("opponents[0] ", "", 1)) from None
        self.partner = seated
        self._build_pool()

    def _build_pool(self) -> None:
        """``self.opponents``: the drawn pool, then the fixed partner (if any) as its last entry."""
        pool = [*self._drawn, *([self.partner] if self.partner is not None else [])]
        self.seat_opponents %= len(self._drawn)
        self._seat_partner(np.arange(self.num_envs))
        self.opponents = pool
        compiled = [compiled_policy(o) for o in pool]
        # Pool index -> row of the compiled policies (-1: the opponent acts through Python).
        self._policy_index = np.full(len(pool), -1, dtype=np.int64)
        rows: list[np.ndarray | None] = []
        for index, policy in enumerate(compiled):
            if policy is not None:
                self._policy_index[index] = len(rows)
                rows.append(None if isinstance(policy, str) else np.asarray(policy, dtype=np.int64))
        self._policies = CompiledPolicies.build(rows, self.rules.tile_set.num_actions)
        self._batched = [isinstance(o, BatchOpponent) for o in pool]
        # Each opponent observes in the encoding it reads.
        self._opponent_encoders = [batch_encoder(self.rules, opponent_encoding(o, self.observation)) for o in pool]
        self._observes = [not batched or getattr(o, "observes", True) for o, batched in zip(pool, self._batched)]

    # -- Gymnasium API ------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start every game anew. ``options`` are refused: scripted deals are the single
        env's (``reset(options={"hands": ...})``); a batch starts from seeded deals."""
        if options is not None:
            parse_reset_options(self.rules, options)  # the same errors for malformed options
            raise ValueError("the vector env deals every game from its seed; script a deal with the single env")
        super().reset(seed=seed)
        self.games.reset(seed=int(self.np_random.integers(SEED_BOUND)))
        for i, opponent in enumerate(self.opponents):
            opponent.reset(seed=int(self.np_random.integers(SEED_BOUND)) + i)
        # A splitmix64 stream per game for the compiled uniform (random) opponents.
        self._streams = self.np_random.integers(0, 2**63, size=self.num_envs, dtype=np.uint64)
        everyone = self.games.all_games
        step = self._new_step()
        self._draw_seats(everyone)
        step.fresh[:] = True
        self._unpaid[:] = 0.0
        self._play_until_learner(everyone, step)
        self._masks = self.games.legal_mask()
        return self._observe(everyone), self._info()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if self._masks is None:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        n = self.num_envs
        step = self._new_step()
        step.rewards += self._unpaid
        self._unpaid[:] = 0.0
        legal = self._masks[np.arange(n), actions]
        illegal = np.flatnonzero(~legal)
        if len(illegal):
            if self.illegal_action == "raise":
                game = int(illegal[0])
                raise ValueError(
                    f"game {game}: action {int(actions[game])} is not legal for the learner (seat "
                    f"{int(self.seats[game])}); legal actions: {self.games.describe_legal(game)}"
                )
            step.rewards[illegal] = -1.0  # -reward_scale once scaled below
            step.episode_done[illegal] = True
        playing = np.flatnonzero(legal)
        self._collect(self.games.step(actions[playing], playing, check=False), step)
        self._play_until_learner(self.games.all_games, step)

        infos = self._info()
        terminated = step.terminated
        if terminated.any():
            infos["final_obs"] = np.empty(n, dtype=object)
            for game in np.flatnonzero(terminated):
                infos["final_obs"][game] = step.final_obs[game]
            infos["_final_obs"] = terminated.copy()
            final_info: dict[str, Any] = {
                "learner_seat": step.final_seats,
                "_learner_seat": terminated.copy(),
                "scores": step.final_scores,  # each side's points at the end, as the single env's info
                "_scores": terminated.copy(),
                "learner_side": self._side_of[step.final_seats],
                "_learner_side": terminated.copy(),
            }
            if len(illegal):
                final_info["illegal_action"] = ~legal
                final_info["_illegal_action"] = terminated.copy()
            infos["final_info"] = final_info
            infos["_final_info"] = terminated.copy()
        self._masks = self.games.legal_mask()
        obs = self._observe(self.games.all_games)
        rewards = (step.rewards * self.reward_scale).astype(np.float32)
        return obs, rewards, terminated, np.zeros(n, dtype=bool), infos

    def action_masks(self) -> np.ndarray:
        """(N, 2T+1) bool: each learner's legal actions."""
        if self._masks is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._masks.copy()

    def close_extras(self, **kwargs: Any) -> None:
        pass

    # -- internals ----------------------------------------------------------------------------

    def _new_step(self) -> _Step:
        return _Step(self.num_envs, self._encode_learner.layout.size, self.games.scores.shape[1])

    def _check_actions(self, actions: Any) -> np.ndarray:
        array = np.asarray(actions)
        if array.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), one per game; got {array.shape}")
        if not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"actions must be integers (an integer dtype), got dtype {array.dtype}")
        num_actions = self.rules.tile_set.num_actions
        out_of_range = np.flatnonzero((array < 0) | (array >= num_actions))
        if len(out_of_range):
            game = int(out_of_range[0])
            raise ValueError(
                f"game {game}: action {int(array[game])} is out of range 0..{num_actions - 1}; "
                f"legal actions: {self.games.describe_legal(game)}"
            )
        return array.astype(np.int64)

    def _draw_seats(self, games: np.ndarray) -> None:
        k, n = len(games), self.rules.num_players
        if self.learner_seat is None:
            self.seats[games] = self.np_random.integers(n, size=k)
        else:
            self.seats[games] = self.learner_seat
        self.seat_opponents[games] = self.np_random.integers(len(self._drawn), size=(k, n))
        self._seat_partner(games)

    def _seat_partner(self, games: np.ndarray) -> None:
        """The fixed partner (the pool's last entry) at the seat opposite each game's learner."""
        if self.partner is not None and self._partner_of is not None:
            self.seat_opponents[games, self._partner_of[self.seats[games]]] = len(self._drawn)

    def _play_until_learner(self, games: np.ndarray, step: _Step) -> None:
        """Play the opponents' moves (and the learner's forced ones) in ``games`` until each
        learner has a real decision; an episode that ends on the way is kept (its final
        observation) and a new one starts in the same game (SAME_STEP autoreset). Compiled
        opponents move inside the engine's loop; the others one move per pass here."""
        engine = self.games
        pending = games
        while len(pending):
            done = pending[step.episode_done[pending]]
            if len(done):
                self._restart(done, step)
            next_round = pending[engine.over[pending]]
            if len(next_round):
                engine.advance(next_round)  # match episodes: the next round of the match
            status, results = engine.play_until_decision(
                pending,
                self.seats,
                self._policy_index[self.seat_opponents],
                self._policies,
                self._streams,
                self.skip_forced,
            )
            self._collect(results, step)
            step.fresh[pending[status == DECISION]] = False  # a real decision: the new episode counts
            external = pending[status == EXTERNAL]
            if len(external):
                actions = np.empty(len(external), dtype=np.int64)
                masks = engine.legal_mask(external)
                self._opponent_actions(external, masks, actions, np.arange(len(external)))
                self._collect(engine.step(actions, external, check=False), step)
            pending = pending[status != DECISION]

    def _restart(self, games: np.ndarray, step: _Step) -> None:
        """Keep the final observation of episodes that ended, then deal each game a new one.
        An episode over before the learner's first decision (every move forced) is dealt
        again unseen, as the single env's reset does."""
        counted = games[~step.fresh[games]]
        self._unpaid[games[step.fresh[games]]] = 0.0  # dealt again unseen: nothing of it is paid
        step.final_obs[counted] = self._observe(counted)
        step.final_seats[counted] = self.seats[counted]
        step.final_scores[counted] = self.games.scores[counted]
        step.terminated[counted] = True
        step.redeals[games[step.fresh[games]]] += 1
        if (step.redeals > MAX_REDEALS).any():
            raise RuntimeError(f"games ended before the learner's first decision {MAX_REDEALS} times in a row")
        self.games.reset(games=games)
        self._draw_seats(games)
        step.episode_done[games] = False
        step.fresh[games] = True

    def _opponent_actions(self, games: np.ndarray, masks: np.ndarray, out: np.ndarray, rows: np.ndarray) -> None:
        """Each game's opponent to move chooses; one batched call per batched opponent."""
        seats = self.games.current[games]
        choice = self.seat_opponents[games, seats]
        for index in np.unique(choice):
            mine = np.flatnonzero(choice == index)
            opponent = self.opponents[index]
            batched, observes = self._batched[index], self._observes[index]
            obs = self._opponent_encoders[index](self.games, games[mine], seats[mine]) if observes else None
            if batched:
                actions = np.asarray(opponent.act_batch(obs, masks[mine]), dtype=np.int64)
            else:
                assert obs is not None  # an opponent acting game by game always observes
                actions = np.array(
                    [
                        opponent.act({"observation": o, "action_mask": m.astype(np.int8)})
                        for o, m in zip(obs, masks[mine])
                    ],
                    dtype=np.int64,
                )
            legal = masks[mine, actions] if actions.shape == (len(mine),) else np.zeros(len(mine), dtype=bool)
            if not legal.all():
                j = int(np.flatnonzero(~legal)[0])
                game = int(games[mine][j])
                raise RuntimeError(f"opponent {opponent!r} chose an illegal action in game {game}")
            out[rows[mine]] = actions

    def _collect(self, results: BatchResults, step: _Step) -> None:
        """Add each finished round's value for the learner's side: to this step's reward, or,
        in a new episode the learner has not yet seen, to what its first decision's step pays;
        mark ended episodes."""
        if not len(results.games):
            return
        g = results.games
        values = results.side_values(self.reward_mode)[np.arange(len(g)), self._side_of[self.seats[g]]]
        fresh = step.fresh[g]
        step.rewards[g] += np.where(fresh, 0.0, values)
        np.add.at(self._unpaid, g[fresh], values[fresh])
        step.episode_done[g] |= results.episode_over

    def _observe(self, games: np.ndarray) -> np.ndarray:
        return self._encode_learner(self.games, games, self.seats[games])

    def _info(self) -> dict[str, Any]:
        return {"learner_seat": self.seats.copy(), "_learner_seat": np.ones(self.num_envs, dtype=bool)}
