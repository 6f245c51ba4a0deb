"""Play and replay in the browser (``block-dominoes serve``; extra ``[web]``: Starlette + uvicorn).

The server keeps every game's state itself (an engine ``Match`` behind the AEC env, the
agents, the record of finished rounds); the page only shows what its seat may see and sends
moves as action ids. Every request body is JSON, checked field by field: a bad one gets a
4xx answer ``{"error": "..."}`` and changes nothing. Nothing is unpickled.

API (JSON):

- ``GET /api/options``: presets, episode kinds, suggested agent specs.
- ``GET /api/opponents?rules=PRESET``: the opponents to pick from, by readable name, with
  their measured strength (``block_env.apps.catalogue``).
- ``POST /api/games`` ``{"preset", "episode", "opponents": [spec, ...], "seat", "seed"}``:
  a new game; opponents play until it is your move. Answers the game's view.
- ``GET /api/games/{id}``: the view (your hand with each legal move, the line, the ends,
  hand counts, the suits each seat's passes revealed, scores; at a round's end every hand,
  the pips, the award and why).
- ``POST /api/games/{id}/move`` ``{"action": id}``: your move; the opponents' moves that
  follow come back in ``events``, in order, for the page to show one by one.
- ``POST /api/games/{id}/next``: after a round of a match, deal the next.
- ``POST /api/games/{id}/resume`` ``{"fallback": bool}``: after an opponent failed (the view's
  ``stalled``), let it try its move again, or seat :data:`FALLBACK_AGENT` in its place.
- ``GET /api/games/{id}/replay``: the game so far as a replay, its finished rounds only (``block_env.apps.replay``).
- ``GET /api/games/{id}/hint``, ``GET /api/games/{id}/review``: the coach's view of each legal
  move now, or of each choice made in the last finished round (``block_env.apps.coach``).
- ``POST /api/replay`` ``{"replay": {...}}``: every frame of a replay, checked move by move.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import inspect
import json
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from block_env.aec import raw_env
from block_env.agents import PRETRAINED, PRETRAINED_DIR, Agent, make_agent, parse_spec
from block_env.agents.search import BELIEF_CANDIDATES, SearchAgent
from block_env.apps import catalogue, coach
from block_env.apps.budget import MoveBudget, OverBudget
from block_env.apps.replay import explain, opening_index, replay, replay_round
from block_env.apps.store import Conflict, Refused, Store, StoredGame, sqlite_url
from block_env.engine import Round
from block_env.episodes import Move, play_moves, step
from block_env.options import EPISODES
from block_env.rules import PRESETS, Rules
from block_env.seeding import SEED_BOUND, derive_seed, seat_seed
from block_env.tiles import bit_indices
from block_env.validation import is_int

STATIC = Path(__file__).with_name("web_static")
log = logging.getLogger(__name__)
#: Games in active play at once (not finished, moved in within ACTIVE_SECONDS): a new game
#: beyond them is refused (503). Finished games never count: they wait in the store as replays.
MAX_ACTIVE_GAMES = 1000
#: A game in play that nobody moved in for this long no longer counts as active (it stays
#: playable until pruned after ABANDONED_SECONDS).
ACTIVE_SECONDS = 30 * 60
#: New games a minute from one address (a steady rate, with a minute's worth at once); 429 beyond.
NEW_GAMES_PER_MINUTE = 30
#: Games each worker process keeps built in memory (the store holds them all; an evicted game
#: is dealt again and its moves replayed when next asked for).
CACHED_GAMES = 500
#: Pruning, every PRUNE_SECONDS: finished games older than KEEP_SECONDS or beyond the newest
#: KEEP_FINISHED, and games in play nobody moved in for ABANDONED_SECONDS.
KEEP_SECONDS = 30 * 24 * 3600
KEEP_FINISHED = 100_000
ABANDONED_SECONDS = 7 * 24 * 3600
PRUNE_SECONDS = 600
#: The list of replays shows this many games a page.
REPLAYS_PER_PAGE = 25
#: The 409 answer when a save finds that another request (perhaps another worker) saved the game first.
CHANGED_MEANWHILE = "another request changed this game meanwhile: reload it to see where it stands"
#: A change asked for while another request plays the game (a double submit): refused at
#: once, so that it neither waits on an agent thread nor plays a position its sender never saw.
PLAYING_NOW = "another request is playing this game now: reload it once that is done"
#: The largest request body read, in bytes (a replay of a long match fits; 413 beyond it).
MAX_BODY_BYTES = 256 * 1024
#: What a web request may ask of an agent: every option that sets an agent's work is bounded.
#: Search's worlds per decision at most this.
MAX_SEARCH_WORLDS = 1024
#: A search with belief=prior samples BELIEF_CANDIDATES deals per world and weighs each with its
#: prior's network: worlds x candidates at most this.
MAX_BELIEF_DEALS = 1024
#: OpenSpiel's MCTS and ISMCTS: simulations per decision at most this.
MAX_OPENSPIEL_SIMULATIONS = 2000
#: An opponent's move that takes longer is stopped; the game waits for a retry or a fallback.
MOVE_SECONDS = 10.0
#: What plays a failed opponent's seat when the person asks for a fallback.
FALLBACK_AGENT = "strategic"
#: The agents a request may name (``pretrained:NAME`` and the operator's agent folders besides).
ALLOWED_AGENTS = ("random", "greedy", "strategic", "search", "openspiel")
#: Agent move computations run on this many threads, apart from the event loop and from the
#: threads that serve views, so that slow opponents never hold up another player's requests.
AGENT_THREADS = 4


class BadRequest(Exception):
    """A request the server refuses: (status, message)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class OpponentFailed(Exception):
    """An opponent raised, ran past its time budget or chose an illegal move."""

    def __init__(self, seat: int, message: str) -> None:
        super().__init__(message)
        self.seat = seat


