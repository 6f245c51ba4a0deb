"""The web app's API through Starlette's test client, and the arena's move records."""

from __future__ import annotations

import json
import re
import threading
import time

import numpy as np
import pytest

pytest.importorskip("starlette")
from conftest import first_move, play_first_moves  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from block_env.agents import AGENTS, Agent, make_agent  # noqa: E402
from block_env.apps.replay import replay, replay_round, rules_from_record  # noqa: E402
from block_env.apps.web import ALLOWED_AGENTS, FALLBACK_AGENT, Games, Opponents, create_app  # noqa: E402
from block_env.arena import evaluate  # noqa: E402
from block_env.rules import PRESETS  # noqa: E402


@pytest.fixture
def client():
    return TestClient(create_app(Games(new_games_per_minute=0)))


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership", "house"])
def test_a_whole_round_reveals_what_the_engine_says(client, preset):
    opponents = ["greedy", "random"] if PRESETS[preset].num_players > 2 else ["strategic"]
    response = client.post("/api/games", json={"preset": preset, "opponents": opponents, "seat": 1, "seed": 5})
    assert response.status_code == 201
    view = response.json()
    assert view["agents"][1] == "you" and view["to_play"] == 1  # the opponents moved first where they had to
    view = play_first_moves(client, view)
    record = client.get(f"/api/games/{view['id']}/replay").json()
    rules = rules_from_record(record["rules"])
    final, _ = replay_round(rules, record["rounds"][-1])
    result = view["result"]
    assert result["hand_pips"] == list(final.result.hand_pips)
    assert result["award"] == final.result.award and result["end"] == final.result.end
    assert result["hands"] == [[list(t) for t in rules.tile_set.tiles_of(h)] for h in final.hands]
    assert result["why"]


def test_the_view_shows_only_legal_moves_and_a_pass_only_when_forced(client):
    for seed in range(12):
        view = client.post("/api/games", json={"seed": seed, "opponents": ["random"]}).json()
        while not view["over"]:
            moves = [m["action"] for tile in view["hand"] for m in tile["moves"]]
            assert bool(moves) != view["can_pass"]  # a pass exactly when nothing fits
            for tile in view["hand"]:
                assert len(tile["moves"]) <= 2
            view = client.post(f"/api/games/{view['id']}/move", json={"action": first_move(view)}).json()


def test_a_match_pauses_after_each_round_until_next(client):
    view = client.post("/api/games", json={"episode": "match", "seed": 2, "opponents": ["greedy"]}).json()
    rounds_seen = 0
    while not view["over"]:
        if view["paused"]:
            rounds_seen += 1
            assert view["result"] is not None
            assert client.post(f"/api/games/{view['id']}/move", json={"action": 0}).status_code == 409
            view = client.post(f"/api/games/{view['id']}/next").json()
            assert view["result"] is None
            continue
        view = client.post(f"/api/games/{view['id']}/move", json={"action": first_move(view)}).json()
    assert max(view["scores"]) >= view["target"] and rounds_seen >= 1
    assert view["match_winner"] in (0, 1, None)
    assert client.post(f"/api/games/{view['id']}/next").status_code == 409


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"preset": "nope"}, 400, "unknown preset 'nope'"),
        ({"episode": "forever"}, 400, "'episode' must be one of"),
        ({"opponents": "greedy"}, 400, "'opponents' must be a list"),
        ({"opponents": ["human"]}, 400, "cannot be an opponent"),
        ({"opponents": ["no_such_agent"]}, 400, "no_such_agent"),
        ({"seat": 2}, 400, "'seat' must be an integer 0..1"),
        ({"seat": True}, 400, "'seat' must be an integer"),
        ({"seed": -1}, 400, "'seed' must be an integer"),
        ({"colour": "red"}, 400, "unknown field(s) ['colour']"),
    ],
)
def test_bad_new_game_requests_are_refused_with_a_message(client, body, status, message):
    response = client.post("/api/games", json=body)
    assert response.status_code == status
    assert message in response.json()["error"]


