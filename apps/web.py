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
- ``GET /api/games/{id}/replay``: the game so far as a replay (``block_env.apps.replay``).
- ``GET /api/games/{id}/hint``, ``GET /api/games/{id}/review``: the coach's view of each legal
  move now, or of each choice made in the last finished round (``block_env.apps.coach``).
- ``POST /api/replay`` ``{"replay": {...}}``: every frame of a replay, checked move by move.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from block_env.aec import raw_env
from block_env.agents import Agent, make_agent, parse_spec
from block_env.apps import catalogue, coach
from block_env.apps.replay import explain, opening_index, replay, replay_round
from block_env.engine import Round
from block_env.episodes import Move, play_moves, step
from block_env.options import EPISODES
from block_env.rules import PRESETS, Rules
from block_env.tiles import bit_indices
from block_env.validation import is_int

STATIC = Path(__file__).with_name("web_static")
#: Games kept at once. A new game first makes room by dropping games idle for IDLE_SECONDS;
#: when every kept game moved more recently than that, the new game is refused (503).
MAX_GAMES = 1000
#: A game nobody has touched (view, move, replay) for this long may be dropped to make room.
IDLE_SECONDS = 30 * 60
#: A finished game may be dropped to make room after this long untouched (its result and
#: replay stay readable until then).
FINISHED_IDLE_SECONDS = 10
#: The largest request body read, in bytes (a replay of a long match fits; 413 beyond it).
MAX_BODY_BYTES = 256 * 1024
#: What a web request may ask of an agent: search's worlds per decision at most this.
MAX_SEARCH_WORLDS = 1024
#: Agent move computations run on this many threads, apart from the event loop and from the
#: threads that serve views, so that slow opponents never hold up another player's requests.
AGENT_THREADS = 4
SUGGESTED_AGENTS = ["random", "greedy", "strategic", "search", "pretrained:standard"]


class BadRequest(Exception):
    """A request the server refuses: (status, message)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class WebGame:
    """One game on the server: the AEC env, the agents by seat (None: the person) and
    whether a finished round of a match is on show (until the person asks for the next)."""

    id: str
    preset: str
    rules: Rules
    episode: str
    seat: int
    agents: list[Agent | None]
    names: list[str]
    env: raw_env
    paused: bool = False  # a round of a match just ended: the page shows it until /next
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def over(self) -> bool:
        return self.env.episode_over

    @property
    def person(self) -> str:
        """The person's agent name in the env."""
        return self.env.possible_agents[self.seat]

    def play_opponents(self) -> list[dict[str, Any]]:
        """Let the agents move until it is the person's move, the round ends or the game does."""
        events: list[dict[str, Any]] = []
        if self.paused:
            return events
        for move in play_moves(self.env, self.agents):
            events += self._events(move)
            if self.paused:
                break
        return events

    def play(self, action: int) -> list[dict[str, Any]]:
        """The person's move (checked by the engine), then the agents' moves that follow."""
        return self._events(step(self.env, action)) + self.play_opponents()

    def _events(self, move: Move) -> list[dict[str, Any]]:
        """What the page shows of a move: the line after it, and the round's result if it ended one."""
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
            "voids": [[v for v in range(ts.num_suits) if public.voids[r] >> v & 1] for r in absolute],
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
            "voids": [[v for v in range(ts.num_suits) if m >> v & 1] for m in final.voids],
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
        return {"rules": self.rules.as_dict(), "agents": self.names, "rounds": self.env.round_records()}


class Games:
    """The games in play, by id (thread-safe). At most ``limit`` are kept: a new game makes
    room by dropping games nobody has touched for ``idle_seconds`` (``finished_seconds`` for
    a game that is over), least recently used first, and is refused with 503 when there are
    none; a game someone touched more recently than that is never dropped."""

    def __init__(
        self,
        limit: int = MAX_GAMES,
        idle_seconds: float = IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        finished_seconds: float = FINISHED_IDLE_SECONDS,
    ) -> None:
        self._games: OrderedDict[str, WebGame] = OrderedDict()  # least recently used first
        self._used: dict[str, float] = {}
        self._lock = threading.Lock()
        self.limit = limit
        self.idle_seconds = idle_seconds
        self.finished_seconds = min(finished_seconds, idle_seconds)
        self.clock = clock

    def __len__(self) -> int:
        return len(self._games)

    def add(self, game: WebGame) -> None:
        with self._lock:
            if len(self._games) >= self.limit:
                self._make_room(self.clock())
            self._games[game.id] = game
            self._used[game.id] = self.clock()

    def _make_room(self, now: float) -> None:
        """Drop droppable games, least recently used first, until one more fits (or 503)."""
        for game_id, game in list(self._games.items()):
            idle = now - self._used[game_id]
            if idle >= self.idle_seconds or (game.over and idle >= self.finished_seconds):
                del self._games[game_id], self._used[game_id]
                if len(self._games) < self.limit:
                    return
        raise BadRequest(
            f"the server is full: {self.limit} games are in play (a game idle for {self.idle_seconds:.0f} s, "
            f"or finished and idle for {self.finished_seconds:.0f} s, makes room); try again later",
            503,
        )

    def get(self, game_id: str) -> WebGame:
        """The game, marked as used now (404 if there is none)."""
        with self._lock:
            game = self._games.get(game_id)
            if game is not None:
                self._games.move_to_end(game_id)
                self._used[game_id] = self.clock()
        if game is None:
            raise BadRequest(f"no game with id {game_id!r} (it may have been idle too long)", 404)
        return game


