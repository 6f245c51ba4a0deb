"""Playing many of the arena's episodes at once, in lockstep: the same records as
:func:`block_env.arena.play_deal`, faster.

Every episode of a batch of deals (each deal in every table and seating) is laid out in one
:class:`block_env.batched.BatchedGames` and stepped together: at each step every agent is
asked for the moves of all the games where it is to move. An agent that is ``deterministic``
(its move a function of the observation alone, such as a trained network choosing its best
legal move) answers them all with one ``act_batch`` call, one forward pass. Any other agent
(one that draws random numbers, or remembers its earlier moves) plays each episode with an
instance of its own (one for all its seats there, as in :func:`play_deal`), reset with the
seeds that episode gives its seats, and is asked with
``act`` one game at a time: it sees the same observations and draws from the same streams as
in :func:`play_deal`, so its moves are the same too.

Each game starts from the first deal the AEC env deals for the deal's seed, and the
observations are the batched encoder's rows, which equal the env's (a test compares whole
arenas against :func:`play_deal`). Round episodes only: a match's later rounds are dealt by the
engine's own generator, and replays (``record``) and the heaviest first lead are not laid out
here either; :func:`supports` says which configs this plays, and the others are played deal by
deal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from block_env.agents import Agent, make_agent
from block_env.arena.config import ArenaConfig, seatings
from block_env.arena.deals import arena_env
from block_env.batched import BatchedGames
from block_env.observations import batch_encoder
from block_env.opponents import BatchOpponent
from block_env.seeding import seat_seed


def supports(config: ArenaConfig) -> bool:
    """Whether :func:`play_lockstep` can play ``config``: single rounds, no replays, and a
    first lead drawn by lot (every other config is played deal by deal)."""
    return config.episode == "round" and not config.record and config.rules.first_lead != "heaviest"


def play_lockstep(
    config: ArenaConfig, deals: Sequence[tuple[int, int]], agents: dict[str, Agent] | None = None
) -> list[tuple[int, list[dict[str, Any]]]]:
    """(deal, records) for each (deal, seed), the records exactly :func:`play_deal`'s, all the
    deals' episodes played at once; ``agents`` caches the built agents by spec across calls.
    Only a deterministic agent there plays (all its games at once): for any other spec a fresh
    instance is built for each episode, and the one in ``agents`` is not asked for a move.
    ValueError for a config :func:`supports` refuses."""
    if not supports(config):
        raise ValueError(
            "lockstep play needs round episodes, no replays and a first lead by lot; "
            f"got episode={config.episode!r}, record={config.record}, first_lead={config.rules.first_lead!r}"
        )
    agents = {} if agents is None else agents
    for spec in config.agents:
        if spec not in agents:
            agents[spec] = make_agent(spec, config.rules)
    rules = config.rules
    ts = rules.tile_set
    players = rules.num_players
    episodes = [(deal, seed, table, seating) for deal, seed in deals for table, seating in seatings(config)]
    if not episodes:
        return []

    # Each deal's first round as the AEC env deals it from the deal's seed.
    env = arena_env(rules, "round")
    first_deals: dict[int, dict[str, Any]] = {}
    for _, seed in deals:
        if seed not in first_deals:
            env.reset(seed=seed)
            first_deals[seed] = env.deal()
    hands = np.zeros((len(episodes), players, ts.num_tiles), dtype=bool)
    leaders = np.zeros(len(episodes), dtype=np.int64)
    for e, (_, seed, _, _) in enumerate(episodes):
        dealt = first_deals[seed]
        for seat, hand in enumerate(dealt["hands"]):
            hands[e, seat, [ts.index[tile] for tile in hand]] = True  # the env's tiles, low half first
        leaders[e] = dealt["leader"]
    games = BatchedGames(rules, len(episodes), episode="round", seed=0)
    games.set_positions(
        hands,
        ends=None,
        played=np.zeros(ts.num_tiles, dtype=bool),
        current=leaders,
        leader=leaders,
        passes=0,
        voids=np.zeros(players, dtype=np.int64),
    )

    # Who sits where (agent indices by episode and seat), and an instance of every agent that
    # cannot play all its games at once for each episode it plays, reset as play_episode does.
    seated = np.array([seating for *_, seating in episodes], dtype=np.int64)
    batched: dict[int, BatchOpponent] = {}
    for a, spec in enumerate(config.agents):
        agent = agents[spec]
        if agent.deterministic and isinstance(agent, BatchOpponent):
            batched[a] = agent
    together = [a in batched for a in range(len(config.agents))]
    own: list[dict[int, Agent]] = []
    for _, seed, _, seating in episodes:
        mine = {a: make_agent(spec, rules) for a, spec in enumerate(config.agents) if not together[a] and a in seating}
        for seat, a in enumerate(seating):
            if not together[a]:
                mine[a].reset(seed=seat_seed(seed, seat))
        own.append(mine)

    rounds: list[dict[str, Any] | None] = [None] * len(episodes)
    live = np.arange(len(episodes))
    while len(live):
        seats = games.current[live]
        masks = games.legal_mask(live)
        actions = np.empty(len(live), dtype=np.int64)
        movers = seated[live, seats]
        for a, spec in enumerate(config.agents):
            rows = np.flatnonzero(movers == a)
            if not len(rows):
                continue
            # An agent batched on its masks alone is given no observations (as by the vector env).
            observes = a not in batched or getattr(agents[spec], "observes", True)
            observations = None
            if observes:
                observations = batch_encoder(rules, agents[spec].observation)(games, live[rows], seats[rows])
            if a in batched:
                actions[rows] = batched[a].act_batch(observations, masks[rows])
                continue
            assert observations is not None  # an agent asked game by game always observes
            for j, row in enumerate(rows):
                obs = {"observation": observations[j], "action_mask": masks[row].astype(np.int8)}
                actions[row] = own[live[row]][a].act(obs)
        ended = games.step(actions, live)
        for k, e in enumerate(ended.games):
            rounds[e] = ended.result(k).as_dict()
        live = live[~games.over[live]]

    out: dict[int, list[dict[str, Any]]] = {deal: [] for deal, _ in deals}
    for (deal, seed, table, seating), result in zip(episodes, rounds):
        dealt = first_deals[seed]
        out[deal].append(
            {
                "deal": deal,
                "table": table,
                "seating": list(seating),
                "rounds": [result],
                "first_deal": {"hands": [list(hand) for hand in dealt["hands"]], "leader": dealt["leader"]},
                "match_winner_side": None,
            }
        )
    return list(out.items())
