"""Play against agents in the terminal (``block-dominoes play``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from block_env.aec import raw_env
from block_env.agents import Agent, HumanAgent, make_agent
from block_env.render import seat_name
from block_env.rules import Rules


def play_in_terminal(
    rules: Rules,
    opponents: Sequence[str],
    *,
    seat: int = 0,
    episode: str = "match",
    seed: int | None = None,
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
) -> int:
    """A human at ``seat`` against ``opponents`` (agent specs, used in turn for the other
    seats). Shows the table before each of your moves and every round's result."""
    n = rules.num_players
    if not 0 <= seat < n:
        raise ValueError(f"seat must be 0..{n - 1} for {n} players, got {seat}")
    env = raw_env(rules, episode=episode, reward="points", render_mode="ansi")
    env.reset(seed=seed)
    human = HumanAgent(rules, read=read, write=write)
    others = iter(opponents * n)
    agents: list[Agent] = [human if s == seat else make_agent(next(others), rules, seed=seed) for s in range(n)]
    write(
        f"You are {seat_name(seat)}"
        + (f" (partners: seats {seat % 2} and {seat % 2 + 2})" if rules.partnership else "")
    )
    write("Opponents: " + ", ".join(f"{seat_name(s)} = {a.name}" for s, a in enumerate(agents) if s != seat))
    reported = 0
    while not all(env.terminations.values()):
        agent = env.agent_selection
        s = env.agent_name_mapping[agent]
        if s == seat:
            write("\n" + env.render())  # rendered for the agent to move: you
        action = agents[s].act(env.observe(agent))
        if s != seat:
            write(f"{agent} ({agents[s].name}): {rules.tile_set.describe_action(action)}")
        round_before = env.round_number
        env.step(action)
        if len(env.results) > reported:
            reported = len(env.results)
            result = env.results[-1]
            who = "nobody (tied block)" if result.winner is None else seat_name(result.winner)
            write(
                f"\nRound {round_before} over ({result.end}): {who} scores {result.award}. "
                f"Pips left: {list(result.hand_pips)}. Scores: {env.scores}"
            )
    if episode == "match":
        winner = env.match_winner
        write("Match over: " + ("a draw" if winner is None else f"side {winner} wins") + f", scores {env.scores}")
    return 0