# -- request checking ---------------------------------------------------------------------------


async def _read_body(request: Request) -> bytes:
    """The body, read up to MAX_BODY_BYTES: 413 as soon as it is longer (announced or not)."""
    declared = request.headers.get("content-length")
    too_long = f"the body is over {MAX_BODY_BYTES} bytes"
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
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
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise BadRequest(f"unknown field(s) {unknown}; expected some of {sorted(allowed)}")
    return body


def _int(body: dict[str, Any], key: str, default: int | None, low: int, high: int | None = None) -> int | None:
    value = body.get(key, default)
    if value is None:
        return None
    if not is_int(value) or value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise BadRequest(f"{key!r} must be an integer {bound}, got {value!r}")
    return value


def check_web_spec(spec: str) -> None:
    """Refuse an agent spec a web request may not ask for: a human (you are the human), or
    a search budget over MAX_SEARCH_WORLDS worlds per decision."""
    try:
        name, options = parse_spec(spec)
    except ValueError as e:
        raise BadRequest(f"opponent {spec!r}: {e}") from None
    if name == "human":
        raise BadRequest("'human' cannot be an opponent here: you are the human")
    worlds = options.get("worlds")
    if name == "search" and isinstance(worlds, int) and worlds > MAX_SEARCH_WORLDS:
        raise BadRequest(f"opponent {spec!r}: a web game's search plays at most {MAX_SEARCH_WORLDS} worlds", 422)


def new_game(body: dict[str, Any]) -> WebGame:
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
    seed = _int(body, "seed", None, 0, 2**63 - 1)
    opponents = body.get("opponents", ["greedy"])
    if not (
        isinstance(opponents, list) and 1 <= len(opponents) <= n - 1 and all(isinstance(o, str) for o in opponents)
    ):
        raise BadRequest(f"'opponents' must be a list of 1 to {n - 1} agent specs (strings), got {opponents!r}")
    for spec in opponents:
        check_web_spec(spec)
    specs = [opponents[i % len(opponents)] for i in range(n - 1)]
    agents: list[Agent | None] = []
    names = []
    others = iter(specs)
    for s in range(n):
        if s == seat:
            agents.append(None)
            names.append("you")
            continue
        spec = next(others)
        try:
            agent = make_agent(spec, rules, seed=None if seed is None else seed + s)
        except (ValueError, TypeError, FileNotFoundError) as e:
            raise BadRequest(f"opponent {spec!r}: {e}") from None
        agents.append(agent)
        names.append(spec)
    env = raw_env(rules, episode=episode, reward="points")
    env.reset(seed=seed)
    return WebGame(secrets.token_hex(8), preset, rules, episode, seat, agents, names, env)


# -- handlers: each reads the app's games from ``request.app.state.games`` -----------------------


def _games(request: Request) -> Games:
    return request.app.state.games


def _game(request: Request) -> WebGame:
    return _games(request).get(request.path_params["game_id"])


async def _on_agent_threads(request: Request, work: Callable[[], Any]) -> Any:
    """Run ``work`` (which lets agents move) on the app's bounded agent threads."""
    pool: ThreadPoolExecutor = request.app.state.agent_threads
    return await asyncio.get_running_loop().run_in_executor(pool, work)


def _locked(game: WebGame, read: Any) -> Any:
    with game.lock:  # a move in progress (an agent thinking) finishes first
        return read()


async def options(request: Request) -> JSONResponse:
    """``GET /api/options``: presets, episode kinds, suggested agent specs."""
    presets = {name: {"num_players": r.num_players, "partnership": r.partnership} for name, r in PRESETS.items()}
    return JSONResponse({"presets": presets, "episodes": list(EPISODES), "agents": SUGGESTED_AGENTS})


