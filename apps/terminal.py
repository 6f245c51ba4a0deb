"""Play against agents in the terminal (``block-dominoes play``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from block_env.aec import raw_env
from block_env.agents import Agent, HumanAgent, make_agent
from block_env.episodes import Move, play_moves, step
from block_env.render import seat_name
from block_env.rules import Rules
from block_env.seeding import seat_seed


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
    seats, each seeded by its seat as in the arena). Shows the table before each of your moves
    and every round's result."""
    n = rules.num_players
    if not 0 <= seat < n:
        raise ValueError(f"seat must be 0..{n - 1} for {n} players, got {seat}")
    env = raw_env(rules, episode=episode, reward="points", render_mode="ansi")
    env.reset(seed=seed)
    human = HumanAgent(rules, read=read, write=write)
    if not 1 <= len(opponents) <= n - 1:
        raise ValueError(
            f"opponents: one agent spec for each other seat at most ({n - 1} for {n} players), "
            f"used in turn when fewer; got {len(opponents)}: {' '.join(opponents)}"
        )
    others = iter(list(opponents) * n)
    agents: list[Agent] = [
        human if s == seat else make_agent(next(others), rules, seed=None if seed is None else seat_seed(seed, s))
        for s in range(n)
    ]
    write(
        f"You are {seat_name(seat)}"
        + (f" (partners: seats {seat % 2} and {seat % 2 + 2})" if rules.partnership else "")
    )
    write("Opponents: " + ", ".join(f"{seat_name(s)} = {a.name}" for s, a in enumerate(agents) if s != seat))
    players: list[Agent | None] = [None if s == seat else agent for s, agent in enumerate(agents)]

    def report(move: Move) -> None:
        if move.seat != seat:
            write(f"{seat_name(move.seat)} ({agents[move.seat].name}): {rules.tile_set.describe_action(move.action)}")
        result = move.round_over
        if result is not None:
            who = "nobody (tied block)" if result.winner is None else seat_name(result.winner)
            write(
                f"\nRound {len(env.results)} over ({result.end}): {who} scores {result.award}. "
                f"Pips left: {list(result.hand_pips)}. Scores: {env.scores}"
            )

    while not env.episode_over:
        for move in play_moves(env, players):
            report(move)
        if not env.episode_over:  # your move
            write("\n" + str(env.render()))  # rendered for the agent to move: you
            report(step(env, human.act(env.observe(env.agent_selection))))
    if episode == "match":
        winner = env.match_winner
        if winner is None:
            outcome = "a draw"
        else:
            won = winner == rules.side_of(seat)
            who = f"side {winner}" if rules.partnership else seat_name(winner)
            outcome = f"{who} wins ({'you win' if won else 'you lose'})"
        write(f"Match over: {outcome}, scores {env.scores}")
    return 0
