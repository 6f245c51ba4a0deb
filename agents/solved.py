"""The solver's policy as an agent.

``solved:PATH`` (:class:`SolvedAgent`) plays the average policy ``block-dominoes solve``
wrote into PATH (its ``policy.npz``): at each decision it draws a move with the policy's
probabilities for what the seat knows (its dealt hand, who led, the round's moves, read from
the ``history`` encoding). An agent does not know which seat it sits in, and the two seats of
a two-player round are alike (the same deals, the lead by lot or by the heaviest tile), so it
plays seat 0's half of the policy from either seat.

Its exact NashConv, like any agent's, comes from :func:`block_env.training.solve.agent_policy`
(the agent's move at each information state) and :func:`block_env.cfr.nash_conv`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from block_env.agents.base import Agent, Observation, legal_actions
from block_env.cfr import SolvedPolicy, read_policy
from block_env.observations import decode_observation
from block_env.rules import Rules


class SolvedAgent(Agent):
    """``solved:PATH``: the average policy of a solve (see the module docstring).

    Args:
        path: a ``solve`` output folder, or its ``policy.npz``.
    """

    name = "solved"

    def __init__(self, rules: Rules, seed: int | None = None, observation: str = "history", path: str = "") -> None:
        if observation != "history":
            raise ValueError(f"a solved agent reads the round's moves from the 'history' encoding, got {observation!r}")
        super().__init__(rules, seed, observation)
        self.solved: SolvedPolicy = read_policy(Path(path))
        if self.solved.rules != self.rules:
            raise ValueError(f"the solved policy at {path} is for {self.solved.rules}, not for {self.rules}")
        self._index = self.solved.index(0)

    def probabilities(self, obs: Observation) -> dict[int, float]:
        """The policy's probability of each legal move for what the observing seat knows."""
        parts = decode_observation(obs, self.rules, "history")
        ts = self.rules.tile_set
        dealt = ts.mask_of(parts["hand"])
        for seat, action in parts["moves"]:
            if seat == 0 and action != ts.pass_action:
                dealt |= 1 << (action >> 1)
        moves = np.array([action for _, action in parts["moves"]], np.int16).tobytes()
        info = self._index.get((dealt, parts["leader"], moves))
        if info is None:
            raise ValueError(
                f"the solved policy has no information state for hand {ts.tiles_of(dealt)}, leader "
                f"{parts['leader']} and moves {[a for _, a in parts['moves']]}"
            )
        actions, probabilities = self.solved.actions(info)
        legal = legal_actions(obs)
        if sorted(int(a) for a in actions) != legal:
            raise ValueError(f"the solved policy's moves {actions.tolist()} are not the legal moves {legal}")
        return {int(a): float(p) for a, p in zip(actions, probabilities)}

    def act(self, obs: Observation) -> int:
        moves = self.probabilities(obs)
        return self.rng.choices(list(moves), weights=list(moves.values()))[0]
