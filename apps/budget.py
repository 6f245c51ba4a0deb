"""A time budget for one opponent's move in the browser app: work that runs past it is stopped.

An agent's move runs on a thread of the app's agent pool. Python cannot kill a thread, but it
can raise an exception in one (``PyThreadState_SetAsyncExc``): the exception arrives at the
thread's next Python instruction, so a search stops between two of its compiled playout
batches and OpenSpiel's MCTS between two simulations. The web app's bounds on every option
that sets an agent's work keep the longest stretch without a Python instruction short.

One watchdog thread per :class:`MoveBudget` holds the deadlines of the moves in progress; it
wakes at the first deadline, so a quick move costs no more than a heap push.

A move is never stopped inside numba's compiler (the first call of a compiled kernel after an
install compiles it, for seconds): an exception raised there, in the middle of its code
generation, leaves the kernel half built and its cache entry unwritable, so the next call
fails too. A move past its time while its thread compiles is stopped when the compile ends.

Examples:
    >>> budget = MoveBudget(5.0)
    >>> budget.run(lambda: 1 + 1)
    2
    >>> budget.close()
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from numba.core import event

T = TypeVar("T")
#: How often the watchdog looks again at a move past its time whose thread is compiling.
COMPILE_POLL_SECONDS = 0.05


class MoveStopped(BaseException):
    """Raised inside a move's thread when its time is up. A BaseException, so that an agent's
    own ``except Exception`` cannot swallow it."""


class OverBudget(Exception):
    """A move ran past its time budget and was stopped."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"it took more than {seconds:g} s and was stopped")
        self.seconds = seconds


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    """Raise ``exception`` in the thread (None: cancel one that has not arrived yet)."""
    # ctypes passes None as a NULL pointer: what cancels a pending exception.
    raised = None if exception is None else ctypes.py_object(exception)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), raised)


class _Compiling(event.Listener):
    """How deep in numba's compiler lock each thread is (its events start and end on the
    compiling thread; the lock is re-entrant, so they nest)."""

    def __init__(self) -> None:
        self.depth: dict[int, int] = {}  # each thread changes its own entry only

    def on_start(self, event: Any) -> None:
        thread = threading.get_ident()
        self.depth[thread] = self.depth.get(thread, 0) + 1

    def on_end(self, event: Any) -> None:
        thread = threading.get_ident()
        self.depth[thread] = self.depth.get(thread, 1) - 1

    def compiling(self, thread_id: int) -> bool:
        return self.depth.get(thread_id, 0) > 0


_COMPILING = _Compiling()
event.register("numba:compiler_lock", _COMPILING)


class _Running:
    """One move in progress: its thread, and whether it finished or was stopped (under lock)."""

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id
        self.done = False
        self.stopped = False


#: The longest move budget: a day (longer is a mistake, and an infinite one would stop the watchdog).
MAX_MOVE_SECONDS = 86_400.0


class MoveBudget:
    """Runs moves with at most ``seconds`` each (see the module docstring)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < seconds <= MAX_MOVE_SECONDS:  # nan and inf too: the watchdog's wait needs a finite time
            raise ValueError(
                f"a move's time budget is a number of seconds in (0, {MAX_MOVE_SECONDS:g}], got {seconds!r}"
            )
        self.seconds = float(seconds)
        self._clock = clock
        self._lock = threading.Condition()
        self._deadlines: list[tuple[float, int, _Running]] = []  # a heap, soonest first
        self._order = itertools.count()
        self._closed = False
        self._watchdog: threading.Thread | None = None  # started by the first move

    def run(self, work: Callable[[], T]) -> T:
        """``work()`` on this thread, stopped with :class:`OverBudget` past the budget."""
        running = _Running(threading.get_ident())
        deadline = self._clock() + self.seconds
        with self._lock:
            if self._watchdog is None:
                self._watchdog = threading.Thread(target=self._watch, name="move-budget", daemon=True)
                self._watchdog.start()
            if not self._deadlines or deadline < self._deadlines[0][0]:  # the watchdog sleeps till the first
                self._lock.notify()
            heapq.heappush(self._deadlines, (deadline, next(self._order), running))
        try:
            try:
                return work()
            finally:
                with self._lock:
                    running.done = True
                    if running.stopped:  # raised but perhaps not arrived yet: cancel it
                        _raise_in(running.thread_id, None)
        except MoveStopped:
            raise OverBudget(self.seconds) from None

    def _watch(self) -> None:
        with self._lock:
            while not self._closed:
                now = self._clock()
                while self._deadlines and (self._deadlines[0][2].done or self._deadlines[0][0] <= now):
                    _, _, running = heapq.heappop(self._deadlines)
                    if running.done:
                        continue
                    if _COMPILING.compiling(running.thread_id):  # stopped once its compile ends
                        heapq.heappush(self._deadlines, (now + COMPILE_POLL_SECONDS, next(self._order), running))
                        continue
                    running.stopped = True
                    _raise_in(running.thread_id, MoveStopped)
                wait = self._deadlines[0][0] - now if self._deadlines else None
                self._lock.wait(timeout=wait)

    def close(self) -> None:
        """Stop the watchdog (moves still running are no longer timed)."""
        with self._lock:
            self._closed = True
            self._lock.notify()
        if self._watchdog is not None:
            self._watchdog.join(timeout=5)
