"""The evaluation arena: agents meet on duplicate deals, with 95% confidence intervals.

Every deal is replayed with the agents rotated through all seats of each table, so each agent
holds each hand once and the luck of the cards cancels (the rotations keep the order around
the table: at 3-4 seats who plays after whom stays fixed). Confidence intervals treat deals as the independent units: each agent's
outcomes are averaged within a deal (over its seats, rotations and rounds), then the mean over
deals gets a normal 95% interval (1.96 standard errors).

- :mod:`~block_env.arena.config`: what to play (:class:`ArenaConfig`) and the seatings;
- :mod:`~block_env.arena.deals`: one deal, every table and seating of it;
- :mod:`~block_env.arena.lockstep`: many deals' episodes played at once, with the same records;
- :mod:`~block_env.arena.play`: playing the deals (here, in worker processes or on Ray);
- :mod:`~block_env.arena.records`: the records file that ``--resume`` continues from;
- :mod:`~block_env.arena.stats` and :mod:`~block_env.arena.report`: the statistics, the
  summary tables, the chart and the files they are written to.

Examples:
    >>> from block_env.arena import evaluate
    >>> report = evaluate(["greedy", "random"], "standard", deals=4, seed=1)
    >>> sorted(a.agent for a in report.agents)
    ['greedy', 'random']
"""

from __future__ import annotations

from block_env.arena.config import ArenaConfig, default_workers
from block_env.arena.deals import play_deal, play_episode
from block_env.arena.play import evaluate, evaluate_into, run_arena
from block_env.arena.records import RECORDS_FILE
from block_env.arena.report import AgentReport, ArenaReport, margins, markdown, summarize, write_outputs
from block_env.arena.stats import Estimate, mean_ci

__all__ = [
    "RECORDS_FILE",
    "AgentReport",
    "ArenaConfig",
    "ArenaReport",
    "Estimate",
    "default_workers",
    "evaluate",
    "evaluate_into",
    "margins",
    "markdown",
    "mean_ci",
    "play_deal",
    "play_episode",
    "run_arena",
    "summarize",
    "write_outputs",
]
