"""Where the browser app keeps its games: a database through SQLAlchemy, shared by every worker.

A game is one row: its settings (preset, episode, seat, seed, opponents: enough to deal it
again), its state (every action played since the deal, whether a finished round is on show,
whether an opponent failed, the fallbacks seated) and a version that every save moves on by one.
A save names the version it read and changes nothing when another process saved in between
(:class:`Conflict`), so any worker may answer any game's request. A finished game keeps its
replay and a summary for the list of replays.

- SQLite by default: ``sqlite:///DIR/games.sqlite3`` (:func:`sqlite_url`), in WAL mode so that
  readers never wait for a writer; writes take the database's write lock when they begin
  (``BEGIN IMMEDIATE``) and wait for it up to ``BUSY_SECONDS``. A committed save survives the
  server's process being killed (SIGKILL); with ``synchronous=NORMAL`` a power loss may lose the
  last ones.
- PostgreSQL through its URL (``postgresql+psycopg://user:password@host/db``; the psycopg driver
  is in the ``[web]`` extra).

New games are admitted in one transaction that holds a lock row (``SELECT ... FOR UPDATE``; the
write lock on SQLite): the per-address rate (a generic cell rate algorithm: a steady rate with
a minute's burst, one row per address) and the number of games in active play are checked,
then the game's row is written, so two workers cannot both take the last place.

Examples:
    >>> store = Store.temporary()
    >>> store.open("g1", "127.0.0.1", {"preset": "standard"}, {"moves": []}, max_active=10, per_minute=0)
    >>> store.load("g1").version
    0
    >>> store.save("g1", 0, {"moves": [3]})
    1
    >>> store.load("g1").state
    {'moves': [3]}
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError

#: How long a write waits for SQLite's write lock before giving up.
BUSY_SECONDS = 30.0

metadata = MetaData()
games = Table(
    "games",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("address", String(64), nullable=False),
    Column("created", Float, nullable=False),
    Column("touched", Float, nullable=False),  # the last save
    Column("finished", Float, nullable=True),  # None while in play
    Column("version", Integer, nullable=False),
    Column("settings", Text, nullable=False),  # JSON
    Column("state", Text, nullable=False),  # JSON
    Column("summary", Text, nullable=True),  # JSON, once finished
    Column("replay", Text, nullable=True),  # JSON, once finished
)
Index("games_in_play", games.c.finished, games.c.touched)
rates = Table(
    "rates",
    metadata,
    Column("address", String(64), primary_key=True),
    Column("tat", Float, nullable=False),  # the rate's theoretical arrival time of the next new game
)
# One row, locked by every admission: admissions happen one at a time across workers.
locks = Table("locks", metadata, Column("name", String(16), primary_key=True))


class Refused(Exception):
    """A new game the store does not admit: 429 (``retry_after`` seconds) or 503."""

    def __init__(self, message: str, status: int, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class Conflict(Exception):
    """Another request saved the game between this one's read and its save."""


@dataclass(frozen=True)
class StoredGame:
    """A game's row: its settings, its state, the version of that state, when it finished."""

    id: str
    settings: dict[str, Any]
    state: dict[str, Any]
    version: int
    finished: float | None


def _rate_interval(per_minute: int) -> float:
    """Seconds between new games at a steady ``per_minute``: what each new game spends of an
    address's allowance, and what a discarded one gives back."""
    return 60.0 / per_minute


