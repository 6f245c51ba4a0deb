"""Block dominoes as an OpenSpiel game (the ``[openspiel]`` extra): every rules set of this
project for OpenSpiel's algorithms (CFR, exact best responses and NashConv, MCTS, IS-MCTS,
``evaluate_bots``), on the same engine as the environments.

``import block_env.openspiel`` registers the Python game ``block_dominoes``:

- ``pyspiel.load_game("block_dominoes")``: the standard rules, one round;
- ``pyspiel.load_game("block_dominoes(preset=standard_3p)")``: any preset of
  ``block_env.PRESETS`` (``tiny`` and ``small`` are small enough for exact methods);
- every ``Rules`` field is a parameter too and overrides the preset:
  ``block_dominoes(max_pip=9,num_players=4,hand_size=10)``; 0, "" and False mean "the preset's";
- ``episode=round`` (default) or ``episode=match``.

The game is sequential with explicit chance nodes: the deal (one tile at a time, seat 0's
hand first, each hand in ascending tile order, so that every deal of hands is equally likely)
and, under ``first_lead="lot"``, the lot for the
first leader (uniform over the seats). Player actions are this project's action ids (``2*i``
tile i on the left end, ``2*i + 1`` on the right end, ``2*T`` the pass); chance outcomes are
tile ids (deal) or seats (lot). Returns are the ``zero_sum`` reward per seat (points per round,
summed over the rounds of a match), paid when the game ends.

Observations go through OpenSpiel's observer API: a player's default observation tensor is
exactly this project's ``vector`` encoding for that seat (``block_env.decode_observation``
reads it), the information-state tensor (perfect recall) the ``history`` encoding.

Bots both ways: :func:`make_bot` turns any agent spec into a ``pyspiel.Bot``,
:class:`AgentPolicy` into an OpenSpiel policy (exact best responses, NashConv), and the agent
spec ``openspiel:ismcts`` plays OpenSpiel's IS-MCTS in this project's arena (see
:mod:`block_env.agents.openspiel`). The game lives in :mod:`block_env.openspiel_game` (the
core: it knows nothing of agents); this module adds the bots and sits beside the arena and the
apps, above the agents.

Examples:
    >>> import pyspiel
    >>> import block_env.openspiel
    >>> game = pyspiel.load_game("block_dominoes(preset=tiny)")
    >>> state = game.new_initial_state()
    >>> while state.is_chance_node():
    ...     state.apply_action(state.chance_outcomes()[0][0])
    >>> state.current_player(), state.legal_actions()[:2]
    (0, [0, 2])
"""

from __future__ import annotations

from block_env.agents.openspiel import AgentBot, AgentPolicy, OpenSpielAgent, agent_observation, make_bot
from block_env.openspiel_game import (
    EPISODES,
    GAME_TYPE,
    MAX_MATCH_ROUNDS,
    PARAMETERS,
    SHORT_NAME,
    BlockDominoesGame,
    BlockDominoesObserver,
    BlockDominoesState,
    resample_position,
    rules_from_parameters,
)

__all__ = [
    "EPISODES",
    "GAME_TYPE",
    "MAX_MATCH_ROUNDS",
    "PARAMETERS",
    "SHORT_NAME",
    "AgentBot",
    "AgentPolicy",
    "BlockDominoesGame",
    "BlockDominoesObserver",
    "BlockDominoesState",
    "OpenSpielAgent",
    "agent_observation",
    "make_bot",
    "resample_position",
    "rules_from_parameters",
]