async def create(request: Request) -> JSONResponse:
    """``POST /api/games``: a new game, played until it is the person's move."""
    body = await _body(request, {"preset", "episode", "opponents", "seat", "seed"})
    games = _games(request)

    def start() -> dict[str, Any]:
        game = new_game(body)
        with game.lock:
            events = game.play_opponents()
            games.add(game)
            return game.view(events)

    return JSONResponse(await _on_agent_threads(request, start), status_code=201)


async def show(request: Request) -> JSONResponse:
    """``GET /api/games/{id}``: the person's view."""
    game = _game(request)
    return JSONResponse(await run_in_threadpool(_locked, game, game.view))


async def move(request: Request) -> JSONResponse:
    """``POST /api/games/{id}/move``: the person's move, and the agents' moves that follow."""
    game = _game(request)
    body = await _body(request, {"action"})
    if "action" not in body:
        raise BadRequest("the body needs 'action' (an action id from the view's moves)")
    action = _int(body, "action", None, 0, game.rules.tile_set.num_actions - 1)
    assert action is not None

    def play() -> dict[str, Any]:
        with game.lock:
            if game.over:
                raise BadRequest("the game is over", 409)
            if game.paused:
                raise BadRequest("the round is over: POST .../next to deal the next one", 409)
            to_play = game.env.seat_of(game.env.agent_selection)
            if to_play != game.seat:
                raise BadRequest(f"it is seat {to_play}'s move, not yours", 409)
            try:
                events = game.play(action)
            except ValueError as e:  # the engine refused the move; nothing changed
                raise BadRequest(str(e), 422) from None
            return game.view(events)

    return JSONResponse(await _on_agent_threads(request, play))


async def next_round(request: Request) -> JSONResponse:
    """``POST /api/games/{id}/next``: after a round of a match, deal the next."""
    game = _game(request)

    def deal() -> dict[str, Any]:
        with game.lock:
            if not game.paused:
                raise BadRequest("no finished round is waiting (the game is over or in play)", 409)
            game.paused = False
            return game.view(game.play_opponents())

    return JSONResponse(await _on_agent_threads(request, deal))


async def game_replay(request: Request) -> JSONResponse:
    """``GET /api/games/{id}/replay``: the game so far as a replay."""
    game = _game(request)
    return JSONResponse(await run_in_threadpool(_locked, game, game.replay))


async def expand_replay(request: Request) -> JSONResponse:
    """``POST /api/replay``: every frame of a replay, checked move by move."""
    body = await _body(request, {"replay"})
    try:
        frames = replay(body.get("replay"))
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
    game = _game(request)

    def work() -> dict[str, Any]:
        with game.lock:
            try:
                return advice(game)
            except ValueError as e:
                raise BadRequest(str(e), 409) from None

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
    assert isinstance(exc, BadRequest)
    return JSONResponse({"error": str(exc)}, status_code=exc.status)


ROUTES = [
    Route("/", index),
    Route("/api/options", options),
    Route("/api/opponents", opponents),
    Route("/api/games", create, methods=["POST"]),
    Route("/api/games/{game_id}", show),
    Route("/api/games/{game_id}/move", move, methods=["POST"]),
    Route("/api/games/{game_id}/next", next_round, methods=["POST"]),
    Route("/api/games/{game_id}/replay", game_replay),
    Route("/api/games/{game_id}/hint", coach_hint),
    Route("/api/games/{game_id}/review", coach_review),
    Route("/api/replay", expand_replay, methods=["POST"]),
    Mount("/static", StaticFiles(directory=STATIC), name="static"),
]


def create_app(games: Games | None = None) -> Starlette:
    """The web app, holding ``games`` (a new store by default).

    Examples:
        >>> from starlette.testclient import TestClient
        >>> client = TestClient(create_app())
        >>> client.post("/api/games", json={"seed": 1, "opponents": ["greedy"]}).status_code
        201
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        app.state.agent_threads.shutdown(wait=False, cancel_futures=True)

    app = Starlette(routes=ROUTES, exception_handlers={BadRequest: refuse}, lifespan=lifespan)
    app.state.games = Games() if games is None else games
    app.state.agent_threads = ThreadPoolExecutor(max_workers=AGENT_THREADS, thread_name_prefix="agents")
    return app


def serve(host: str = "127.0.0.1", port: int = 8000, write: Any = print) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    write(f"block_env web app on http://{host}:{port}/ (Ctrl-C stops it)")
    uvicorn.run(create_app(), host=host, port=port, log_level="warning")
