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
from block_env.apps.web import Games, create_app  # noqa: E402


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def new_game(client, seed=1):
    return client.post("/api/games", json={"seed": seed, "opponents": ["greedy"]})


def test_a_full_server_drops_only_idle_games_and_refuses_when_every_game_is_in_play():
    clock = Clock()
    client = TestClient(create_app(Games(limit=3, idle_seconds=60, clock=clock)))
    ids = [new_game(client, s).json()["id"] for s in range(3)]
    refused = new_game(client, 9)
    assert refused.status_code == 503 and "the server is full" in refused.json()["error"]
    clock.now = 50
    assert client.get(f"/api/games/{ids[0]}").status_code == 200  # game 0 moved on recently
    clock.now = 70  # games 1 and 2 idle for 70 s, game 0 for 20 s
    fresh = new_game(client, 10)
    assert fresh.status_code == 201
    assert client.get(f"/api/games/{ids[0]}").status_code == 200  # never dropped while in use
    assert client.get(f"/api/games/{ids[1]}").status_code == 404  # the least recently used idle one
    assert client.get(f"/api/games/{ids[2]}").status_code == 200


def test_a_flood_of_new_games_cannot_take_another_players_game():
    clock = Clock()
    client = TestClient(create_app(Games(limit=20, idle_seconds=600, clock=clock)))
    mine = new_game(client).json()
    statuses = []
    for seed in range(60):  # a client creating games as fast as it can
        clock.now += 1
        statuses.append(new_game(client, seed).status_code)
        if seed % 10 == 0:  # the player keeps playing now and then
            assert client.get(f"/api/games/{mine['id']}").status_code == 200
    assert statuses.count(201) == 19 and set(statuses) == {201, 503}
    assert client.get(f"/api/games/{mine['id']}").json()["line"] == mine["line"]


def test_a_body_over_the_limit_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setattr(web, "MAX_BODY_BYTES", 1000)
    client = TestClient(create_app(Games(limit=10)))
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
        (b'{"seed": "\xff\xfe"}', "UTF-8"),
        (b"{", "must be JSON"),
    ],
)
def test_malformed_json_gets_400(raw, message):
    client = TestClient(create_app(Games(limit=10)))
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
    client = TestClient(create_app(Games(limit=10)))
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
    client = TestClient(create_app(Games(limit=10)))
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
        before = client.get(f"/api/games/{game}/replay").json()
        response = client.post(path, json=body) if method == "post" else client.get(path)
        assert response.status_code < 500, (kind, body, response.text)
        if response.status_code >= 400:
            assert "error" in response.json()
            assert client.get(f"/api/games/{game}/replay").json() == before, (kind, body)


def test_a_finished_game_makes_room_sooner_than_one_in_play():
    clock = Clock()
    client = TestClient(create_app(Games(limit=2, idle_seconds=600, finished_seconds=30, clock=clock)))
    in_play = new_game(client, 1).json()
    finished = new_game(client, 2).json()
    while not finished["over"]:  # play the second game to its end
        moves = [m["action"] for tile in finished["hand"] for m in tile["moves"]]
        action = moves[0] if moves else finished["pass_action"]
        finished = client.post(f"/api/games/{finished['id']}/move", json={"action": action}).json()
    clock.now = 40  # both untouched for 40 s: only the finished one may go
    assert new_game(client, 3).status_code == 201
    assert client.get(f"/api/games/{in_play['id']}").status_code == 200
    assert client.get(f"/api/games/{finished['id']}").status_code == 404


def test_only_the_operators_agent_folders_are_served_and_other_paths_get_one_answer(tmp_path):
    mine = tmp_path / "agents" / "mine"
    shutil.copytree(PRETRAINED_DIR / "standard_vector", mine)
    (tmp_path / "agents" / "notes").mkdir()  # not an agent folder
    outside = tmp_path / "outside"
    shutil.copytree(PRETRAINED_DIR / "standard_vector", outside)  # a real agent folder, not offered
    client = TestClient(create_app(Games(limit=10), agents_dirs=[tmp_path / "agents"]))
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
    client = TestClient(create_app(Games(limit=10)))
    response = client.post("/api/games", json={"seed": 1, "opponents": [spec]})
    assert response.status_code == 422 and message in response.json()["error"], response.json()