def test_bad_moves_are_refused_and_change_nothing(client):
    view = client.post("/api/games", json={"seed": 1, "opponents": ["greedy"]}).json()
    game = f"/api/games/{view['id']}"
    legal = {m["action"] for tile in view["hand"] for m in tile["moves"]} or {view["pass_action"]}
    illegal = next(a for a in range(view["pass_action"] + 1) if a not in legal)
    cases = [
        ({"action": illegal}, 422, "is not legal for seat 0; legal actions:"),
        ({"action": 999}, 400, "'action' must be an integer 0..56"),
        ({"action": "3"}, 400, "'action' must be an integer"),
        ({"action": 1.0}, 400, "'action' must be an integer"),
        ({}, 400, "needs 'action'"),
        ({"action": 1, "extra": 2}, 400, "unknown field(s) ['extra']"),
    ]
    for body, status, message in cases:
        response = client.post(f"{game}/move", json=body)
        assert response.status_code == status and message in response.json()["error"], (body, response.json())
        assert client.get(game).json() == view | {"events": []}
    for raw in (b"not json", b"[1, 2]"):
        response = client.post(f"{game}/move", content=raw, headers={"Content-Type": "application/json"})
        assert response.status_code == 400 and "JSON" in response.json()["error"]
    assert client.get("/api/games/0123456789abcdef").status_code == 404
    assert client.post("/api/games/unknown/move", json={"action": 0}).status_code == 404


def test_many_games_at_once_do_not_mix(client):
    views = [client.post("/api/games", json={"seed": s, "opponents": ["greedy"]}).json() for s in range(4)]
    while not all(view["over"] for view in views):  # interleave moves across the games
        for i, view in enumerate(views):
            if not view["over"]:
                views[i] = client.post(f"/api/games/{view['id']}/move", json={"action": first_move(view)}).json()
    for view in views:
        record = client.get(f"/api/games/{view['id']}/replay").json()
        frames = replay(record)["rounds"][-1]
        assert frames[-1]["line"] == view["line"]  # each game's own moves, replayed, give its own line
    assert len({v["id"] for v in views}) == 4


