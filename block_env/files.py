"""Writing files so that a crash (a killed process, a lost machine) leaves the old version or
the new one, never half of one: write beside the target, flush to disk, then rename over it.

Agent folders, checkpoints, arena reports and records, learning curves and run summaries are
all written through these.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any


def _temporary(path: Path) -> Path:
    # Same folder (a rename stays on one file system), same suffix (savers that add one keep it).
    return path.with_name(f".tmp-{os.getpid()}-{path.name}")


def write_atomically(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` to ``path``: all of it or, after a crash, the file as it was.

    Examples:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "summary.md"
        >>> write_atomically(target, "| agent |\\n")
        >>> target.read_text()
        '| agent |\\n'
    """
    path = Path(path)
    temporary = _temporary(path)
    with open(temporary, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def write_csv_atomically(path: str | Path, fieldnames: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """A CSV file with a header and ``rows`` (dicts by field name), written atomically."""
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, fieldnames=list(fieldnames))
    writer.writeheader()
    writer.writerows(rows)
    write_atomically(path, table.getvalue())


def save_atomically(path: str | Path, save: Callable[[Path], object]) -> None:
    """Let ``save`` write a file at a temporary path beside ``path``, then rename it into place
    (for savers that take a path, such as ``model.save`` or ``fig.savefig``). A Ctrl-C while it
    writes is raised once the file is in place: a zip writer cut off mid-entry raises its own
    error instead of KeyboardInterrupt, and the caller's handling of Ctrl-C would not run."""
    path = Path(path)
    temporary = _temporary(path)
    try:
        with _interrupt_held():
            save(temporary)
            with open(temporary, "rb") as f:
                os.fsync(f.fileno())
            os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def _interrupt_held() -> Iterator[None]:
    """Hold SIGINT during the block and raise KeyboardInterrupt after it, if one came. Only
    where Python's own handler is installed and in the main thread (where signals arrive)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise KeyboardInterrupt


@contextlib.contextmanager
def replace_folder(folder: str | Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``folder``; when the block ends without an
    error, it takes ``folder``'s place (an old ``folder`` is removed only after that). After
    an error or a crash, ``folder`` is as it was."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(folder)
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir()
    try:
        yield temporary
        previous = folder.with_name(f".old-{os.getpid()}-{folder.name}")
        if folder.exists():
            os.replace(folder, previous)
        os.replace(temporary, folder)
        shutil.rmtree(previous, ignore_errors=True)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
