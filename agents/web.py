"""Play and replay in the browser (``block-dominoes serve``; extra ``[web]``: Starlette + uvicorn).

The server keeps every game's state itself (an engine ``Match`` behind the AEC env, the
agents, the record of finished rounds); the page only shows what its seat may see and sends
moves as action ids. Every request body is JSON, checked field by field: a bad one gets a
4xx answer ``{"error": "..."}`` and changes nothing. Nothing is unpickled.

API (JSON):

- ``GET /api/options``: presets, episode kinds, suggested agent specs.
- ``POST /api/games`` ``{"preset", "episode", "opponents": [spec, ...], "seat", "seed"}``:
  a new game; opponents play until it is your move. Answers the game's view.
- ``GET /api/games/{id}``: the view (your hand with each legal move, the line, the ends,
  hand counts, the suits each seat's passes revealed, scores; at a round's end every hand,
  the pips, the award and why).
- ``POST /api/games/{id}/move`` ``{"action": id}``: your move; the opponents' moves that
  follow come back in ``events``, in order, for the page to show one by one.
- ``POST /api/games/{id}/next``: after a round of a match, deal the next.
- ``GET /api/games/{id}/replay``: the game so far as a replay (``block_env.agents.replay``).
- ``POST /api/replay`` ``{"replay": {...}}``: every frame of a replay, checked move by move.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
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
from block_env.agents import Agent, make_agent
from block_env.agents.replay import explain, replay, replay_round, round_record, rules_record
from block_env.engine import Round
from block_env.options import EPISODES
from block_env.rules import PRESETS, Rules

STATIC = Path(__file__).with_name("web_static")
#: Games kept at once; the oldest is dropped beyond this (a local app, not a service).
MAX_GAMES = 1000
SUGGESTED_AGENTS = ["random", "greedy", "strategic", "search"]


class BadRequest(Exception):
    """A request the server refuses: (status, message)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class WebGame:
    """One game on the server: the AEC env, the agents by seat (None: the person) and the
    finished rounds' full records."""

    id: str
    preset: str
    rules: Rules
    episode: str
    seat: int
    agents: list[Agent | None]
    names: list[str]
    env: Any
    rounds: list[dict[str, Any]] = field(default_factory=list)
    paused: bool = False  # a round of a match just ended: the page shows it until /next
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def over(self) -> bool:
        return all(self.env.terminations.values())

    def play_opponents(self) -> list[dict[str, Any]]:
        """Let the agents move until it is the person's move, the round ends or the game does."""
        events = []
        while not self.over and not self.paused:
            seat = self.env.agent_name_mapping[self.env.agent_selection]
            if seat == self.seat:
                break
            agent = self.agents[seat]
            assert agent is not None
            events += self.step(seat, agent.act(self.env.observe(self.env.agent_selection)))
        return events

    def step(self, seat: int, action: int) -> list[dict[str, Any]]:
        """Play one move (checked by the engine) and record a round that it ends."""
        rnd: Round = self.env.match.round
        finished = len(self.env.results)
        self.env.step(action)
        events = [
            {
                "seat": seat,
                "agent": self.names[seat],
                "action": action,
                "text": self.rules.tile_set.describe_action(action),
                "line": [list(t) for t in rnd.line()],  # the line after this move, to show it
                "ends": None if rnd.ends is None else list(rnd.ends),
            }
        ]
        if len(self.env.results) > finished:
            self.rounds.append({**round_record(rnd), "number": len(self.rounds) + 1})
            self.paused = not self.over
            events.append({"round_over": explain(rnd.result)})
        return events

    def view(self, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """What the person's seat sees (every hand once a round is over)."""
        rules, ts = self.rules, self.rules.tile_set
        showing_result = self.paused or self.over
        rnd: Round = self.env.match.round
        legal = [] if showing_result or rnd.current != self.seat else rnd.legal_actions()
        by_tile: dict[int, list[dict[str, Any]]] = {}
        for action in legal:
            if action != ts.pass_action:
                by_tile.setdefault(action >> 1, []).append({"action": action, "end": "right" if action & 1 else "left"})
        view: dict[str, Any] = {
            "id": self.id,
            "preset": self.preset,
            "episode": self.episode,
            "seat": self.seat,
            "num_players": rules.num_players,
            "partnership": rules.partnership,
            "side_of": [rules.side_of(s) for s in range(rules.num_players)],
            "agents": self.names,
            "round": len(self.rounds) + (0 if showing_result else 1),
            "scores": list(self.env.scores),
            "target": rules.resolved_target if self.episode == "match" else None,
            "events": events or [],
            "over": self.over,
            "paused": self.paused,
        }
        if showing_result:  # the round just finished, every hand shown
            final = self._final_round()
            view.update(
                line=[list(t) for t in final.line()],
                ends=None if final.ends is None else list(final.ends),
                hand=[{"tile": list(t), "moves": []} for t in ts.tiles_of(final.hands[self.seat])],
                hand_counts=list(final.counts),
                voids=[[v for v in range(ts.num_suits) if m >> v & 1] for m in final.voids],
                to_play=None,
                can_pass=False,
                result={**explain(final.result), "hands": [[list(t) for t in ts.tiles_of(h)] for h in final.hands]},
                match_winner=self.env.match_winner if self.over and self.episode == "match" else None,
            )
            return view
        view.update(
            line=[list(t) for t in rnd.line()],
            ends=None if rnd.ends is None else list(rnd.ends),
            hand=[
                {"tile": list(ts.tiles[i]), "moves": by_tile.get(i, [])}
                for i in range(ts.num_tiles)
                if rnd.hands[self.seat] >> i & 1
            ],
            hand_counts=list(rnd.counts),
            voids=[[v for v in range(ts.num_suits) if m >> v & 1] for m in rnd.voids],
            to_play=rnd.current,
            can_pass=ts.pass_action in legal,
            pass_action=ts.pass_action,
            result=None,
            match_winner=None,
        )
        return view

    def _final_round(self) -> Round:
        """The last finished round, replayed from its record (the env has moved on)."""
        rnd, _ = replay_round(self.rules, self.rounds[-1])
        return rnd

    def replay(self) -> dict[str, Any]:
        rounds = list(self.rounds)
        if not self.over and not self.paused and self.env.match.round.moves:
            rounds.append(round_record(self.env.match.round))
        return {"rules": rules_record(self.rules), "agents": self.names, "rounds": rounds}


class Games:
    """The games in play, by id (thread-safe; the oldest dropped beyond ``limit``)."""

    def __init__(self, limit: int = MAX_GAMES) -> None:
        self._games: OrderedDict[str, WebGame] = OrderedDict()
        self._lock = threading.Lock()
        self.limit = limit

    def add(self, game: WebGame) -> None:
        with self._lock:
            self._games[game.id] = game
            while len(self._games) > self.limit:
                self._games.popitem(last=False)

    def get(self, game_id: str) -> WebGame:
        with self._lock:
            game = self._games.get(game_id)
        if game is None:
            raise BadRequest(f"no game with id {game_id!r} (it may have ended long ago)", 404)
        return game


# -- request checking ---------------------------------------------------------------------------


async def _body(request: Request, allowed: set[str]) -> dict[str, Any]:
    try:
        body = await request.json()
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
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise BadRequest(f"{key!r} must be an integer {bound}, got {value!r}")
    return value


def new_game(body: dict[str, Any]) -> WebGame:
    preset = body.get("preset", "standard")
    if preset not in PRESETS:
        raise BadRequest(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    rules = PRESETS[preset]
    episode = body.get("episode", "round")
    if episode not in EPISODES:
        raise BadRequest(f"'episode' must be one of {list(EPISODES)}, got {episode!r}")
    n = rules.num_players
    seat = _int(body, "seat", 0, 0, n - 1)
    seed = _int(body, "seed", None, 0, 2**63 - 1)
    opponents = body.get("opponents", ["greedy"])
    if not (
        isinstance(opponents, list) and 1 <= len(opponents) <= n - 1 and all(isinstance(o, str) for o in opponents)
    ):
        raise BadRequest(f"'opponents' must be a list of 1 to {n - 1} agent specs (strings), got {opponents!r}")
    if "human" in opponents:
        raise BadRequest("'human' cannot be an opponent here: you are the human")
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


def create_app(games: Games | None = None) -> Starlette:
    """The web app (tests drive it with Starlette's TestClient)."""
    games = Games() if games is None else games

    async def options(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "presets": {
                    name: {"num_players": r.num_players, "partnership": r.partnership} for name, r in PRESETS.items()
                },
                "episodes": list(EPISODES),
                "agents": SUGGESTED_AGENTS,
            }
        )

    async def create(request: Request) -> JSONResponse:
        body = await _body(request, {"preset", "episode", "opponents", "seat", "seed"})

        def start() -> dict[str, Any]:
            game = new_game(body)
            with game.lock:
                events = game.play_opponents()
                games.add(game)
                return game.view(events)

        return JSONResponse(await run_in_threadpool(start), status_code=201)

    def locked(game: WebGame, read: Any) -> Any:
        with game.lock:  # a move in progress (an agent thinking) finishes first
            return read()

    async def show(request: Request) -> JSONResponse:
        game = games.get(request.path_params["game_id"])
        return JSONResponse(await run_in_threadpool(locked, game, game.view))

    async def move(request: Request) -> JSONResponse:
        game = games.get(request.path_params["game_id"])
        body = await _body(request, {"action"})
        if "action" not in body:
            raise BadRequest("the body needs 'action' (an action id from the view's moves)")
        action = _int(body, "action", None, 0, game.rules.tile_set.num_actions - 1)

        def play() -> dict[str, Any]:
            with game.lock:
                if game.over:
                    raise BadRequest("the game is over", 409)
                if game.paused:
                    raise BadRequest("the round is over: POST .../next to deal the next one", 409)
                rnd = game.env.match.round
                if rnd.current != game.seat:
                    raise BadRequest(f"it is seat {rnd.current}'s move, not yours", 409)
                if action not in rnd.legal_actions():
                    raise BadRequest(f"action {action} is not legal; legal actions: {rnd.describe_legal()}", 422)
                events = game.step(game.seat, action)
                return game.view(events + game.play_opponents())

        return JSONResponse(await run_in_threadpool(play))

    async def next_round(request: Request) -> JSONResponse:
        game = games.get(request.path_params["game_id"])

        def deal() -> dict[str, Any]:
            with game.lock:
                if not game.paused:
                    raise BadRequest("no finished round is waiting (the game is over or in play)", 409)
                game.paused = False
                return game.view(game.play_opponents())

        return JSONResponse(await run_in_threadpool(deal))

    async def game_replay(request: Request) -> JSONResponse:
        game = games.get(request.path_params["game_id"])
        return JSONResponse(await run_in_threadpool(locked, game, game.replay))

    async def expand_replay(request: Request) -> JSONResponse:
        body = await _body(request, {"replay"})
        try:
            frames = replay(body.get("replay"))
        except ValueError as e:
            raise BadRequest(str(e), 422) from None
        return JSONResponse(frames)

    async def index(request: Request) -> FileResponse:
        return FileResponse(STATIC / "index.html")

    async def refuse(request: Request, exc: BadRequest) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    routes = [
        Route("/", index),
        Route("/api/options", options),
        Route("/api/games", create, methods=["POST"]),
        Route("/api/games/{game_id}", show),
        Route("/api/games/{game_id}/move", move, methods=["POST"]),
        Route("/api/games/{game_id}/next", next_round, methods=["POST"]),
        Route("/api/games/{game_id}/replay", game_replay),
        Route("/api/replay", expand_replay, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={BadRequest: refuse})


def serve(host: str = "127.0.0.1", port: int = 8000, write: Any = print) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    write(f"block_env web app on http://{host}:{port}/ (Ctrl-C stops it)")
    uvicorn.run(create_app(), host=host, port=port, log_level="warning")
