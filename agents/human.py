"""A human at the terminal: a readable board, the legal moves listed, bad input re-asked."""

from __future__ import annotations

from collections.abc import Callable

from block_env.agents.base import Agent, Observation, legal_actions
from block_env.rules import Rules
from block_env.tiles import format_tile


class HumanAgent(Agent):
    """Asks a person for each move. ``read``/``write`` default to input() and print().

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> human = HumanAgent(env.rules, read=lambda prompt: "1", write=lambda text: None)
        >>> env.observe(env.agent_selection)["action_mask"][human.act(env.observe(env.agent_selection))]
        np.int8(1)
    """

    name = "human"

    def __init__(
        self,
        rules: Rules,
        seed: int | None = None,
        observation: str = "vector",
        read: Callable[[str], str] = input,
        write: Callable[[str], None] = print,
    ) -> None:
        super().__init__(rules, seed, observation)
        self.read = read
        self.write = write

    def board(self, obs: Observation) -> str:
        """What this seat sees, in words (seats relative: "you", "next", ...)."""
        k = self.view(obs)
        ts = self.rules.tile_set
        n = self.rules.num_players
        names = ["you"] + [f"seat +{r}" + (" (partner)" if r == k.partner else "") for r in range(1, n)]
        ends = "empty line: you lead" if k.ends is None else f"{k.ends[0]} (left) | {k.ends[1]} (right)"
        lines = [f"Ends: {ends}", "Your hand: " + " ".join(format_tile(t) for t in ts.tiles_of(k.hand))]
        counts = ", ".join(f"{names[r]}: {c}" for r, c in enumerate(k.hand_counts))
        lines.append(f"Tiles in hand: {counts}")
        known = [
            f"{names[r]} has no {', '.join(str(v) for v in range(ts.num_suits) if k.voids[r] >> v & 1)}"
            for r in range(1, n)
            if k.voids[r]
        ]
        if known:
            lines.append("Known from passes: " + "; ".join(known))
        return "\n".join(lines)

    def act(self, obs: Observation) -> int:
        legal = legal_actions(obs)
        ts = self.rules.tile_set
        self.write(self.board(obs))
        if legal == [ts.pass_action]:
            self.write("No tile fits: you pass.")
            return legal[0]
        for number, action in enumerate(legal, 1):
            self.write(f"  {number}) {ts.describe_action(action)}")
        while True:
            answer = self.read(f"Your move (1-{len(legal)}): ").strip()
            if answer.isascii() and answer.isdigit() and 1 <= int(answer) <= len(legal):  # not "²"
                return legal[int(answer) - 1]
            self.write(f"{answer!r} is not a move here: type a number from 1 to {len(legal)}.")