class _Opponent:
    """An agent at a web game's seat, as :func:`play_moves` calls it: reseeded before each
    move from the game's seed, its seat and the move's number (so the same game plays the same
    in any process, after a restart too), timed by the app's budget, its failures named."""

    def __init__(self, game: WebGame, seat: int, agent: Agent, budget: MoveBudget) -> None:
        self.game, self.seat, self.agent, self.budget = game, seat, agent, budget
        self.observation = agent.observation

    def reset(self, seed: int | None = None) -> None:
        """Not called in a web game (each move reseeds the agent)."""

    def act(self, obs: dict[str, np.ndarray]) -> int:
        name = self.game.names[self.seat]
        try:
            self.agent.reset(seed=derive_seed(seat_seed(self.game.seed, self.seat), "move", len(self.game.moves)))
            action = self.budget.run(lambda: int(self.agent.act(obs)))
        except OverBudget as e:
            raise OpponentFailed(self.seat, f"{name}'s move: {e}") from None
        except Exception as e:  # any failure of the agent's own code: the game waits, the server goes on
            log.exception("opponent %s at seat %d of game %s failed", name, self.seat, self.game.id)
            raise OpponentFailed(self.seat, f"{name} failed: {type(e).__name__}: {str(e)[:300]}") from None
        mask = obs["action_mask"]
        if not (0 <= action < len(mask) and mask[action]):
            raise OpponentFailed(self.seat, f"{name} chose action {action}, which is not legal here")
        return action


