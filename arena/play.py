"""Playing the arena's deals: every table and seating of each deal, in this process, in a
pool of worker processes or as Ray tasks, each finished deal appended to the records file
as it finishes (:mod:`block_env.arena.records`), so that an interrupted run resumes.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from block_env.agents import Agent
from block_env.arena.config import ArenaConfig, seatings
from block_env.arena.deals import play_deal
from block_env.arena.lockstep import play_lockstep, supports
from block_env.arena.records import RECORDS_FILE, append_deal, open_records
from block_env.arena.report import ArenaReport, summarize, write_outputs
from block_env.rules import Rules, resolve_rules
from block_env.seeding import deal_seeds

# -- playing (runs in worker processes) -------------------------------------------------------

#: Episodes played at once in lockstep (:mod:`block_env.arena.lockstep`; whole deals, at least
#: one): enough games per step that a network's forward pass and the batched engine's kernels
#: are well filled, few enough that agents built per episode (a search's caches: about 0.3 MB
#: each) stay small.
LOCKSTEP_GAMES = 512

# Agents built once per worker process (a pool lives for one run_arena call, so a policy
# file re-saved between runs is read again).
_WORKER_AGENTS: dict[str, Agent] = {}


def one_blas_thread() -> None:
    """Hold numpy's BLAS to one thread in this worker process: with one process per core a
    second thread only waits for a core, and a guided search's network, which runs a batch
    per playout move, slowed several times over (the [eval] extra installs threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


def _play_deal_task(args: tuple[ArenaConfig, int, int]) -> list[dict[str, Any]]:
    return play_deal(*args, agents=_WORKER_AGENTS)


def run_arena(
    config: ArenaConfig,
    progress: bool = True,
    records_path: str | Path | None = None,
    resume: bool = False,
    ray_address: str | None = None,
    first_deal: int = 0,
) -> list[dict[str, Any]]:
    """Play every deal (in parallel when ``config.workers > 1``), with a progress bar.

    With ``records_path`` each finished deal's records are appended to that JSON-lines file
    as it finishes (nothing is lost to an interruption); ``resume`` reads the deals already
    there (the file's config must be this one) and plays only the others, so the result is
    exactly that of an uninterrupted run. With ``ray_address`` ("local", "auto" or a
    cluster's address) the deals run as Ray tasks (:mod:`block_env.arena.ray`),
    with the same results. ``first_deal`` plays only deals ``first_deal..config.deals - 1``:
    the deals a run with ``config.deals = first_deal`` (same seed) did not play, since the
    deal seeds of a shorter run are the first of a longer one's.

    Without a records file, in this process (``config.workers == 1``) and for a config that
    :func:`block_env.arena.lockstep.supports`, whole deals are played, :data:`LOCKSTEP_GAMES`
    episodes at a time, in lockstep (:mod:`block_env.arena.lockstep`), with the same records
    as deal by deal; with one, deal by deal, so that an interruption loses at most the deal
    being played.

    Examples:
        >>> from block_env.arena import ArenaConfig, summarize
        >>> config = ArenaConfig(agents=("greedy", "random"), deals=4, seed=1)
        >>> records = run_arena(config, progress=False)
        >>> len(records)  # 4 deals x 2 seatings
        8
        >>> sorted(summarize(config, records).head_to_head)
        ['greedy', 'random']
    """
    if not isinstance(first_deal, int) or not 0 <= first_deal < config.deals:
        raise ValueError(f"first_deal must be an int in [0, deals={config.deals}), got {first_deal!r}")
    if first_deal and records_path is not None:
        raise ValueError("first_deal plays part of a run: it cannot be combined with records_path")
    seeds = deal_seeds(config.seed, config.deals)
    done: dict[int, list[dict[str, Any]]] = {}
    if records_path is not None:
        done = open_records(Path(records_path), config, resume)
    tasks = [(config, d, s) for d, s in enumerate(seeds) if d >= first_deal and d not in done]
    bar = progress_bar(progress, config.deals - first_deal, f"arena: {len(config.agents)} agents, {config.deals} deals")
    with bar as update:
        for _ in done:
            update()
        lockstep = records_path is None and supports(config)
        for deal, records in _play(config, tasks, ray_address, lockstep):
            done[deal] = records
            if records_path is not None:
                append_deal(Path(records_path), deal, records)
            update()
    return [r for deal in sorted(done) for r in done[deal]]


def _play(
    config: ArenaConfig,
    tasks: list[tuple[ArenaConfig, int, int]],
    ray_address: str | None = None,
    lockstep: bool = False,
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(deal, records) for each task as it finishes (in order, but on Ray); ``lockstep`` plays
    them in lockstep when in this process."""
    if ray_address is not None:
        try:
            from block_env.arena.ray import play_on_ray
        except ImportError as e:
            raise ValueError(f"the arena on Ray needs the [ray] extra (pip install 'block-env[ray]'): {e}") from None

        yield from play_on_ray(config, [(deal, seed) for _, deal, seed in tasks], ray_address)
        return
    if config.workers == 1:
        agents: dict[str, Agent] = {}
        if lockstep:
            from threadpoolctl import threadpool_limits

            chunk = max(1, LOCKSTEP_GAMES // len(seatings(config)))
            for start in range(0, len(tasks), chunk):
                deals = [(deal, seed) for _, deal, seed in tasks[start : start + chunk]]
                # A network's batch is a few hundred rows: a second BLAS thread gains little on
                # an idle machine, and waiting for a busy core it made a 300-row pass 9-30 ms, not 1 ms.
                with threadpool_limits(1, user_api="blas"):
                    played = play_lockstep(config, deals, agents)
                yield from played
            return
        for task in tasks:
            yield task[1], play_deal(*task, agents=agents)
        return
    # spawn, not fork: the parent may hold torch threads (training), which fork can deadlock.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=config.workers, mp_context=context, initializer=one_blas_thread) as pool:
        chunk = max(1, len(tasks) // (20 * config.workers))
        yield from zip((t[1] for t in tasks), pool.map(_play_deal_task, tasks, chunksize=chunk))


#: Seconds between two progress lines where the output is not a terminal (a log file).
PLAIN_PROGRESS_SECONDS = 30.0


@contextmanager
def progress_bar(enabled: bool, total: int, description: str) -> Iterator[Callable[..., None]]:
    """Yields ``advance(steps=1)``: a rich progress bar on a terminal; where the output is
    redirected (a long run logged to a file, where a live bar would show only at its end) a
    plain line every :data:`PLAIN_PROGRESS_SECONDS` and at the end; nothing when ``enabled``
    is False."""
    if not enabled:
        yield lambda steps=1: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    console = Console()
    if not (console.is_terminal or console.is_jupyter):
        yield plain_progress(total, description)
        return
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns) as progress:
        task = progress.add_task(description, total=total)
        yield lambda steps=1: progress.advance(task, steps)


def plain_progress(
    total: int, description: str, every: float = PLAIN_PROGRESS_SECONDS, clock: Callable[[], float] = time.monotonic
) -> Callable[..., None]:
    """``advance(steps=1)`` that prints "description: done/total (percent), elapsed, time
    left" when ``every`` seconds have passed since the last line, and when done reaches total."""
    started = last = clock()
    done = 0

    def advance(steps: int = 1) -> None:
        nonlocal done, last
        done += steps
        now = clock()
        if now - last < every and done < total:
            return
        last, elapsed = now, now - started
        left = f", about {clock_time(elapsed * (total - done) / done)} left" if 0 < done < total else ""
        print(
            f"{description}: {done}/{total} ({100 * done / max(total, 1):.0f}%), {clock_time(elapsed)} elapsed{left}",
            flush=True,
        )

    return advance


def clock_time(seconds: float) -> str:
    """``seconds`` as h:mm:ss.

    >>> clock_time(3725.4)
    '1:02:05'
    """
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


def evaluate_into(
    config: ArenaConfig,
    out: str | Path,
    *,
    resume: bool = False,
    ray_address: str | None = None,
    progress: bool = True,
) -> tuple[ArenaReport, dict[str, Path]]:
    """Play ``config`` with its records in ``out/records.jsonl`` (``resume`` continues them),
    then write the summaries there; the report and the summary files written."""
    folder = Path(out)
    records = run_arena(
        config, progress=progress, records_path=folder / RECORDS_FILE, resume=resume, ray_address=ray_address
    )
    report = summarize(config, records)
    return report, write_outputs(report, folder)


def evaluate(
    agents: Iterable[str],
    rules: Rules | str | None = None,
    *,
    episode: str = "round",
    deals: int = 100,
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    record: bool = False,
    ray_address: str | None = None,
) -> ArenaReport:
    """Play and summarize in one call (the Python face of ``block-dominoes eval``);
    ``ray_address`` runs the deals on Ray (see :func:`run_arena`).

    Examples:
        >>> report = evaluate(["strategic", "greedy", "random"], "standard_3p", deals=3, seed=2)
        >>> [a.seat_rounds for a in report.agents]  # 3 deals x 3 seatings, one round each
        [9, 9, 9]
    """
    config = ArenaConfig(
        agents=tuple(agents),
        rules=resolve_rules(rules),
        episode=episode,
        deals=deals,
        seed=seed,
        workers=workers,
        record=record,
    )
    return summarize(config, run_arena(config, progress=progress, ray_address=ray_address))
