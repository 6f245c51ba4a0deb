"""How a task playing elsewhere (another process, a Ray worker) tells the driver its decisions
so far, for a progress bar fed while the task plays (:func:`block_env.training.teaching.decisions_in_processes`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: A task in another process tells its decisions so far at most this often (a progress bar's
#: pace: more often would only load the pipe).
REPORT_SECONDS = 0.25


class Gathered:
    """Each task's decisions so far (the most it has told), feeding ``progress`` the growth of
    their sum: a task retried from the start (on Ray) counts again only past its earlier mark."""

    def __init__(self, progress: Callable[[int], None] | None) -> None:
        self.progress = progress
        self.counts: dict[int, int] = {}

    def __call__(self, task: int, decisions: int) -> None:
        more = decisions - self.counts.get(task, 0)
        if more > 0:
            self.counts[task] = decisions
            if self.progress is not None:
                self.progress(more)


class Reporter:
    """The ``report`` a task in another process calls with its decisions so far: passed on to
    ``send`` at most every :data:`REPORT_SECONDS` (the last count comes back with the part)."""

    def __init__(self, send: Callable[[int], Any]) -> None:
        self.send = send
        self.last = -REPORT_SECONDS

    def __call__(self, decisions: int) -> None:
        now = time.monotonic()
        if now - self.last >= REPORT_SECONDS:
            self.last = now
            self.send(decisions)