@dataclass
class WebGame:
    """One game on the server: the AEC env, every action played since the deal (``moves``: the
    env is ``reset(seed)`` then these), the agents by seat (None: the person), whether a
    finished round of a match is on show (until the person asks for the next), and whether an
    opponent failed (``stalled``: the game waits for a retry or a fallback)."""

    id: str
    preset: str
    rules: Rules
    episode: str
    seat: int
    seed: int
    specs: list[str | None]  # the agent spec by seat; None: the person
    agents: list[Agent | None]
    env: raw_env
    moves: list[int] = field(default_factory=list)
    paused: bool = False  # a round of a match just ended: the page shows it until /next
    stalled: dict[str, Any] | None = None  # {"seat", "agent", "error"}: an opponent failed
    replaced: list[dict[str, Any]] = field(default_factory=list)  # {"seat", "was", "now"}: fallbacks seated
    version: int = 0  # the store's version this state is (or was saved as)
    discarded: bool = False  # a save found the game changed meanwhile: build it again from the store
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Held by the one request that plays the game (a move, /next, /resume): another such request
    # meanwhile is refused at once, while readers and the coach wait on ``lock`` as before.
    playing: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def restore(cls, stored: StoredGame) -> WebGame:
        """The game as its row holds it: dealt again from its seed, its moves stepped. A game
        whose row has an opponent to move and no failure was cut short while that opponent
        thought (the server stopped): it waits for /resume, as after a failure."""
        settings = GameSettings.from_dict({**stored.settings, "specs": stored.state["specs"]})
        game = start_game(stored.id, settings)
        for action in stored.state["moves"]:
            game.env.step(action)
        game.moves = list(stored.state["moves"])
        game.paused, game.stalled = stored.state["paused"], stored.state["stalled"]
        game.replaced = list(stored.state["replaced"])
        game.version = stored.version
        if not (game.over or game.paused or game.stalled is not None):
            seat = game.env.seat_of(game.env.agent_selection)
            if seat != game.seat:
                game.stalled = {"seat": seat, "agent": game.names[seat], "error": "the server stopped during its move"}
        return game

    def catch_up(self, stored: StoredGame) -> bool:
        """Bring this game up to a newer row of it by stepping the moves saved since (False
        when the row is not this game's continuation: build it again)."""
        moves = stored.state["moves"]
        if moves[: len(self.moves)] != self.moves:
            return False
        for action in moves[len(self.moves) :]:
            self.env.step(action)
            self.moves.append(action)
        for seat, spec in enumerate(stored.state["specs"]):
            if spec != self.specs[seat]:
                self.agents[seat] = _build_agent(spec, self.rules, seat_seed(self.seed, seat))
                self.specs[seat] = spec
        self.paused, self.stalled = stored.state["paused"], stored.state["stalled"]
        self.replaced = list(stored.state["replaced"])
        self.version = stored.version
        return True

    def state(self) -> dict[str, Any]:
        """What the store keeps of the game beyond its settings."""
        return {
            "moves": self.moves,
            "paused": self.paused,
            "stalled": self.stalled,
            "replaced": self.replaced,
            "specs": self.specs,
        }

    def summary(self) -> dict[str, Any]:
        """A finished game in the list of replays."""
        return {
            "preset": self.preset,
            "episode": self.episode,
            "seat": self.seat,
            "agents": self.names,
            "scores": list(self.env.scores),
            "rounds": len(self.env.results),
        }

    @property
    def names(self) -> list[str]:
        """The agent by seat as the page shows it ("you" for the person)."""
        return ["you" if spec is None else spec for spec in self.specs]

    @property
    def over(self) -> bool:
        return self.env.episode_over

    @property
    def person(self) -> str:
        """The person's agent name in the env."""
        return self.env.possible_agents[self.seat]

    def play_opponents(self, budget: MoveBudget) -> list[dict[str, Any]]:
        """Let the agents move until it is the person's move, the round ends, the game does or
        an opponent fails (the moves before its failure stand; ``stalled`` says what happened)."""
        events: list[dict[str, Any]] = []
        if self.paused or self.stalled is not None:
            return events
        players = [None if a is None else _Opponent(self, s, a, budget) for s, a in enumerate(self.agents)]
        try:
            for move in play_moves(self.env, players):
                events += self._events(move)
                if self.paused:
                    break
        except OpponentFailed as e:
            self.stalled = {"seat": e.seat, "agent": self.names[e.seat], "error": str(e)}
        return events

    def play(self, action: int, budget: MoveBudget) -> list[dict[str, Any]]:
        """The person's move (checked by the engine: ValueError and nothing changed when it is
        illegal), then the agents' moves that follow."""
        try:
            placed = step(self.env, action)
        except ValueError as e:  # the engine refused the move; nothing changed
            raise BadRequest(str(e), 422) from None
        return self._events(placed) + self.play_opponents(budget)

    def resume(self, budget: MoveBudget, fallback: bool) -> list[dict[str, Any]]:
        """After an opponent failed: let it try again, or seat FALLBACK_AGENT in its place."""
        if self.stalled is None:
            raise BadRequest("no opponent failed: the game is not waiting for one", 409)
        seat = self.stalled["seat"]
        if fallback:
            self.agents[seat] = _build_agent(FALLBACK_AGENT, self.rules, seat_seed(self.seed, seat))
            self.replaced.append({"seat": seat, "was": self.specs[seat], "now": FALLBACK_AGENT})
            self.specs[seat] = FALLBACK_AGENT
        self.stalled = None
        return self.play_opponents(budget)

    def _events(self, move: Move) -> list[dict[str, Any]]:
        """What the page shows of a move: the line after it, and the round's result if it ended one."""
        self.moves.append(move.action)
        if move.round_over is None:
            line, ends = self.env.line(), self.env.public_view(self.person).ends
            opening = opening_index(self.rules.tile_set, self.env.current_round_record()["moves"])
        else:
            final = self._final_round()
            line, ends, opening = final.line(), final.ends, opening_index(final.tiles, final.moves)
        events: list[dict[str, Any]] = [
            {
                "seat": move.seat,
                "agent": self.names[move.seat],
                "action": move.action,
                "text": self.rules.tile_set.describe_action(move.action),
                "line": [list(t) for t in line],
                "opening": opening,
                "ends": None if ends is None else list(ends),
            }
        ]
        if move.round_over is not None:
            self.paused = not self.over
            events.append({"round_over": explain(move.round_over)})
        return events

    def view(self, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """What the person's seat sees (every hand once a round is over)."""
        rules = self.rules
        showing_result = self.paused or self.over
        view: dict[str, Any] = {
            "id": self.id,
            "preset": self.preset,
            "episode": self.episode,
            "seat": self.seat,
            "num_players": rules.num_players,
            "partnership": rules.partnership,
            "side_of": [rules.side_of(s) for s in range(rules.num_players)],
            "agents": self.names,
            "round": len(self.env.results) + (0 if showing_result else 1),
            "scores": list(self.env.scores),
            "target": rules.resolved_target if self.episode == "match" else None,
            "events": events or [],
            "over": self.over,
            "paused": self.paused,
            # The deal and the opponents' moves follow from the seed: told once nothing is hidden.
            "seed": self.seed if self.over else None,
            "stalled": self.stalled,
            "replaced": self.replaced,
        }
        view.update(self._finished_table() if showing_result else self._table())
        return view

    def _table(self) -> dict[str, Any]:
        """The round in play as the person's seat sees it, seats in absolute order."""
        ts, n = self.rules.tile_set, self.rules.num_players
        public = self.env.public_view(self.person)
        by_tile: dict[int, list[dict[str, Any]]] = {}
        for action in public.legal:
            if action != ts.pass_action:
                by_tile.setdefault(action >> 1, []).append({"action": action, "end": "right" if action & 1 else "left"})
        absolute = [(s - self.seat) % n for s in range(n)]  # the relative seat of each seat
        return {
            "line": [list(t) for t in self.env.line()],
            "opening": opening_index(ts, self.env.current_round_record()["moves"]),
            "ends": None if public.ends is None else list(public.ends),
            "hand": [{"tile": list(ts.tiles[i]), "moves": by_tile.get(i, [])} for i in bit_indices(public.hand)],
            "hand_counts": [public.hand_counts[r] for r in absolute],
            "voids": [bit_indices(public.voids[r]) for r in absolute],
            "to_play": None if public.to_play is None else (self.seat + public.to_play) % n,
            "can_pass": ts.pass_action in public.legal,
            "pass_action": ts.pass_action,
            "result": None,
            "match_winner": None,
        }

    def _finished_table(self) -> dict[str, Any]:
        """The round that just finished, every hand shown."""
        ts = self.rules.tile_set
        final = self._final_round()
        assert final.result is not None
        return {
            "line": [list(t) for t in final.line()],
            "opening": opening_index(ts, final.moves),
            "ends": None if final.ends is None else list(final.ends),
            "hand": [{"tile": list(t), "moves": []} for t in ts.tiles_of(final.hands[self.seat])],
            "hand_counts": list(final.counts),
            "voids": [bit_indices(m) for m in final.voids],
            "to_play": None,
            "can_pass": False,
            "result": {**explain(final.result), "hands": [[list(t) for t in ts.tiles_of(h)] for h in final.hands]},
            "match_winner": self.env.match_winner if self.over and self.episode == "match" else None,
        }

    def _final_round(self) -> Round:
        """The last finished round, replayed from its record (in a match the env has moved on)."""
        rnd, _ = replay_round(self.rules, self.env.round_records()[-1])
        return rnd

    def replay(self) -> dict[str, Any]:
        """The game so far as a replay: its finished rounds (every round, once the game is over).
        The round in play is left out until it ends, since a record holds every seat's hand."""
        records = self.env.round_records()
        if not self.over:
            records = records[: len(self.env.results)]
        return {"rules": self.rules.as_dict(), "agents": self.names, "rounds": records}


class Games:
    """Every game, kept in a :class:`Store` (a temporary SQLite one by default), the ones in
    use built in this process (at most ``cached``, least recently used dropped first). A
    request reads the game's row; the built game is used when it is that version, brought up to
    it (the moves saved since, stepped) or built again from the row otherwise, so any worker
    process can answer any game's request. Limits: ``max_active`` games in active play, and
    ``new_games_per_minute`` per address (0: none)."""

    def __init__(
        self,
        store: Store | None = None,
        *,
        max_active: int = MAX_ACTIVE_GAMES,
        active_seconds: float = ACTIVE_SECONDS,
        new_games_per_minute: int = NEW_GAMES_PER_MINUTE,
        cached: int = CACHED_GAMES,
        keep_seconds: float | None = KEEP_SECONDS,
        keep_finished: int | None = KEEP_FINISHED,
        abandoned_seconds: float = ABANDONED_SECONDS,
    ) -> None:
        self.store = Store.temporary() if store is None else store
        self.max_active = max_active
        self.active_seconds = active_seconds
        self.new_games_per_minute = new_games_per_minute
        self.cached = cached
        self.keep_seconds = keep_seconds
        self.keep_finished = keep_finished
        self.abandoned_seconds = abandoned_seconds
        self._games: OrderedDict[str, WebGame] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Games built in this process."""
        return len(self._games)

    def open(self, settings: GameSettings, address: str) -> WebGame:
        """A new game, admitted by the store (429, 503) before its agents are built."""
        game_id = secrets.token_hex(8)
        self.store.open(
            game_id,
            address,
            settings.as_dict(),
            {"moves": [], "paused": False, "stalled": None, "replaced": [], "specs": settings.specs},
            max_active=self.max_active,
            active_seconds=self.active_seconds,
            per_minute=self.new_games_per_minute,
        )
        try:
            game = start_game(game_id, settings)
        except Exception as e:  # whatever stopped it, a game that was never built leaves no row behind
            # An opponent the request got wrong is no game played; a server fault keeps its count,
            # so that failing builds cannot be asked for without limit.
            self.store.discard(game_id, address, self.new_games_per_minute if isinstance(e, BadRequest) else 0)
            raise
        self._keep(game)
        return game

    def get(self, game_id: str, to_change: bool = False) -> WebGame:
        """The game as its row says now (404 if there is none). ``to_change``: for a request
        that will play it, which is refused (409) while another request plays it."""
        stored = self.store.load(game_id)
        if stored is None:
            raise BadRequest(f"no game with id {game_id!r} (it may have been pruned)", 404)
        with self._lock:
            game = self._games.get(game_id)
            if game is not None:
                self._games.move_to_end(game_id)
        if game is not None:
            if to_change and game.playing.locked():
                raise BadRequest(PLAYING_NOW, 409)
            with game.lock:
                if not game.discarded and (game.version >= stored.version or game.catch_up(stored)):
                    return game
        game = WebGame.restore(stored)
        self._keep(game)
        return game

    def save(self, game: WebGame) -> None:
        """Store the game's state before it is answered (409 if another request saved it meanwhile)."""
        finished = game.over
        try:
            game.version = self.store.save(
                game.id,
                game.version,
                game.state(),
                summary=game.summary() if finished else None,
                replay=game.replay() if finished else None,
            )
        except Conflict:
            game.discarded = True
            with self._lock:
                if self._games.get(game.id) is game:
                    del self._games[game.id]
            raise BadRequest(CHANGED_MEANWHILE, 409) from None

    def _keep(self, game: WebGame) -> None:
        with self._lock:
            self._games[game.id] = game
            self._games.move_to_end(game.id)
            while len(self._games) > self.cached:
                self._games.popitem(last=False)

    def prune(self) -> int:
        """Delete old finished games and abandoned ones from the store; how many went."""
        return self.store.prune(
            keep_seconds=self.keep_seconds, keep_count=self.keep_finished, abandoned_seconds=self.abandoned_seconds
        )


# -- request checking ---------------------------------------------------------------------------


async def _read_body(request: Request) -> bytes:
    """The body, read up to MAX_BODY_BYTES: 413 as soon as it is longer (announced or not)."""
    declared = request.headers.get("content-length")
    too_long = f"the body is over {MAX_BODY_BYTES} bytes"
    if declared is not None and (not (declared.isascii() and declared.isdigit()) or int(declared) > MAX_BODY_BYTES):
        raise BadRequest(too_long, 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BadRequest(too_long, 413)
        chunks.append(chunk)
    return b"".join(chunks)


async def _body(request: Request, allowed: set[str]) -> dict[str, Any]:
    raw = await _read_body(request)
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest("the body must be UTF-8 JSON") from None
    except RecursionError:
        raise BadRequest("the body's JSON is nested too deeply") from None
    except ValueError:
        raise BadRequest("the body must be JSON") from None
    if not isinstance(body, dict):
        raise BadRequest(f"the body must be a JSON object, got {type(body).__name__}")
    try:
        where = _text_not_unicode(body, "the body")
    except RecursionError:  # json.loads took it, but the check goes deeper per level
        raise BadRequest("the body's JSON is nested too deeply") from None
    if where is not None:  # JSON's \ud800 escapes decode to lone surrogates, which no answer could echo back
        raise BadRequest(f"{where} holds text that is not valid Unicode (a lone surrogate escape)")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise BadRequest(f"unknown field(s) {unknown}; expected some of {sorted(allowed)}")
    return body


def _text_not_unicode(value: Any, where: str) -> str | None:
    """Where in a parsed JSON value a string or key is not valid Unicode, or None.

    Examples:
        >>> _text_not_unicode({"replay": {"agents": ["a", "\\ud800"]}}, "the body")
        "the body's 'replay' -> 'agents' -> [1]"
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    if isinstance(value, list):
        items = [(f"[{index}]", item) for index, item in enumerate(value)]
    elif isinstance(value, dict):
        if any(_text_not_unicode(key, where) for key in value):
            return f"a key of {where}"
        items = [(repr(key), item) for key, item in value.items()]
    else:
        return None
    joint = "'s " if where == "the body" else " -> "
    return next((found for name, item in items if (found := _text_not_unicode(item, f"{where}{joint}{name}"))), None)


def _int(body: dict[str, Any], key: str, default: int | None, low: int, high: int | None = None) -> int | None:
    value = body.get(key, default)
    if value is None:
        return None
    if not is_int(value) or value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise BadRequest(f"{key!r} must be an integer {bound}, got {value!r}")
    return value


class Opponents:
    """The agents a web request may seat, as the operator allows: ``allowed`` agents by name
    (the scripted ones, search and OpenSpiel's bots, each within this module's bounds on its
    work), the shipped ``pretrained:NAME`` agents, and the agent folders found when the app
    starts in ``agents_dirs`` (``serve --agents-dir DIR``), as ``policy:DIR/FOLDER``. Any other
    ``policy:PATH``, as an opponent or as a search's ``prior=``, gets one answer whether the
    path exists or not: the request's path is never looked up on the server.

    Examples:
        >>> Opponents().check("search:worlds=64")
        'search:worlds=64'
        >>> Opponents().check("policy:/etc")
        Traceback (most recent call last):
        ...
        block_env.apps.web.BadRequest: opponent 'policy:/etc' is not offered by this server: ...
    """

    def __init__(self, agents_dirs: Sequence[str | Path] = (), allowed: Sequence[str] = ALLOWED_AGENTS) -> None:
        self.allowed = tuple(allowed)
        self.folders: dict[str, str] = {}  # a policy path a request may give -> its listed form
        self.listed: list[str] = []
        for directory in agents_dirs:
            root = Path(directory)
            if not root.is_dir():
                raise ValueError(f"--agents-dir {directory}: not a folder")
            for folder in sorted(p for p in root.iterdir() if (p / "agent.json").is_file()):
                self.folders[str(folder)] = self.folders[str(folder.resolve())] = str(folder)
                self.listed.append(f"policy:{folder}")

    def offered(self) -> list[str]:
        """The agent specs to suggest: the named agents, every pretrained one, the operator's folders."""
        named = [f"{name}:ismcts" if name == "openspiel" else name for name in self.allowed]
        return [*named, *(f"pretrained:{name}" for name in PRETRAINED), *self.listed]

    def _refuse(self, spec: str) -> BadRequest:
        return BadRequest(
            f"opponent {spec!r} is not offered by this server: it seats {', '.join(self.allowed)} "
            "(within their bounds), pretrained:NAME and the agent folders GET /api/options lists",
            403,
        )

    def check(self, spec: str, *, within: str | None = None) -> str:
        """The spec, once allowed and within bounds (a listed folder named by its listed path);
        BadRequest otherwise. ``within``: the search spec this one is the prior of."""
        shown = within or spec
        try:
            name, options = parse_spec(spec)
        except ValueError as e:
            raise BadRequest(f"opponent {shown!r}: {e}") from None
        if spec.startswith("pretrained:"):
            return spec  # parse_spec checked the name
        if name == "policy":
            listed = self.folders.get(options["path"])
            if listed is None:
                raise self._refuse(shown)
            return f"policy:{listed}"
        if name == "human":
            raise BadRequest("'human' cannot be an opponent here: you are the human")
        if name not in self.allowed or within is not None:
            raise self._refuse(shown)
        if name == "search":
            self._check_search(spec, options)
        if name == "openspiel":
            _at_most(spec, options.get("simulations"), MAX_OPENSPIEL_SIMULATIONS, "OpenSpiel bot runs", "simulations")
        return spec

    def _check_search(self, spec: str, options: dict[str, Any]) -> None:
        worlds = options.get("worlds", _SEARCH_DEFAULTS["worlds"])
        _at_most(spec, worlds, MAX_SEARCH_WORLDS, "search plays", "worlds")
        if options.get("belief") == "prior" and is_int(worlds):
            most = MAX_BELIEF_DEALS // BELIEF_CANDIDATES
            _at_most(
                spec, worlds, most, f"search with belief=prior ({BELIEF_CANDIDATES} deals a world) plays", "worlds"
            )
        prior = options.get("prior")
        if isinstance(prior, str) and ":" in prior:
            self.check(prior, within=spec)


_SEARCH_DEFAULTS = {name: p.default for name, p in inspect.signature(SearchAgent).parameters.items()}


def _at_most(spec: str, value: object, most: int, what: str, unit: str) -> None:
    """422 when a bounded option is over its bound (a value of the wrong type is the agent's to refuse)."""
    if is_int(value) and value > most:
        raise BadRequest(f"opponent {spec!r}: a web game's {what} at most {most} {unit}", 422)


def _build_agent(spec: str, rules: Rules, seed: int) -> Agent:
    try:
        return make_agent(spec, rules, seed=seed)
    except (ValueError, TypeError, FileNotFoundError) as e:
        # A shipped agent's folder is named as the request named it, not by its place on the server.
        message = str(e).replace(f"{PRETRAINED_DIR}/", "pretrained:")
        raise BadRequest(f"opponent {spec!r}: {message}") from None


@dataclass(frozen=True)
class GameSettings:
    """What a new game was asked for, checked: everything needed to deal it again."""

    preset: str
    episode: str
    seat: int
    seed: int
    specs: list[str | None]  # by seat; None: the person

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GameSettings:
        return cls(values["preset"], values["episode"], values["seat"], values["seed"], list(values["specs"]))


def read_settings(body: dict[str, Any], opponents: Opponents) -> GameSettings:
    """A new game's request, checked field by field (BadRequest names what is wrong). Without
    a seed the server draws one, so that every game can be dealt and played again."""
    preset = body.get("preset", "standard")
    if not isinstance(preset, str) or preset not in PRESETS:
        raise BadRequest(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    rules = PRESETS[preset]
    episode = body.get("episode", "round")
    if episode not in EPISODES:
        raise BadRequest(f"'episode' must be one of {list(EPISODES)}, got {episode!r}")
    n = rules.num_players
    seat = _int(body, "seat", 0, 0, n - 1)
    assert seat is not None  # it has a default
    seed = _int(body, "seed", None, 0, SEED_BOUND - 1)
    requested = body.get("opponents", ["greedy"])
    if not (
        isinstance(requested, list) and 1 <= len(requested) <= n - 1 and all(isinstance(o, str) for o in requested)
    ):
        raise BadRequest(f"'opponents' must be a list of 1 to {n - 1} agent specs (strings), got {requested!r}")
    checked = [opponents.check(spec) for spec in requested]
    others = iter(checked[i % len(checked)] for i in range(n - 1))
    specs = [None if s == seat else next(others) for s in range(n)]
    return GameSettings(preset, episode, seat, secrets.randbelow(SEED_BOUND) if seed is None else seed, specs)


def start_game(game_id: str, settings: GameSettings) -> WebGame:
    """The game dealt from its settings, each opponent seeded by its seat (BadRequest when an
    opponent's options are refused by the agent itself)."""
    rules = PRESETS[settings.preset]
    agents: list[Agent | None] = [
        None if spec is None else _build_agent(spec, rules, seat_seed(settings.seed, s))
        for s, spec in enumerate(settings.specs)
    ]
    env = raw_env(rules, episode=settings.episode, reward="points")
    env.reset(seed=settings.seed)
    return WebGame(
        game_id,
        settings.preset,
        rules,
        settings.episode,
        settings.seat,
        settings.seed,
        list(settings.specs),
        agents,
        env,
    )


# -- handlers: each reads the app's games from ``request.app.state.games`` -----------------------


def _games(request: Request) -> Games:
    return request.app.state.games


def _game(request: Request, to_change: bool = False) -> WebGame:
    """The request's game, read from the store (blocking: call it on a thread)."""
    return _games(request).get(request.path_params["game_id"], to_change)


async def _load(request: Request) -> WebGame:
    return await run_in_threadpool(_game, request)


async def _on_agent_threads(request: Request, work: Callable[[], Any]) -> Any:
    """Run ``work`` (which lets agents move) on the app's bounded agent threads."""
    pool: ThreadPoolExecutor = request.app.state.agent_threads
    return await asyncio.get_running_loop().run_in_executor(pool, work)


def _locked(game: WebGame, read: Any) -> Any:
    with game.lock:  # a move in progress (an agent thinking) finishes first
        return read()


def _budget(request: Request) -> MoveBudget:
    return request.app.state.budget


def _change(request: Request, game: WebGame, play: Callable[[], list[dict[str, Any]]]) -> dict[str, Any]:
    """Under the game's lock: ``play`` (which refuses with BadRequest before changing anything),
    then the game saved, then its view with the events. A game left half-changed by anything
    else is built again from the store by the next request."""
    if not game.playing.acquire(blocking=False):
        raise BadRequest(PLAYING_NOW, 409)
    try:
        with game.lock:  # a hint being worked out, or a read, finishes first
            if game.discarded:
                raise BadRequest(CHANGED_MEANWHILE, 409)
            try:
                events = play()
                _games(request).save(game)
            except BadRequest:
                raise
            except BaseException:
                game.discarded = True
                raise
            return game.view(events)
    finally:
        game.playing.release()


def _address(request: Request) -> str:
    """The client's address (behind a trusted proxy, the one it forwarded: uvicorn's proxy headers)."""
    return request.client.host if request.client is not None else "unknown"


async def options(request: Request) -> JSONResponse:
    """``GET /api/options``: presets, episode kinds, the agent specs this server offers."""
    presets = {name: {"num_players": r.num_players, "partnership": r.partnership} for name, r in PRESETS.items()}
    offered: Opponents = request.app.state.opponents
    return JSONResponse(
        {
            "presets": presets,
            "episodes": list(EPISODES),
            "agents": offered.offered(),
            "fallback": FALLBACK_AGENT,
            "move_seconds": _budget(request).seconds,
        }
    )


async def create(request: Request) -> JSONResponse:
    """``POST /api/games``: a new game, played until it is the person's move. The store admits
    it (rate and room) before its agents are built or move."""
    body = await _body(request, {"preset", "episode", "opponents", "seat", "seed"})
    games = _games(request)
    settings = read_settings(body, request.app.state.opponents)
    address = _address(request)

    def start() -> dict[str, Any]:
        game = games.open(settings, address)
        return _change(request, game, lambda: game.play_opponents(_budget(request)))

    return JSONResponse(await _on_agent_threads(request, start), status_code=201)


async def show(request: Request) -> JSONResponse:
    """``GET /api/games/{id}``: the person's view."""

    def read() -> dict[str, Any]:
        game = _game(request)
        return _locked(game, game.view)

    return JSONResponse(await run_in_threadpool(read))


async def move(request: Request) -> JSONResponse:
    """``POST /api/games/{id}/move``: the person's move, and the agents' moves that follow."""
    body = await _body(request, {"action"})
    if "action" not in body:
        raise BadRequest("the body needs 'action' (an action id from the view's moves)")

    def play() -> dict[str, Any]:
        game = _game(request, to_change=True)
        action = _int(body, "action", None, 0, game.rules.tile_set.num_actions - 1)
        assert action is not None

        def person_moves() -> list[dict[str, Any]]:
            if game.over:
                raise BadRequest("the game is over", 409)
            if game.paused:
                raise BadRequest("the round is over: POST .../next to deal the next one", 409)
            if game.stalled is not None:
                raise BadRequest(_stalled_message(game), 409)
            to_play = game.env.seat_of(game.env.agent_selection)
            if to_play != game.seat:
                raise BadRequest(f"it is seat {to_play}'s move, not yours", 409)
            return game.play(action, _budget(request))

        return _change(request, game, person_moves)

    return JSONResponse(await _on_agent_threads(request, play))


async def next_round(request: Request) -> JSONResponse:
    """``POST /api/games/{id}/next``: after a round of a match, deal the next."""

    def deal() -> dict[str, Any]:
        game = _game(request, to_change=True)

        def next_deal() -> list[dict[str, Any]]:
            if game.stalled is not None:
                raise BadRequest(_stalled_message(game), 409)
            if not game.paused:
                raise BadRequest("no finished round is waiting (the game is over or in play)", 409)
            game.paused = False
            return game.play_opponents(_budget(request))

        return _change(request, game, next_deal)

    return JSONResponse(await _on_agent_threads(request, deal))


def _stalled_message(game: WebGame) -> str:
    assert game.stalled is not None
    return (
        f"seat {game.stalled['seat']}'s opponent failed ({game.stalled['error']}): POST .../resume to let it "
        f'try again, or with {{"fallback": true}} to seat {FALLBACK_AGENT} in its place'
    )


async def resume(request: Request) -> JSONResponse:
    """``POST /api/games/{id}/resume`` ``{"fallback": bool}``: after an opponent failed, let it
    try its move again, or seat FALLBACK_AGENT in its place; the agents then play on."""
    body = await _body(request, {"fallback"})
    fallback = body.get("fallback", False)
    if not isinstance(fallback, bool):
        raise BadRequest(f"'fallback' must be true or false, got {fallback!r}")

    def go_on() -> dict[str, Any]:
        game = _game(request, to_change=True)
        return _change(request, game, lambda: game.resume(_budget(request), fallback))

    return JSONResponse(await _on_agent_threads(request, go_on))


async def game_replay(request: Request) -> JSONResponse:
    """``GET /api/games/{id}/replay``: the game so far as a replay (its finished rounds)."""

    def read() -> dict[str, Any]:
        game = _game(request)
        return _locked(game, game.replay)

    return JSONResponse(await run_in_threadpool(read))


def _page(request: Request) -> int:
    text = request.query_params.get("page", "1")
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 10**9):
        raise BadRequest(f"'page' must be a page number from 1, got {text!r}")
    return int(text)


def _finished_page(request: Request, page: int) -> dict[str, Any]:
    games, total = _games(request).store.finished(page, REPLAYS_PER_PAGE)
    for game in games:
        game["replay"] = f"/api/replays/{game['id']}"
        game["page"] = f"/replays/{game['id']}"
    pages = max(1, -(-total // REPLAYS_PER_PAGE))
    return {"page": page, "pages": pages, "per_page": REPLAYS_PER_PAGE, "total": total, "games": games}


async def replays(request: Request) -> JSONResponse:
    """``GET /api/replays?page=N``: finished games, newest first, a page at a time."""
    page = _page(request)
    return JSONResponse(await run_in_threadpool(_finished_page, request, page))


async def stored_replay(request: Request) -> JSONResponse:
    """``GET /api/replays/{id}``: a finished game's replay, from the store."""
    game_id = request.path_params["game_id"]
    found = await run_in_threadpool(_games(request).store.replay, game_id)
    if found is None:
        raise BadRequest(f"no finished game with id {game_id!r} (it may be in play, or pruned)", 404)
    return JSONResponse(found)


def _html_page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<link rel="stylesheet" href="/static/style.css"></head><body><main>{body}</main></body></html>'
    )


async def replay_page(request: Request) -> HTMLResponse:
    """``GET /replays/{id}``: a finished game's replay as a page: each round's deal, every move
    in order and the result (the JSON opens in the replay viewer to step through)."""
    game_id = request.path_params["game_id"]
    found = await run_in_threadpool(_games(request).store.replay, game_id)
    if found is None:
        raise BadRequest(f"no finished game with id {game_id!r} (it may be in play, or pruned)", 404)
    frames = await run_in_threadpool(replay, found)
    agents = frames["agents"]
    parts = [
        f"<h1>Game {html.escape(game_id)}</h1><p>{html.escape(' / '.join(agents))}. "
        f'<a href="/api/replays/{html.escape(game_id)}">JSON</a> · <a href="/replays">all finished games</a></p>'
    ]
    for number, rnd in enumerate(frames["rounds"], start=1):
        deal = "".join(
            f"<li>seat {s} ({html.escape(agents[s])}): {' '.join(f'{a}|{b}' for a, b in hand)}</li>"
            for s, hand in enumerate(rnd[0]["hands"])
        )
        moves = "".join(
            f"<li>seat {f['move']['seat']} ({html.escape(agents[f['move']['seat']])}): {html.escape(f['move']['text'])}</li>"
            for f in rnd[1:]
        )
        result = rnd[-1]["result"]
        parts.append(
            f"<h2>Round {number}</h2><p>Dealt:</p><ul>{deal}</ul><p>Moves:</p><ol>{moves}</ol>"
            f"<p>{html.escape(result['why'])}: {result['award']} points.</p>"
        )
    return _html_page(f"Game {game_id}", "".join(parts))


async def replays_page(request: Request) -> HTMLResponse:
    """``GET /replays?page=N``: the list of finished games as a page, each with its replay's link."""
    listing = await run_in_threadpool(_finished_page, request, _page(request))
    rows = "".join(
        "<tr><td>{when}</td><td>{preset}</td><td>{episode}</td><td>{agents}</td><td>{scores}</td>"
        '<td><a href="{page}">replay</a> · <a href="{replay}">JSON</a></td></tr>'.format(
            when=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(g["finished"])),
            preset=html.escape(g["preset"]),
            episode=html.escape(g["episode"]),
            agents=html.escape(" / ".join(g["agents"])),
            scores=html.escape(" - ".join(str(v) for v in g["scores"])),
            page=html.escape(g["page"]),
            replay=html.escape(g["replay"]),
        )
        for g in listing["games"]
    )
    page, pages = listing["page"], listing["pages"]
    links = " ".join(
        [f'<a href="/replays?page={page - 1}">newer</a>'] * (page > 1)
        + [f"page {page} of {pages}"]
        + [f'<a href="/replays?page={page + 1}">older</a>'] * (page < pages)
    )
    return _html_page(
        "Finished games",
        f'<h1>Finished games</h1><p>{listing["total"]} games, newest first. <a href="/">Play</a></p>'
        "<table><thead><tr><th>finished</th><th>rules</th><th>episode</th><th>seats</th><th>scores</th><th></th>"
        f"</tr></thead><tbody>{rows}</tbody></table><p>{links}</p>",
    )


async def expand_replay(request: Request) -> JSONResponse:
    """``POST /api/replay``: every frame of a replay, checked move by move."""
    body = await _body(request, {"replay"})
    try:
        frames = await run_in_threadpool(replay, body.get("replay"))
    except ValueError as e:
        raise BadRequest(str(e), 422) from None
    return JSONResponse(frames)


async def opponents(request: Request) -> JSONResponse:
    """``GET /api/opponents?rules=PRESET``: the opponents to pick from, by name, with their
    measured strength (block_env.apps.catalogue)."""
    try:
        return JSONResponse(catalogue.catalogue(request.query_params.get("rules", "standard")))
    except ValueError as e:
        raise BadRequest(str(e)) from None


async def _coach(request: Request, advice: Callable[[WebGame], dict[str, Any]]) -> JSONResponse:
    """The coach's ``advice`` on a game (block_env.apps.coach), on the agent threads."""
    game = await _load(request)

    def work() -> dict[str, Any]:
        if game.playing.locked():  # not an agent thread held waiting for a move to be played
            raise BadRequest(PLAYING_NOW, 409)
        with game.lock:
            try:
                # timed like an opponent's move: advice holds the game and an agent thread
                return _budget(request).run(lambda: advice(game))
            except ValueError as e:
                raise BadRequest(str(e), 409) from None
            except OverBudget as e:
                raise BadRequest(f"the coach's advice: {e}; try again later", 503) from None

    return JSONResponse(await _on_agent_threads(request, work))


async def coach_hint(request: Request) -> JSONResponse:
    """``GET /api/games/{id}/hint``: search's and the network's view of each of your legal moves now."""

    def advice(game: WebGame) -> dict[str, Any]:
        if game.paused:  # a match has dealt the next round already, unseen
            raise ValueError("the round is over: a review looks back at it; deal the next round for a hint")
        return coach.hint(game.env, game.preset, game.seat)

    return await _coach(request, advice)


async def coach_review(request: Request) -> JSONResponse:
    """``GET /api/games/{id}/review``: the same for each choice you made in the last finished round."""
    return await _coach(request, lambda game: coach.review(game.env, game.preset, game.seat))


async def index(request: Request) -> FileResponse:
    return FileResponse(STATIC / "index.html")


async def refuse(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, (BadRequest, Refused))
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Refused) and exc.retry_after else None
    return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=headers)


