"""Training's teacher games as Ray tasks: ``block-dominoes train --ray [ADDRESS]`` (the config
key ``pretrain.ray_address``; extra ``[ray]``).

Each task is one of the shares the local process pool would play (the same function, the same
arguments), so the decisions are the same arrays, byte for byte, wherever they ran; only
where the shares play changes, so ``pretrain.workers`` is how many tasks share the games out
(one CPU each). The tasks tell a small actor how many decisions they have gathered so far,
which the driver reads for its progress bar. A task whose worker dies or raises is retried
(``MAX_RETRIES``, as the arena's are) and replays its share from the start.

Every node needs block_env (and the teacher's files, e.g. a ``policy:PATH`` folder, at the same
path) installed in the Python that Ray runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import ray

from block_env.arena.ray import MAX_RETRIES, connect
from block_env.training.reports import REPORT_SECONDS, Reporter


@ray.remote(num_cpus=0)
class Tally:
    """Each task's decisions so far, as it last told them."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def tell(self, task: int, decisions: int) -> None:
        self.counts[task] = decisions

    def read(self) -> dict[int, int]:
        return self.counts


def _tell(tally: Any, task: int, decisions: int) -> None:
    tally.tell.remote(task, decisions)  # not waited on: a report that is lost only slows the bar


@ray.remote(max_retries=MAX_RETRIES, retry_exceptions=True)
def _play(
    play: Callable[..., dict[str, np.ndarray]], task: tuple[Any, ...], index: int, tally: Any
) -> dict[str, np.ndarray]:
    if tally is None:
        return play(*task)
    return play(*task, report=Reporter(functools.partial(_tell, tally, index)))


def decisions_on_ray(
    play: Callable[..., dict[str, np.ndarray]],
    tasks: Sequence[tuple[Any, ...]],
    address: str,
    num_cpus: int,
    take: Callable[[int, dict[str, np.ndarray]], None],
    told: Callable[[int, int], None] | None = None,
) -> None:
    """``play(*task)`` for each task as a Ray task on the cluster at ``address`` ("local": a Ray
    started for them with ``num_cpus`` CPUs); ``take(index, part)`` as each finishes and, with
    ``told``, ``told(index, decisions)`` with each task's decisions so far meanwhile (``play``
    then gets ``report=``). A Ray this call started (or joined) is shut down at the end, so that
    it holds no cores while training goes on; one already joined is left as it was."""
    joined = ray.is_initialized()
    connect(address, num_cpus)
    try:
        tally = Tally.remote() if told is not None else None
        index = {_play.remote(play, task, i, tally): i for i, task in enumerate(tasks)}
        pending = list(index)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=REPORT_SECONDS)
            if tally is not None and told is not None:
                counts: dict[int, int] = ray.get(tally.read.remote())
                for task, decisions in counts.items():
                    told(task, decisions)
            for ref in ready:
                take(index[ref], ray.get(ref))
    finally:
        if not joined:
            ray.shutdown()
