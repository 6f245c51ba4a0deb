"""Agents and OpenSpiel, both ways (the ``[openspiel]`` extra; users import them from
:mod:`block_env.openspiel`).

- :func:`make_bot` turns any agent spec into a ``pyspiel.Bot`` for the ``block_dominoes``
  game (``evaluate_bots``, OpenSpiel's tournaments), and :class:`AgentPolicy` into an OpenSpiel
  policy, so that exact best responses and NashConv measure our agents on small games.
- The agent spec ``openspiel:ismcts`` (and ``openspiel:mcts``) plays one of OpenSpiel's search
  bots in this project's arena, ``play`` and the browser: information-set MCTS over the game's
  own resampler (``BlockDominoesState.resample_from_infostate``), or plain MCTS on one
  determinization of the hidden tiles per decision.

An agent sees only its seat's observation; OpenSpiel's bots need a game state. An
:class:`OpenSpielAgent` therefore rebuilds one from what the observation says (its hand, the
ends, the tiles played, each seat's count and the suits it passed on), with the hidden tiles
dealt consistently with it, and lets the bot search from there.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python import policy as policy_lib
from open_spiel.python.algorithms import ismcts, mcts

from block_env.agents.base import Agent, Observation
from block_env.engine import Round
from block_env.openspiel_game import BlockDominoesGame, BlockDominoesState, resample_position
from block_env.rules import Rules
from block_env.validation import check_int, check_number

#: ``openspiel:NAME`` -> what it plays.
BOTS = ("ismcts", "mcts")


def agent_observation(state: BlockDominoesState, player: int, encoding: str = "vector") -> Observation:
    """What ``player`` observes in ``state`` in ``encoding``, as the environments give it to
    agents (each agent reads its own: ``agent.observation``)."""
    game = state.get_game()
    mask = np.zeros(game.num_distinct_actions(), dtype=np.int8)
    if state.current_player() == player:
        mask[state.legal_actions()] = 1
    return {"observation": state.observation_in(player, encoding), "action_mask": mask}


class AgentBot(pyspiel.Bot):
    """A pyspiel.Bot that plays one of our agents from its seat's observation, in the encoding
    the agent reads (``agent.observation``: a trained agent's agent.json's, "history" for a
    search with ``belief=prior``)."""

    def __init__(self, agent: Agent, player: int) -> None:
        pyspiel.Bot.__init__(self)
        self.agent = agent
        self.player = player

    def step(self, state: BlockDominoesState) -> int:
        return int(self.agent.act(agent_observation(state, self.player, self.agent.observation)))

    def restart_at(self, state: BlockDominoesState) -> None:
        self.agent.reset()

    def provides_force_action(self) -> bool:
        return False

    def provides_policy(self) -> bool:
        return False


def make_bot(spec: str, game: BlockDominoesGame, player: int, seed: int | None = None) -> pyspiel.Bot:
    """Any agent spec as a ``pyspiel.Bot`` playing ``player`` in ``game``, reading its own
    encoding (as at the arena's table).

    Examples:
        >>> import pyspiel
        >>> game = pyspiel.load_game("block_dominoes(preset=tiny)")
        >>> bots = [make_bot("greedy", game, 0), make_bot("strategic", game, 1)]
        >>> len(pyspiel.evaluate_bots(game.new_initial_state(), bots, 3))
        2
    """
    from block_env.agents import make_agent

    return AgentBot(make_agent(spec, game.rules, seed=seed), player)


class AgentPolicy(policy_lib.Policy):
    """An agent as an OpenSpiel policy over every seat: the probability 1 on the action it
    chooses reading its own encoding (seeded per information state, so that a search agent is
    one fixed policy), or uniform for the random agent. For exact best responses and NashConv
    on small games."""

    def __init__(self, spec: str, game: BlockDominoesGame) -> None:
        super().__init__(game, list(range(game.num_players())))
        from block_env.agents import make_agent

        self.spec = spec
        self.agent = make_agent(spec, game.rules)
        self._chosen: dict[tuple[int, str], int] = {}  # a decision depends on the information state alone

    def action_probabilities(self, state: Any, player_id: int | None = None) -> dict[int, float]:
        legal = state.legal_actions()
        if self.spec == "random":
            return {action: 1.0 / len(legal) for action in legal}
        player = state.current_player()
        key = (player, state.information_state_string(player))
        if key not in self._chosen:
            self.agent.reset(seed=zlib.crc32(key[1].encode()))
            self._chosen[key] = int(self.agent.act(agent_observation(state, player, self.agent.observation)))
        return {action: float(action == self._chosen[key]) for action in legal}


class OpenSpielAgent(Agent):
    """``openspiel:ismcts`` / ``openspiel:mcts``: OpenSpiel's search bots as an agent.

    Args:
        bot: "ismcts" (OpenSpiel's information-set MCTS, over the game's resampler) or "mcts"
            (OpenSpiel's MCTS on one determinization of the hidden tiles per decision); both
            with random rollouts at their leaves.
        simulations: playouts per decision.
        uct_c: the exploration constant.

    Same seed, same moves: every draw of the bot (its rollouts, and IS-MCTS's hidden tiles
    dealt again) comes from the agent's seeded stream.
    """

    name = "openspiel"

    def __init__(
        self,
        rules: Rules | str,
        seed: int | None = None,
        observation: str = "vector",
        bot: str = "ismcts",
        simulations: int = 200,
        uct_c: float = 2.0,
    ) -> None:
        super().__init__(rules, seed, observation)
        if bot not in BOTS:
            raise ValueError(f"openspiel bot must be one of {BOTS}, got {bot!r}")
        check_int("simulations", simulations, low=1)
        self.bot_name = bot
        self.simulations = simulations
        self.uct_c = check_number("openspiel uct_c", uct_c, 0.0)
        self.name = f"openspiel:{bot}"
        params = {name: value for name, value in self.rules.as_dict().items() if value is not None}
        self.game = pyspiel.load_game("block_dominoes", {"preset": "standard", **params})

    def act(self, obs: Observation) -> int:
        legal = np.flatnonzero(obs["action_mask"])
        if len(legal) == 1:
            return int(legal[0])
        state = self._state_from(obs)
        random_state = np.random.RandomState(self.rng.getrandbits(31))
        evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=random_state)
        if self.bot_name == "ismcts":
            bot = ismcts.ISMCTSBot(self.game, evaluator, self.uct_c, self.simulations, random_state=random_state)
            # OpenSpiel's own resampler draws from a sampler seeded by the system's entropy, not by
            # the bot: this one draws from the bot's seeded stream (same seed, same game).
            bot.set_resampler(lambda state, player: state.resample_from_infostate(player, random_state.uniform))
        else:  # plain MCTS on this one determinization
            bot = mcts.MCTSBot(self.game, self.uct_c, self.simulations, evaluator, random_state=random_state)
        action = int(bot.step(state))
        if not obs["action_mask"][action]:  # the rebuilt state has the observation's legal moves
            raise RuntimeError(f"{self.name} chose action {action}, which the observation does not allow")
        return action

    def _state_from(self, obs: Observation) -> BlockDominoesState:
        """A game state this seat cannot tell from the real one, in its own frame (it sits at
        seat 0): its hand and the public facts of its observation, the hidden tiles dealt
        consistently with the other seats' counts and the suits they passed on."""
        position = Round.from_view(self.view(obs))
        state = self.game.new_initial_state()
        state.enter_position(resample_position(position, 0, random.Random(self.rng.getrandbits(31))))
        return state
