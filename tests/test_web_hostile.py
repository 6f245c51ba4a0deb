"""The web app under floods and hostile requests: games are dropped only when idle, bodies
are capped before they are read, bad JSON and unbounded asks get a 4xx, and fuzzed sequences of
calls never get a 5xx nor change a game they were refused on."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("starlette")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from block_env.agents import PRETRAINED_DIR  # noqa: E402
from block_env.apps import web  # noqa: E402
from block_env.apps.store import Store, sqlite_url  # noqa: E402
from block_env.apps.web import Games, create_app  # noqa: E402


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def new_game(client, seed=1):
    return client.post("/api/games", json={"seed": seed, "opponents": ["greedy"]})


def games_on_a_clock(tmp_path, clock, **limits):
    return Games(Store(sqlite_url(tmp_path), clock=clock), **limits)


def play_out(client, view):
    while not view["over"]:
        moves = [m["action"] for tile in view["hand"] for m in tile["moves"]]
        action = moves[0] if moves else view["pass_action"]
        view = client.post(f"/api/games/{view['id']}/move", json={"action": action}).json()
    return view


def test_a_full_server_counts_only_games_in_active_play(tmp_path):
    clock = Clock()
    client = TestClient(
        create_app(games_on_a_clock(tmp_path, clock, max_active=3, active_seconds=60, new_games_per_minute=0))
    )
    views = [new_game(client, s).json() for s in range(3)]
    refused = new_game(client, 9)
    assert refused.status_code == 503 and "the server is full: 3 games are in active play" in refused.json()["error"]
    play_out(client, views[0])  # a finished game makes room at once
    assert new_game(client, 10).status_code == 201
    assert new_game(client, 11).status_code == 503
    clock.now = 61  # nobody moved in the others for a minute: they no longer count, and stay playable
    assert new_game(client, 12).status_code == 201
    assert client.get(f"/api/games/{views[1]['id']}").json()["line"] == views[1]["line"]
    assert play_out(client, client.get(f"/api/games/{views[1]['id']}").json())["over"]


def test_a_flood_of_new_games_from_one_address_gets_429_while_another_player_plays(tmp_path):
    clock = Clock()
    client = TestClient(create_app(games_on_a_clock(tmp_path, clock, new_games_per_minute=20)))
    mine = new_game(client).json()
    statuses = []
    for seed in range(60):  # the same address, as fast as it can: the minute's burst, then 429
        response = new_game(client, seed)
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert int(response.headers["Retry-After"]) == 3  # 20 a minute: one every 3 s
            assert "at most 20 a minute" in response.json()["error"]
    assert statuses.count(201) == 19 and set(statuses) == {201, 429}
    assert client.get(f"/api/games/{mine['id']}").json()["line"] == mine["line"]
    assert client.post(f"/api/games/{mine['id']}/move", json={"action": 999}).status_code == 400  # still served
    clock.now = 3.0  # one more after the steady interval
    assert new_game(client, 99).status_code == 201
    assert new_game(client, 100).status_code == 429


def test_a_body_over_the_limit_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setattr(web, "MAX_BODY_BYTES", 1000)
    client = TestClient(create_app(Games(new_games_per_minute=0)))
    big = json.dumps({"replay": "x" * 2000})
    response = client.post("/api/replay", content=big, headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and "over 1000 bytes" in response.json()["error"]

    def chunks():  # no Content-Length: the cap counts what arrives
        for _ in range(50):
            yield b" " * 100

    response = client.post("/api/replay", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert new_game(client).status_code == 201  # and the server keeps answering


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        # shallow enough for json.loads, too deep for the check of its text
        (b'{"seed": ' + b"[" * 600 + b"]" * 600 + b"}", "nested too deeply"),
        (b'{"seed": "\xff\xfe"}', "UTF-8"),
        (b"{", "must be JSON"),
        (b'{"opponents": ["\\ud800"]}', "not valid Unicode"),
        (b'{"\\udfff": 1}', "not valid Unicode"),
    ],
)
def test_malformed_json_gets_400(raw, message):
    client = TestClient(create_app(Games(new_games_per_minute=0)))
    response = client.post("/api/games", content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and message in response.json()["error"]
    assert new_game(client).status_code == 201


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"opponents": ["search:worlds=100000000"]}, 422, "at most 1024 worlds"),
        ({"seed": 2**64}, 400, "'seed' must be an integer"),
        ({"seed": 10**400}, 400, "'seed' must be an integer"),
        ({"opponents": ["search:worlds=0"]}, 400, "worlds"),
    ],
)
def test_unbounded_asks_are_refused(body, status, message):
    client = TestClient(create_app(Games(new_games_per_minute=0)))
    response = client.post("/api/games", json=body)
    assert response.status_code == status and message in response.json()["error"], response.json()
    assert new_game(client).status_code == 201


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(["preset", "episode", "opponents", "seat", "seed", "action", "replay", "colour"])
bodies = st.one_of(json_values, st.dictionaries(keys, json_values, max_size=4))
calls = st.lists(
    st.tuples(st.sampled_from(["create", "move", "next", "show", "replay", "expand"]), bodies), min_size=1, max_size=8
)


@settings(max_examples=60, deadline=None)
@given(calls)
def test_fuzzed_calls_never_get_a_5xx_nor_change_a_game_they_were_refused_on(sequence):
    client = TestClient(create_app(Games(new_games_per_minute=0)))
    game = new_game(client).json()["id"]
    for kind, body in sequence:
        path, method = {
            "create": ("/api/games", "post"),
            "move": (f"/api/games/{game}/move", "post"),
            "next": (f"/api/games/{game}/next", "post"),
            "show": (f"/api/games/{game}", "get"),
            "replay": (f"/api/games/{game}/replay", "get"),
            "expand": ("/api/replay", "post"),
        }[kind]
        before = state_of(client, game)
        response = client.post(path, json=body) if method == "post" else client.get(path)
        assert response.status_code < 500, (kind, body, response.text)
        if response.status_code >= 400:
            assert "error" in response.json()
            assert state_of(client, game) == before, (kind, body)


def state_of(client, game):
    """What a player can read of the game: its view (the round in play) and its replay (the
    rounds finished)."""
    return client.get(f"/api/games/{game}").json(), client.get(f"/api/games/{game}/replay").json()


def test_only_the_operators_agent_folders_are_served_and_other_paths_get_one_answer(tmp_path):
    mine = tmp_path / "agents" / "mine"
    shutil.copytree(PRETRAINED_DIR / "standard_vector", mine)
    (tmp_path / "agents" / "notes").mkdir()  # not an agent folder
    outside = tmp_path / "outside"
    shutil.copytree(PRETRAINED_DIR / "standard_vector", outside)  # a real agent folder, not offered
    client = TestClient(create_app(Games(new_games_per_minute=0), agents_dirs=[tmp_path / "agents"]))
    assert f"policy:{mine}" in client.get("/api/options").json()["agents"]
    assert client.post("/api/games", json={"seed": 1, "opponents": [f"policy:{mine}"]}).status_code == 201
    guided = f"search:worlds=8,prior=policy:{mine}"
    assert client.post("/api/games", json={"seed": 1, "opponents": [guided]}).status_code == 201
    answers = set()
    for path in [
        outside,
        tmp_path / "missing",
        "/etc",
        tmp_path / "agents" / "notes",
        tmp_path / "agents",
        f"{mine}/..",
    ]:
        for spec in [f"policy:{path}", f"search:prior=policy:{path}"]:
            response = client.post("/api/games", json={"seed": 1, "opponents": [spec]})
            assert response.status_code == 403
            answers.add(response.json()["error"].replace(repr(spec), "SPEC"))
    assert len(answers) == 1 and "is not offered by this server" in answers.pop()


def test_a_missing_agents_dir_is_refused_at_start(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        create_app(agents_dirs=[tmp_path / "nope"])


@pytest.mark.parametrize(
    "spec, message",
    [
        ("search:worlds=1025", "at most 1024 worlds"),
        (
            "search:belief=prior,prior=pretrained:standard_vector,worlds=257",
            "belief=prior (4 deals a world) plays at most 256",
        ),
        ("openspiel:ismcts,simulations=100000000", "at most 2000 simulations"),
        ("openspiel:mcts,simulations=2001", "at most 2000 simulations"),
    ],
)
def test_every_option_that_sets_an_agents_work_is_bounded(spec, message):
    client = TestClient(create_app(Games(new_games_per_minute=0)))
    response = client.post("/api/games", json={"seed": 1, "opponents": [spec]})
    assert response.status_code == 422 and message in response.json()["error"], response.json()
