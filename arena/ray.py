"""The arena's deals as Ray tasks: ``block-dominoes eval --ray [ADDRESS]`` (extra ``[ray]``).

Each task plays a batch of deals (every table and rotation of each, exactly as the local
process pool does, so the same seed gives the same numbers). Batches are sized so that each
CPU of the cluster gets several (load balance) while a task's fixed cost stays small next to
its deals (``benchmarks/bench_ray.py`` measures both). Results stream back as tasks finish,
so :func:`block_env.arena.run_arena` appends each deal to ``records.jsonl`` at once;
a task whose worker dies or raises is retried (``MAX_RETRIES``) and no finished deal is lost.

Every node needs block_env (and the agents' files, e.g. ``policy:PATH`` folders, at the same
paths) installed in the Python that Ray runs.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import ray

from block_env.arena.config import ArenaConfig
from block_env.arena.deals import play_deal_batch

#: ``--ray`` with no address: start a Ray for this run on this machine.
LOCAL = "local"
MAX_RETRIES = 3
#: At most this many deals per task (a retry replays at most this much work).
MAX_BATCH = 64
#: For fault-injection tests: a folder where each task, as it starts, writes a marker file
#: ``started-FIRSTDEAL-PID``, then waits while the file ``hold`` there names a deal at or below
#: its first one, so that a test can kill a worker (or the driver) at a known point mid-run.
MARKERS = "BLOCK_ENV_RAY_MARKERS"


def connect(address: str | None, num_cpus: int | None = None) -> None:
    """Join the cluster at ``address`` ("auto": the one this machine belongs to), or start a
    local Ray with ``num_cpus`` CPUs for ``address`` None/"local"; nothing if already joined."""
    if ray.is_initialized():
        return
    if address in (None, LOCAL):
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)


def batch_size(num_deals: int, num_cpus: int) -> int:
    """Deals per task: about four tasks per CPU, at most MAX_BATCH deals each."""
    return max(1, min(MAX_BATCH, num_deals // (4 * max(1, num_cpus))))


# The agents a Ray worker built for the current run. Workers outlive a run (unlike the local
# pool's processes), so a new run (other rules, or a policy folder saved again) builds afresh.
_RUN_AGENTS: dict[str, Any] = {"run": None, "agents": {}}


@ray.remote(max_retries=MAX_RETRIES, retry_exceptions=True)
def _play_batch(
    run: str, config: ArenaConfig, deals: Sequence[tuple[int, int]]
) -> list[tuple[int, list[dict[str, Any]]]]:
    if _RUN_AGENTS["run"] != run:
        _RUN_AGENTS.update(run=run, agents={})
    if folder := os.environ.get(MARKERS):
        _mark_start(folder, deals[0][0])
    return play_deal_batch(config, deals, _RUN_AGENTS["agents"])


def _mark_start(folder: str, first: int) -> None:
    """What :data:`MARKERS` asks of a task as it starts."""
    Path(folder, f"started-{first}-{os.getpid()}").touch()
    hold = Path(folder, "hold")
    while True:
        try:
            if first < int(hold.read_text()):
                return
        except FileNotFoundError:  # no hold, or the test lifted it
            return
        time.sleep(0.02)


def play_on_ray(
    config: ArenaConfig, deals: Sequence[tuple[int, int]], address: str | None = None, size: int | None = None
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(deal, records) for each (deal, seed) in ``deals``, as the Ray tasks finish."""
    connect(address, config.workers)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    size = size or batch_size(len(deals), cpus)
    run = uuid.uuid4().hex
    pending = [_play_batch.remote(run, config, deals[i : i + size]) for i in range(0, len(deals), size)]
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        yield from ray.get(ready[0])