ROUTES = [
    Route("/", index),
    Route("/api/options", options),
    Route("/api/opponents", opponents),
    Route("/api/games", create, methods=["POST"]),
    Route("/api/games/{game_id}", show),
    Route("/api/games/{game_id}/move", move, methods=["POST"]),
    Route("/api/games/{game_id}/next", next_round, methods=["POST"]),
    Route("/api/games/{game_id}/resume", resume, methods=["POST"]),
    Route("/api/games/{game_id}/replay", game_replay),
    Route("/api/games/{game_id}/hint", coach_hint),
    Route("/api/games/{game_id}/review", coach_review),
    Route("/api/replay", expand_replay, methods=["POST"]),
    Route("/api/replays", replays),
    Route("/api/replays/{game_id}", stored_replay),
    Route("/replays", replays_page),
    Route("/replays/{game_id}", replay_page),
    Mount("/static", StaticFiles(directory=STATIC), name="static"),
]


def warm_compiled_code(search: bool = False) -> None:
    """One move of the fallback agent, so that this process has loaded the compiled-code
    machinery before an opponent's move is timed: the first call of compiled code in a process
    takes about half a second (later kernels load in milliseconds), which would otherwise stop
    the first opponent of a new server past a short move budget. With ``search``, a one-world
    search move too: the batched engine's kernels, which the coach and every search opponent
    run, are compiled on their first call after an install (about 11 s on an idle core) and
    read from numba's cache after that."""
    env = raw_env("standard")
    env.reset(seed=0)
    agents = [FALLBACK_AGENT, "search:worlds=1"] if search else [FALLBACK_AGENT]
    for spec in agents:
        agent = _build_agent(spec, env.rules, 0)
        agent.act(env.observe(env.agent_selection, agent.observation))