def test_replays_are_checked_move_by_move(client):
    view = play_first_moves(client, client.post("/api/games", json={"seed": 9, "opponents": ["greedy"]}).json())
    record = client.get(f"/api/games/{view['id']}/replay").json()
    expanded = client.post("/api/replay", json={"replay": record}).json()
    assert len(expanded["rounds"][0]) == len(record["rounds"][0]["moves"]) + 1
    assert expanded["rounds"][0][-1]["result"]["award"] == record["rounds"][0]["result"]["award"]
    tampered = {**record, "rounds": [{**record["rounds"][0], "moves": [[record["rounds"][0]["moves"][0][0], 999]]}]}
    response = client.post("/api/replay", json={"replay": tampered})
    assert response.status_code == 422 and "round 1: move 0" in response.json()["error"]
    response = client.post("/api/replay", json={"replay": {**record, "rules": {"max_pips": 6}}})
    assert response.status_code == 422 and "unknown Rules field(s): max_pips" in response.json()["error"]
    # Its frames grow as the square of its moves: a replay of too many is refused before any is played.
    flood = {**record, "rounds": record["rounds"] * (5_000 // len(record["rounds"][0]["moves"]) + 1)}
    response = client.post("/api/replay", json={"replay": flood})
    assert response.status_code == 422 and "a replay holds at most 5,000 moves in all" in response.json()["error"]


def test_a_game_in_play_replays_only_its_finished_rounds(client):
    """A round record holds every seat's hand, so the round in play stays out of the game's
    replay until it ends: no client can read its opponents' tiles there."""

    def replayed(view):
        return client.get(f"/api/games/{view['id']}/replay").json()["rounds"]

    view = client.post("/api/games", json={"seed": 3, "opponents": ["greedy"], "episode": "match"}).json()
    view = play_first_moves(client, view, 1)
    assert view["line"] and replayed(view) == []
    while not view["paused"]:
        view = play_first_moves(client, view, 1)
    (first,) = replayed(view)  # the round just ended, which replays to the result shown
    final, _ = replay_round(PRESETS["standard"], first)
    assert view["result"]["hands"] == [[list(t) for t in final.rules.tile_set.tiles_of(h)] for h in final.hands]
    view = play_first_moves(client, client.post(f"/api/games/{view['id']}/next").json(), 1)
    assert view["round"] == 2 and view["line"] and replayed(view) == [first]
    over = play_first_moves(client, view)
    assert len(replayed(over)) == over["round"] >= 2  # over: every round, the last one too


def test_a_replay_without_hands_or_with_text_no_answer_can_hold_gets_a_4xx(client):
    record = {"rules": {}, "agents": ["a", "b"], "rounds": [{"lead": 0, "moves": []}]}
    response = client.post("/api/replay", json={"replay": record})
    assert response.status_code == 422 and "a round record needs 'hands'" in response.json()["error"]
    for body, where in (
        (b'{"replay": {"rules": {"\\ud800x": 1}}}', "a key of the body's 'replay' -> 'rules'"),
        (b'{"replay": {"agents": ["b", "\\ud800"]}}', "the body's 'replay' -> 'agents' -> [1]"),
    ):
        response = client.post("/api/replay", content=body, headers={"Content-Type": "application/json"})
        assert (
            response.status_code == 400
            and response.json()["error"] == f"{where} holds text that is not valid Unicode (a lone surrogate escape)"
        )


def test_the_page_and_its_assets_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and 'id="new-game"' in page.text
    assert client.get("/static/app.js").status_code == 200
    assert "standard" in client.get("/api/options").json()["presets"]


def test_arena_records_replay_to_the_same_results():
    report = evaluate(["greedy", "random"], "standard_3p", episode="match", deals=2, seed=4, record=True)
    for record in report.records:
        frames = replay(record["replay"])
        finals = [rounds[-1]["result"] for rounds in frames["rounds"]]
        assert [{k: f[k] for k in r} for f, r in zip(finals, record["rounds"])] == record["rounds"]
        assert record["replay"]["agents"] == [["greedy", "random"][a] for a in record["seating"]]


def test_serve_prints_its_address_and_answers(tmp_path):
    import socket
    import subprocess
    import sys
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli = [sys.executable, "-m", "block_env.cli", "serve", "--data", str(tmp_path), "--port", str(port)]
    proc = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout.readline().strip().startswith(f"block_env web app on http://127.0.0.1:{port}/")
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/options", timeout=2) as response:
                    assert "standard" in json.load(response)["presets"]
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the server never answered")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run([*cli[:-1], "70000"], capture_output=True, text=True)
    assert bad.returncode == 2 and "a port is an integer 1..65535, got 70000" in bad.stderr
    missing = subprocess.run(
        [*cli, "--agents-dir", str(tmp_path / "nope")], capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 2 and f"--agents-dir {tmp_path / 'nope'}: not a folder" in missing.stderr
    store = subprocess.run([*cli, "--store", "mysql://x/y"], capture_output=True, text=True, timeout=120)
    assert store.returncode == 2 and "the store is SQLite or PostgreSQL, got 'mysql'" in store.stderr


# -- opponents that fail: the person's move stands, the answer says so, the game goes on ---------


class Faulty(Agent):
    """Raises on its first ``failures`` moves (every move with None), then plays greedily."""

    name = "faulty"
    failures: int | None = None

    def __init__(self, rules, seed=None, observation="vector"):
        super().__init__(rules, seed, observation)
        self.greedy = make_agent("greedy", rules)
        self.calls = 0

    def act(self, obs):
        self.calls += 1
        if self.failures is None or self.calls <= self.failures:
            raise RuntimeError("the opponent's own bug")
        return self.greedy.act(obs)


class Sleepy(Agent):
    """Thinks forever, in Python (so that a stop can arrive), and says whether it was stopped."""

    name = "sleepy"
    exited: list[bool] = []

    def act(self, obs):
        try:
            while True:
                time.sleep(0.01)
        finally:
            Sleepy.exited.append(True)


class Cheat(Agent):
    """Always passes, legal or not."""

    name = "cheat"

    def act(self, obs):
        return len(obs["action_mask"]) - 1


def _client_with(monkeypatch, cls, **kwargs):
    monkeypatch.setitem(AGENTS, cls.name, cls)
    opponents = Opponents(allowed=[*ALLOWED_AGENTS, cls.name])
    return TestClient(create_app(Games(new_games_per_minute=0), opponents=opponents, **kwargs))


def tile_of(view, action):
    """The tile in the person's hand that ``action`` places (the opening: as the hand shows it)."""
    return next(tile["tile"] for tile in view["hand"] for move in tile["moves"] if move["action"] == action)


def _game_where_the_person_moves_first(client, opponent):
    for seed in range(50):  # a deal where seat 0 leads: the opponent moves after the person
        view = client.post("/api/games", json={"seed": seed, "opponents": [opponent]}).json()
        if not view["events"] and view["stalled"] is None:
            return view
    raise AssertionError("no deal had seat 0 lead")


def test_an_opponent_that_raises_leaves_the_move_standing_and_the_game_playable(monkeypatch):
    client = _client_with(monkeypatch, Faulty)
    view = _game_where_the_person_moves_first(client, "faulty")
    action = first_move(view)
    response = client.post(f"/api/games/{view['id']}/move", json={"action": action})
    assert response.status_code == 200
    stalled = response.json()
    assert stalled["events"][0]["seat"] == 0 and stalled["events"][0]["action"] == action  # the move stands
    assert stalled["stalled"] == {
        "seat": 1,
        "agent": "faulty",
        "error": "faulty failed: RuntimeError: the opponent's own bug",
    }
    assert stalled["to_play"] == 1
    assert client.get(f"/api/games/{view['id']}").json()["line"] == [tile_of(view, action)]  # read back: kept
    refused = client.post(f"/api/games/{view['id']}/move", json={"action": first_move(stalled)})
    assert refused.status_code == 409 and "POST .../resume" in refused.json()["error"]
    again = client.post(f"/api/games/{view['id']}/resume", json={})  # the same opponent tries again, and fails again
    assert again.status_code == 200 and again.json()["stalled"]["seat"] == 1
    replaced = client.post(f"/api/games/{view['id']}/resume", json={"fallback": True}).json()
    assert replaced["stalled"] is None and replaced["agents"] == ["you", FALLBACK_AGENT]
    assert replaced["replaced"] == [{"seat": 1, "was": "faulty", "now": FALLBACK_AGENT}]
    assert replaced["events"][0]["seat"] == 1 and replaced["to_play"] in (0, None)
    assert play_first_moves(client, replaced)["result"]["why"]
    assert client.post(f"/api/games/{view['id']}/resume", json={}).status_code == 409  # nothing is waiting


def test_a_retry_lets_an_opponent_that_recovers_play_on(monkeypatch):
    monkeypatch.setattr(Faulty, "failures", 1)
    client = _client_with(monkeypatch, Faulty)
    view = client.post("/api/games", json={"seed": 3, "opponents": ["faulty"], "seat": 1}).json()
    if view["stalled"] is None:  # the person leads: the opponent's first move follows theirs
        view = client.post(f"/api/games/{view['id']}/move", json={"action": first_move(view)}).json()
    assert view["stalled"]["agent"] == "faulty"
    resumed = client.post(f"/api/games/{view['id']}/resume", json={"fallback": False}).json()
    assert resumed["stalled"] is None and resumed["agents"][0] == "faulty" and resumed["replaced"] == []
    assert play_first_moves(client, resumed)["over"]


def test_a_move_past_the_time_budget_is_stopped_and_the_game_goes_on(monkeypatch):
    client = _client_with(monkeypatch, Sleepy, move_seconds=0.2)
    Sleepy.exited.clear()
    view = client.post("/api/games", json={"seed": 1, "opponents": ["sleepy"], "seat": 1}).json()
    if view["stalled"] is None:  # seat 1 leads: the person moves first
        view = client.post(f"/api/games/{view['id']}/move", json={"action": first_move(view)}).json()
    assert view["stalled"] == {
        "seat": 0,
        "agent": "sleepy",
        "error": "sleepy's move: it took more than 0.2 s and was stopped",
    }
    assert Sleepy.exited == [True]  # its thread left the move: stopped, not abandoned
    view = client.post(f"/api/games/{view['id']}/resume", json={"fallback": True}).json()
    assert play_first_moves(client, view)["over"]


def test_a_move_is_not_stopped_inside_the_compiler_but_once_it_leaves():
    """A move past its time while its thread holds numba's compiler lock (a kernel's first
    compile) runs on to the end of the compile, then is stopped: an exception inside the
    compiler would leave the kernel half built."""
    from numba.core import event

    from block_env.apps.budget import MoveBudget, OverBudget

    budget = MoveBudget(0.05)
    steps = []

    def work():
        event.start_event("numba:compiler_lock")  # what numba's compiler lock announces
        try:
            for _ in range(40):  # 0.2 s of Python instructions in the "compiler": four budgets
                time.sleep(0.005)
            steps.append("compiled")
        finally:
            event.end_event("numba:compiler_lock")
        while True:  # stopped here
            time.sleep(0.005)
            steps.append("after")

    with pytest.raises(OverBudget):
        budget.run(work)
    budget.close()
    assert steps[0] == "compiled" and len(steps) < 40


class Unbuildable(Agent):
    """Fails while it is built, as a broken agent folder would."""

    name = "unbuildable"

    def __init__(self, rules, seed=None, observation="vector"):
        raise KeyError("a key its folder lacks")

    def act(self, obs):
        raise AssertionError("never built")


def test_a_game_whose_opponent_cannot_be_built_leaves_no_game_behind(monkeypatch):
    monkeypatch.setitem(AGENTS, Unbuildable.name, Unbuildable)
    opponents = Opponents(allowed=[*ALLOWED_AGENTS, Unbuildable.name])
    client = TestClient(
        create_app(Games(max_active=1, new_games_per_minute=0), opponents=opponents), raise_server_exceptions=False
    )
    assert client.post("/api/games", json={"seed": 1, "opponents": ["unbuildable"]}).status_code == 500
    assert client.post("/api/games", json={"seed": 1, "opponents": ["greedy"]}).status_code == 201  # no slot held


def test_a_game_refused_for_its_opponent_does_not_spend_the_addresss_new_game_allowance(monkeypatch):
    """One new game a minute: a request whose opponent the server refuses while building it
    (400) gives the allowance back, so the next request is a game, not a 429; a build that
    fails on the server's side (500) keeps its count."""
    monkeypatch.setitem(AGENTS, Unbuildable.name, Unbuildable)
    opponents = Opponents(allowed=[*ALLOWED_AGENTS, Unbuildable.name])
    client = TestClient(create_app(Games(new_games_per_minute=1), opponents=opponents), raise_server_exceptions=False)
    refused = client.post("/api/games", json={"seed": 1, "opponents": ["search:playout=bogus"]})
    assert refused.status_code == 400 and "search playout must be one of" in refused.json()["error"]
    assert client.post("/api/games", json={"seed": 1, "opponents": ["greedy"]}).status_code == 201
    assert client.post("/api/games", json={"seed": 2, "opponents": ["greedy"]}).status_code == 429

    client = TestClient(create_app(Games(new_games_per_minute=1), opponents=opponents), raise_server_exceptions=False)
    assert client.post("/api/games", json={"seed": 1, "opponents": ["unbuildable"]}).status_code == 500
    assert client.post("/api/games", json={"seed": 1, "opponents": ["greedy"]}).status_code == 429


def test_an_illegal_move_from_an_opponent_is_refused_and_named(monkeypatch):
    client = _client_with(monkeypatch, Cheat)
    start = _game_where_the_person_moves_first(client, "cheat")
    view = client.post(f"/api/games/{start['id']}/move", json={"action": first_move(start)}).json()
    assert view["stalled"]["error"] == "cheat chose action 56, which is not legal here"
    assert client.get(f"/api/games/{view['id']}").json()["line"] == [tile_of(start, first_move(start))]


def test_a_full_server_refuses_before_any_opponent_is_built(monkeypatch):
    built = []

    class Counted(Faulty):
        name = "counted"

        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setitem(AGENTS, "counted", Counted)
    app = create_app(
        Games(max_active=1, new_games_per_minute=0), opponents=Opponents(allowed=[*ALLOWED_AGENTS, "counted"])
    )
    client = TestClient(app)
    assert client.post("/api/games", json={"seed": 1, "opponents": ["greedy"]}).status_code == 201
    response = client.post("/api/games", json={"seed": 2, "opponents": ["counted"]})
    assert response.status_code == 503 and built == []


def test_opponents_are_seeded_by_seat_and_the_same_seed_plays_the_same_game(client):
    body = {"preset": "standard_3p", "seed": 11, "opponents": ["search:worlds=8", "random"], "seat": 2}
    views = [client.post("/api/games", json=body).json() for _ in range(2)]
    views = [play_first_moves(client, v) for v in views]
    records = [client.get(f"/api/games/{v['id']}/replay").json()["rounds"] for v in views]
    assert records[0] == records[1] and len(records[0][0]["moves"]) > 2


def test_the_seed_is_told_only_once_the_game_is_over(client):
    """The deal and every opponent's move follow from the seed: while anything is hidden the
    view does not carry it, even one the server drew."""
    view = client.post("/api/games", json={"opponents": ["greedy"]}).json()
    assert view["seed"] is None
    while not view["over"]:
        assert view["seed"] is None
        path = "next" if view["paused"] else "move"
        body = {} if view["paused"] else {"action": first_move(view)}
        view = client.post(f"/api/games/{view['id']}/{path}", json=body).json()
    assert isinstance(view["seed"], int)


def test_the_terminal_seeds_each_opponent_by_its_seat(monkeypatch):
    from block_env.apps import terminal
    from block_env.seeding import seat_seed

    seeds = {}

    def spy(spec, rules, seed=None):
        agent = make_agent(spec, rules, seed=seed)
        seeds[len(seeds)] = seed
        return agent

    monkeypatch.setattr(terminal, "make_agent", spy)

    def leave(prompt):
        raise EOFError  # the person leaves at the first prompt: the opponents are seated by then

    with pytest.raises(EOFError):
        terminal.play_in_terminal(PRESETS["standard_3p"], ["random"], seed=5, read=leave, write=lambda _: None)
    assert list(seeds.values()) == [seat_seed(5, 1), seat_seed(5, 2)]


def test_terminal_play_asks_again_for_a_digit_python_would_not_read_and_names_the_winner():
    """A "²" (a digit to str.isdigit, not to int) is asked again, not the end of the game; the
    match's end says who won and whether that is you."""
    from block_env.apps import terminal

    answers, lines = iter(["²", "1"]), []

    def read(prompt):
        return next(answers, "1")

    rules = PRESETS["standard"].replace(target=20)
    assert (
        terminal.play_in_terminal(rules, ["random"], seat=1, episode="match", seed=3, read=read, write=lines.append)
        == 0
    )
    assert any("'²' is not a move here" in line for line in lines)
    assert re.match(r"Match over: player_[01] wins \(you (win|lose)\), scores ", lines[-1])
    assert ("player_1 wins (you win)" in lines[-1]) or ("player_0 wins (you lose)" in lines[-1])


def test_terminal_play_refuses_more_opponents_than_the_other_seats():
    """A spec that would never be seated is an error naming them all, not silently dropped."""
    from block_env.apps import terminal

    with pytest.raises(ValueError, match=r"at most \(1 for 2 players\).*got 2: greedy strategic"):
        terminal.play_in_terminal(PRESETS["standard"], ["greedy", "strategic"], read=input, write=lambda _: None)


def test_two_requests_racing_for_one_move_play_it_once():
    """The same move sent twice at once: one request plays it, the other is refused (the seat
    has moved, or the move no longer fits), and the game holds the move once."""
    from concurrent.futures import ThreadPoolExecutor

    with TestClient(create_app(Games(new_games_per_minute=0))) as racing:
        view = racing.post("/api/games", json={"opponents": ["greedy"], "seat": 0, "seed": 11}).json()
        while view["to_play"] != view["seat"] or not any(t["moves"] for t in view["hand"]):
            view = racing.post(f"/api/games/{view['id']}/move", json={"action": first_move(view)}).json()
        action = first_move(view)
        placed_before = len(view["line"])

        def send(_):
            return racing.post(f"/api/games/{view['id']}/move", json={"action": action})

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(send, range(2)))
    codes = sorted(a.status_code for a in answers)
    assert codes[0] == 200 and codes[1] in (409, 422), codes
    after = next(a for a in answers if a.status_code == 200).json()
    record = [e for e in after["events"] if e.get("seat") == view["seat"] and e.get("action") == action]
    assert len(record) == 1 and len(after["line"]) > placed_before


class Slow(Agent):
    """A greedy-free opponent that takes half a second over its move (its first legal one)."""

    name = "slow"

    def act(self, obs):
        time.sleep(0.5)
        return int(np.flatnonzero(obs["action_mask"])[0])


def test_a_second_move_sent_while_an_opponent_thinks_is_refused_not_played_on_an_unseen_position(monkeypatch):
    """A double submit of two different moves: the first is played with the opponent's reply;
    the second, sent while the opponent thinks, is refused at once (409) instead of waiting and
    then being played on a position its sender never saw."""
    from concurrent.futures import ThreadPoolExecutor

    client = _client_with(monkeypatch, Slow)
    view = _game_where_the_person_moves_first(client, "slow")
    first, second = [t["moves"][0]["action"] for t in view["hand"] if t["moves"]][:2]  # two tiles
    second_tile = tile_of(view, second)
    url = f"/api/games/{view['id']}"
    with ThreadPoolExecutor(3) as pool:
        answer = pool.submit(client.post, f"{url}/move", json={"action": first})
        time.sleep(0.2)  # the opponent is thinking now
        late = pool.submit(client.post, f"{url}/move", json={"action": second})
        assert late.result().status_code == 409 and "playing this game now" in late.result().json()["error"]
        assert not answer.done()  # refused without waiting for the first
        assert answer.result().status_code == 200
    assert second_tile in [t["tile"] for t in client.get(url).json()["hand"]]  # never played


def test_a_move_sent_while_the_coach_works_waits_for_it_and_is_played(monkeypatch):
    """The coach reads the game, it does not play it: a move sent meanwhile waits and plays."""
    from concurrent.futures import ThreadPoolExecutor

    from block_env.apps import web

    def slow_hint(env, preset, seat):
        time.sleep(0.5)
        return {"moves": []}

    monkeypatch.setattr(web.coach, "hint", slow_hint)
    client = _client_with(monkeypatch, Slow)
    view = _game_where_the_person_moves_first(client, "greedy")
    url = f"/api/games/{view['id']}"
    with ThreadPoolExecutor(2) as pool:
        hint = pool.submit(client.get, f"{url}/hint")
        time.sleep(0.2)  # the coach is working now
        played = client.post(f"{url}/move", json={"action": first_move(view)})
        assert hint.result().status_code == 200
    assert played.status_code == 200 and played.json()["events"]


def test_serves_apps_compile_the_search_kernels_in_the_background_at_start(tmp_path, monkeypatch):
    from block_env.apps import web
    from block_env.apps.store import sqlite_url

    calls, started, release = [], threading.Event(), threading.Event()

    def warm(search=False):
        calls.append(search)
        if search:  # a slow compile: the app must answer while it runs
            started.set()
            assert release.wait(30)

    monkeypatch.setattr(web, "warm_compiled_code", warm)
    app = web.ServeSettings(store=sqlite_url(tmp_path)).app()
    try:
        with TestClient(app) as client:
            assert client.get("/api/options").status_code == 200
            assert started.wait(30) and calls == [False, True] and app.state.warming.is_alive()
            release.set()
            app.state.warming.join(30)
            assert not app.state.warming.is_alive()
    finally:
        release.set()
    plain = create_app()
    with TestClient(plain):  # a plain app warms only the quick part, in its build
        assert not hasattr(plain.state, "warming")
    assert calls == [False, True, False]


def test_a_failed_warm_up_at_start_is_logged_and_the_app_still_serves(monkeypatch, caplog):
    from block_env.apps import web

    def warm(search=False):
        if search:
            raise RuntimeError("no compiler here")

    monkeypatch.setattr(web, "warm_compiled_code", warm)
    app = create_app(warm_search=True)
    with TestClient(app) as client:
        app.state.warming.join(30)
        assert client.post("/api/games", json={"seed": 1, "opponents": ["greedy"]}).status_code == 201
    assert "compiling the search kernels at start failed" in caplog.text and "no compiler here" in caplog.text