def sqlite_url(folder: str | Path) -> str:
    """The SQLite database in ``folder`` (made if missing)."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise ValueError(f"the data folder {folder} is a file")
    path.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(path / 'games.sqlite3').resolve()}"


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"timeout": BUSY_SECONDS, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def on_connect(connection: Any, record: Any) -> None:
        connection.isolation_level = None  # the driver's own BEGINs off: on_begin says which
        cursor = connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_SECONDS * 1000)}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection: Connection) -> None:
        # A write takes the write lock at once: a read that later writes could fail on a busy database.
        connection.exec_driver_sql("BEGIN IMMEDIATE" if connection.get_execution_options().get("write") else "BEGIN")

    return engine


class Store:
    """The games' database (see the module docstring). ``clock``: wall-clock seconds."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise ValueError(f"not a database URL: {url!r} (sqlite:///PATH or postgresql+psycopg://...)") from None
        if parsed.get_backend_name() not in ("sqlite", "postgresql"):
            raise ValueError(f"the store is SQLite or PostgreSQL, got {parsed.get_backend_name()!r}")
        self.url = url
        self.clock = clock
        if parsed.get_backend_name() == "sqlite":
            self.engine = _sqlite_engine(url)
        else:
            self.engine = create_engine(url, pool_pre_ping=True)
        self._create_tables()

    @classmethod
    def temporary(cls) -> Store:
        """A SQLite store in a folder of its own, removed when the store is collected."""
        folder = tempfile.mkdtemp(prefix="block_env_web_")
        store = cls(sqlite_url(folder))
        weakref.finalize(store, shutil.rmtree, folder, True)
        return store

    def _create_tables(self) -> None:
        for attempt in range(5):  # workers starting at once may race to make the tables
            try:
                metadata.create_all(self.engine)
                with self._write() as conn:
                    if conn.execute(select(locks.c.name)).first() is None:
                        conn.execute(insert(locks).values(name="admit"))
                return
            except (IntegrityError, OperationalError) as e:
                if attempt == 4:
                    where = self.engine.url.render_as_string(hide_password=True)
                    raise ValueError(f"the store cannot open its database {where}: {e.orig}") from None
                time.sleep(0.2)

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            conn = conn.execution_options(write=True)
            with conn.begin():
                yield conn

    def close(self) -> None:
        self.engine.dispose()

    # -- games -------------------------------------------------------------------------------

    def open(
        self,
        game_id: str,
        address: str,
        settings: dict[str, Any],
        state: dict[str, Any],
        *,
        max_active: int,
        active_seconds: float = 30 * 60,
        per_minute: int,
    ) -> None:
        """Admit a new game (version 0): Refused 429 when ``address`` has asked for more than
        ``per_minute`` new games a minute (0: no limit), 503 when ``max_active`` games are in
        active play (not finished, saved within ``active_seconds``)."""
        now = self.clock()
        with self._write() as conn:
            conn.execute(select(locks.c.name).where(locks.c.name == "admit").with_for_update()).first()
            if per_minute > 0:
                self._spend_rate(conn, address, per_minute, now)
            active = conn.execute(
                select(func.count())
                .select_from(games)
                .where(and_(games.c.finished.is_(None), games.c.touched > now - active_seconds))
            ).scalar_one()
            if active >= max_active:
                raise Refused(
                    f"the server is full: {active} games are in active play (at most {max_active}; a game "
                    f"nobody moved in for {active_seconds:.0f} s no longer counts); try again later",
                    503,
                )
            conn.execute(
                insert(games).values(
                    id=game_id,
                    address=address[:64],
                    created=now,
                    touched=now,
                    finished=None,
                    version=0,
                    settings=json.dumps(settings),
                    state=json.dumps(state),
                )
            )

    def _spend_rate(self, conn: Connection, address: str, per_minute: int, now: float) -> None:
        """One new game from ``address``: a steady ``per_minute`` with a burst of a minute's worth."""
        interval = _rate_interval(per_minute)
        tat = conn.execute(select(rates.c.tat).where(rates.c.address == address[:64])).scalar_one_or_none()
        start = now if tat is None else max(tat, now)
        if start + interval - now > 60.0 + 1e-9:
            wait = math.ceil(start + interval - now - 60.0)
            raise Refused(
                f"too many new games from your address: at most {per_minute} a minute; try again in {wait} s",
                429,
                retry_after=wait,
            )
        if tat is None:
            conn.execute(insert(rates).values(address=address[:64], tat=start + interval))
        else:
            conn.execute(update(rates).where(rates.c.address == address[:64]).values(tat=start + interval))

    def discard(self, game_id: str, address: str, per_minute: int) -> None:
        """Remove a game that never started (its opponents could not be built) and, with
        ``per_minute`` above 0, give ``address`` back the new game :meth:`open` counted against
        that rate."""
        with self._write() as conn:
            conn.execute(delete(games).where(games.c.id == game_id))
            if per_minute > 0:
                conn.execute(
                    update(rates)
                    .where(rates.c.address == address[:64])
                    .values(tat=rates.c.tat - _rate_interval(per_minute))
                )

    def load(self, game_id: str) -> StoredGame | None:
        if "\x00" in game_id:  # no such id; PostgreSQL refuses NUL in text outright
            return None
        with self.engine.connect() as conn:
            row = conn.execute(
                select(games.c.id, games.c.settings, games.c.state, games.c.version, games.c.finished).where(
                    games.c.id == game_id
                )
            ).first()
        if row is None:
            return None
        return StoredGame(row.id, json.loads(row.settings), json.loads(row.state), row.version, row.finished)

    def save(
        self,
        game_id: str,
        version: int,
        state: dict[str, Any],
        *,
        summary: dict[str, Any] | None = None,
        replay: dict[str, Any] | None = None,
    ) -> int:
        """Store the state read at ``version`` (and, for a finished game, its summary and
        replay); the new version. Conflict when the game moved on (or is gone) meanwhile."""
        now = self.clock()
        values: dict[str, Any] = {"state": json.dumps(state), "version": version + 1, "touched": now}
        if summary is not None:
            values.update(finished=now, summary=json.dumps(summary), replay=json.dumps(replay))
        with self._write() as conn:
            saved = conn.execute(
                update(games).where(and_(games.c.id == game_id, games.c.version == version)).values(**values)
            )
        if saved.rowcount != 1:
            raise Conflict(f"game {game_id} changed while this request played it")
        return version + 1

    # -- finished games ------------------------------------------------------------------------

    def finished(self, page: int, per_page: int) -> tuple[list[dict[str, Any]], int]:
        """One page of finished games' summaries, newest first (page 1 first), and how many there are."""
        with self.engine.connect() as conn:
            total = conn.execute(select(func.count()).select_from(games).where(games.c.finished.is_not(None)))
            rows = conn.execute(
                select(games.c.id, games.c.finished, games.c.summary)
                .where(games.c.finished.is_not(None))
                .order_by(games.c.finished.desc(), games.c.id)
                .limit(per_page)
                .offset((page - 1) * per_page)
            ).all()
            count = total.scalar_one()
        return [{"id": r.id, "finished": r.finished, **json.loads(r.summary)} for r in rows], count

    def replay(self, game_id: str) -> dict[str, Any] | None:
        """A finished game's replay (None when there is no such finished game)."""
        if "\x00" in game_id:  # as in load
            return None
        with self.engine.connect() as conn:
            text = conn.execute(
                select(games.c.replay).where(and_(games.c.id == game_id, games.c.finished.is_not(None)))
            ).scalar_one_or_none()
        return None if text is None else json.loads(text)

    def prune(self, *, keep_seconds: float | None, keep_count: int | None, abandoned_seconds: float) -> int:
        """Delete finished games older than ``keep_seconds`` or beyond the newest ``keep_count``
        (None: no such bound), games in play nobody saved for ``abandoned_seconds``, and spent
        rate rows; how many games went."""
        now = self.clock()
        gone = 0
        with self._write() as conn:
            if keep_seconds is not None:
                old = and_(games.c.finished.is_not(None), games.c.finished < now - keep_seconds)
                gone += conn.execute(delete(games).where(old)).rowcount
            if keep_count is not None:
                # the newest keep_count by finishing time, ties broken by id: exactly that many stay
                newest = (
                    select(games.c.id)
                    .where(games.c.finished.is_not(None))
                    .order_by(games.c.finished.desc(), games.c.id.desc())
                    .limit(keep_count)
                )
                beyond = and_(games.c.finished.is_not(None), games.c.id.not_in(newest))
                gone += conn.execute(delete(games).where(beyond)).rowcount
            abandoned = and_(games.c.finished.is_(None), games.c.touched < now - abandoned_seconds)
            gone += conn.execute(delete(games).where(abandoned)).rowcount
            conn.execute(delete(rates).where(rates.c.tat < now))
        return gone