def create_app(
    games: Games | None = None,
    agents_dirs: Sequence[str | Path] = (),
    *,
    opponents: Opponents | None = None,
    move_seconds: float = MOVE_SECONDS,
    prune_seconds: float = PRUNE_SECONDS,
    warm_search: bool = False,
) -> Starlette:
    """The web app, holding ``games`` (in a temporary store by default), offering the agents
    :class:`Opponents` allows (the folders in ``agents_dirs`` besides the named and shipped
    agents; or ``opponents`` as given), each opponent's move stopped after ``move_seconds``;
    while it runs, old games are pruned every ``prune_seconds``. With ``warm_search``, its
    start also begins compiling the search kernels (:func:`warm_compiled_code`) in a
    background thread, ``app.state.warming``: the app answers at once, and the first coach
    hint or search move after an install need not wait for the compile.

    Examples:
        >>> from starlette.testclient import TestClient
        >>> client = TestClient(create_app())
        >>> client.post("/api/games", json={"seed": 1, "opponents": ["greedy"]}).status_code
        201
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async def prune_now_and_then() -> None:
            while True:
                try:
                    await run_in_threadpool(app.state.games.prune)
                except Exception:  # a busy or unreachable database: try again next time
                    log.exception("pruning old games failed")
                await asyncio.sleep(prune_seconds)

        pruning = asyncio.create_task(prune_now_and_then())
        if warm_search:
            app.state.warming = threading.Thread(target=_warm_search, name="warm-search", daemon=True)
            app.state.warming.start()
        yield
        pruning.cancel()
        app.state.agent_threads.shutdown(wait=False, cancel_futures=True)
        app.state.budget.close()

    warm_compiled_code()
    app = Starlette(routes=ROUTES, exception_handlers={BadRequest: refuse, Refused: refuse}, lifespan=lifespan)
    app.state.games = Games() if games is None else games
    app.state.opponents = Opponents(agents_dirs) if opponents is None else opponents
    app.state.budget = MoveBudget(move_seconds)
    app.state.agent_threads = ThreadPoolExecutor(max_workers=AGENT_THREADS, thread_name_prefix="agents")
    return app


def _warm_search() -> None:
    try:
        warm_compiled_code(search=True)
    except Exception:  # the app still serves; the first search move compiles instead
        log.exception("compiling the search kernels at start failed")


#: The environment variable that hands ``serve``'s settings to its worker processes.
SETTINGS_VARIABLE = "BLOCK_ENV_WEB_SETTINGS"


@dataclass(frozen=True)
class ServeSettings:
    """What ``block-dominoes serve`` sets up, the same in every worker process."""

    store: str  # the database URL
    agents_dirs: tuple[str, ...] = ()
    move_seconds: float = MOVE_SECONDS
    max_active: int = MAX_ACTIVE_GAMES
    new_games_per_minute: int = NEW_GAMES_PER_MINUTE
    keep_seconds: float | None = KEEP_SECONDS
    keep_finished: int | None = KEEP_FINISHED

    def app(self) -> Starlette:
        games = Games(
            Store(self.store),
            max_active=self.max_active,
            new_games_per_minute=self.new_games_per_minute,
            keep_seconds=self.keep_seconds,
            keep_finished=self.keep_finished,
        )
        return create_app(games, self.agents_dirs, move_seconds=self.move_seconds, warm_search=True)


def app_from_environment() -> Starlette:
    """The app each of ``serve``'s workers runs (uvicorn's factory), from SETTINGS_VARIABLE."""
    values = json.loads(os.environ[SETTINGS_VARIABLE])
    return ServeSettings(**{**values, "agents_dirs": tuple(values["agents_dirs"])}).app()


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    write: Any = print,
    *,
    data: str | Path = "runs/web",
    store: str | None = None,
    workers: int = 1,
    agents_dirs: Sequence[str | Path] = (),
    move_seconds: float = MOVE_SECONDS,
    max_active: int = MAX_ACTIVE_GAMES,
    new_games_per_minute: int = NEW_GAMES_PER_MINUTE,
    keep_seconds: float | None = KEEP_SECONDS,
    keep_finished: int | None = KEEP_FINISHED,
) -> None:
    """Run the app with uvicorn until interrupted: ``workers`` processes sharing the store at
    ``store`` (a database URL; by default SQLite in the folder ``data``)."""
    import uvicorn

    settings = ServeSettings(
        store or sqlite_url(data),
        tuple(str(d) for d in agents_dirs),
        move_seconds,
        max_active,
        new_games_per_minute,
        keep_seconds,
        keep_finished,
    )
    settings.app().state.games.store.close()  # refuses a bad --agents-dir or store first, and makes the tables
    os.environ[SETTINGS_VARIABLE] = json.dumps(asdict(settings))
    where = "SQLite in " + str(Path(data)) if store is None else "the database at --store"
    write(f"block_env web app on http://{host}:{port}/ ({workers} worker(s), games kept in {where}; Ctrl-C stops it)")
    uvicorn.run(
        "block_env.apps.web:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
    )
