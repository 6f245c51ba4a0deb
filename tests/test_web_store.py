"""The web app's store: games survive a restart (a SIGKILL too) and are shared by worker
processes; finished games are listed as replays, newest first; old ones are pruned. The same
tests run on SQLite and, where Debian's postgresql is installed, on a PostgreSQL server they start."""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("sqlalchemy")
from conftest import first_move, play_first_moves  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from block_env.apps import web  # noqa: E402
from block_env.apps.store import Conflict, Store, sqlite_url  # noqa: E402
from block_env.apps.web import Games, create_app  # noqa: E402


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of its own (Debian's binaries), for this module's tests: its URL."""
    initdb = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not initdb:
        pytest.skip("Debian's postgresql is not installed (scripts/setup-postgres.sh installs it)")
    bin_dir = Path(initdb[-1]).parent
    folder = Path(tempfile.mkdtemp(prefix="block_env_pg_"))
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []  # it refuses to run as root
    if as_postgres:
        shutil.chown(folder, "postgres")
    port = free_port()
    data = folder / "data"
    subprocess.run(
        [*as_postgres, bin_dir / "initdb", "-D", data, "-U", "block", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*as_postgres, bin_dir / "pg_ctl", "-D", data, "-o", options, "-l", folder / "log", "-w", "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://block@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_postgres, bin_dir / "pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return sqlite_url(tmp_path)
    url = request.getfixturevalue("postgres")
    store = Store(url)  # a clean database for each test
    with store.engine.begin() as conn:
        conn.exec_driver_sql("TRUNCATE games, rates")
    store.close()
    return url


def app_on(url, clock=None, **limits):
    store = Store(url) if clock is None else Store(url, clock=clock)
    return TestClient(create_app(Games(store, **{"new_games_per_minute": 0, **limits})))


def test_two_workers_sharing_a_store_play_each_others_games(store_url):
    one, two = app_on(store_url), app_on(store_url)
    view = one.post("/api/games", json={"episode": "match", "seed": 3, "opponents": ["search:worlds=8"]}).json()
    clients = [one, two]
    turn = 0
    while not view["over"]:  # every request to the other worker
        turn += 1
        client = clients[turn % 2]
        assert client.get(f"/api/games/{view['id']}").json() == view | {"events": []}
        view = play_first_moves(client, client.get(f"/api/games/{view['id']}").json(), moves=1)
    # The same seed in a game of its own, on one worker, plays the same: both workers' opponents drew alike.
    alone = play_first_moves(
        one, one.post("/api/games", json={"episode": "match", "seed": 3, "opponents": ["search:worlds=8"]}).json()
    )
    assert alone["scores"] == view["scores"]
    records = [c.get(f"/api/games/{v['id']}/replay").json()["rounds"] for c, v in ((two, view), (one, alone))]
    assert records[0] == records[1]


def test_a_save_from_a_stale_read_is_refused(store_url):
    store = Store(store_url)
    store.open("g", "a", {"x": 1}, {"moves": []}, max_active=5, per_minute=0)
    assert store.save("g", 0, {"moves": [1]}) == 1
    with pytest.raises(Conflict):
        store.save("g", 0, {"moves": [2]})
    assert store.load("g").state == {"moves": [1]}
    # An id no game can have (a NUL, which PostgreSQL refuses in text) is simply not there.
    assert store.load("g\x00") is None and store.replay("g\x00") is None


def test_finished_games_are_listed_newest_first_with_their_replays(store_url, monkeypatch):
    monkeypatch.setattr(web, "REPLAYS_PER_PAGE", 2)
    clock = Clock()
    client = app_on(store_url, clock)
    finished = []
    for seed in range(5):
        clock.now += 10
        finished.append(
            play_first_moves(client, client.post("/api/games", json={"seed": seed, "opponents": ["greedy"]}).json())
        )
    in_play = client.post("/api/games", json={"seed": 9, "opponents": ["greedy"]}).json()
    pages = [client.get(f"/api/replays?page={p}").json() for p in (1, 2, 3)]
    assert [p["total"] for p in pages] == [5, 5, 5] and pages[0]["pages"] == 3
    listed = [g["id"] for p in pages for g in p["games"]]
    assert listed == [v["id"] for v in reversed(finished)]  # newest first, in play not listed
    newest = pages[0]["games"][0]
    assert newest["scores"] == finished[-1]["scores"] and newest["agents"] == ["you", "greedy"]
    replay = client.get(newest["replay"]).json()
    assert replay == client.get(f"/api/games/{newest['id']}/replay").json()
    assert client.post("/api/replay", json={"replay": replay}).status_code == 200
    assert client.get(f"/api/replays/{in_play['id']}").status_code == 404
    page = client.get("/replays?page=2")
    assert page.status_code == 200 and f'href="/replays/{listed[2]}"' in page.text and "page 2 of 3" in page.text
    shown = client.get(f"/replays/{newest['id']}").text
    first = replay["rounds"][0]
    assert "Round 1" in shown and shown.count("<li>") == len(first["hands"]) + len(first["moves"])
    assert client.get(f"/replays/{in_play['id']}").status_code == 404
    assert client.get("/api/replays?page=0").status_code == 400
    assert client.get("/api/replays?page=%C2%B2").status_code == 400  # a digit to str.isdigit, not to int


def test_old_finished_games_are_pruned_by_age_and_by_count(store_url):
    clock = Clock()
    games = Games(Store(store_url, clock=clock), new_games_per_minute=0, keep_seconds=100, keep_finished=2)
    client = TestClient(create_app(games))
    ids = []
    for seed in range(4):
        clock.now += 30
        ids.append(
            play_first_moves(client, client.post("/api/games", json={"seed": seed, "opponents": ["random"]}).json())[
                "id"
            ]
        )
    kept_in_play = client.post("/api/games", json={"seed": 7, "opponents": ["random"]}).json()["id"]
    assert games.prune() == 2  # the two oldest of four finished games: beyond the newest two
    assert [g["id"] for g in client.get("/api/replays").json()["games"]] == ids[:1:-1]
    clock.now += 75  # the third game finished 105 s ago, the fourth 75 s ago
    assert games.prune() == 1
    assert [g["id"] for g in client.get("/api/replays").json()["games"]] == [ids[3]]
    assert client.get(f"/api/games/{kept_in_play}").status_code == 200  # a game in play is not a replay
    clock.now += web.ABANDONED_SECONDS
    games.prune()
    assert client.get(f"/api/games/{kept_in_play}").status_code == 404  # abandoned for a week


def test_pruning_by_count_keeps_exactly_the_newest_when_games_finish_at_the_same_moment(store_url):
    clock = Clock()
    games = Games(Store(store_url, clock=clock), new_games_per_minute=0, keep_finished=2)
    client = TestClient(create_app(games))
    ids = [
        play_first_moves(client, client.post("/api/games", json={"seed": s, "opponents": ["random"]}).json())["id"]
        for s in range(4)
    ]
    assert games.prune() == 2  # every game finished at the same moment: ties go by id
    kept = {g["id"] for g in client.get("/api/replays").json()["games"]}
    assert kept == set(sorted(ids, reverse=True)[:2])


# -- the real server: SIGKILL and restart, several workers ----------------------------------------


def call(port, method, path, body=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def start_server(args, port):
    cli = [sys.executable, "-m", "block_env.cli", "serve", "--port", str(port), *args]
    proc = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if call(port, "GET", "/api/options")[0] == 200:
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the server never answered: {proc.stdout.read() if proc.stdout else ''}")


def test_a_game_survives_a_sigkill_between_moves(tmp_path):
    port = free_port()
    args = ["--data", str(tmp_path)]
    server = start_server(args, port)
    try:
        status, view = call(port, "POST", "/api/games", {"episode": "match", "seed": 8, "opponents": ["strategic"]})
        assert status == 201
        for _ in range(3):
            status, view = call(port, "POST", f"/api/games/{view['id']}/move", {"action": first_move(view)})
            assert status == 200
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # no shutdown of any kind
        server.wait(timeout=10)
    server = start_server(args, port)
    try:
        status, again = call(port, "GET", f"/api/games/{view['id']}")
        assert status == 200 and again == view | {"events": []}  # the same position, the same opponents and seed
        while not again["over"]:
            path = "next" if again["paused"] else "move"
            status, again = call(
                port,
                "POST",
                f"/api/games/{view['id']}/{path}",
                {} if again["paused"] else {"action": first_move(again)},
            )
            assert status == 200
        status, listing = call(port, "GET", "/api/replays")
        assert listing["games"][0]["id"] == view["id"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_serve_with_two_workers_answers_every_request_of_a_game_from_either(tmp_path):
    port = free_port()
    server = start_server(["--data", str(tmp_path), "--workers", "2"], port)
    try:
        for seed in range(3):  # a new connection for every request: either worker may take it
            status, view = call(port, "POST", "/api/games", {"seed": seed, "opponents": ["greedy"]})
            assert status == 201
            while not view["over"]:
                status, view = call(port, "POST", f"/api/games/{view['id']}/move", {"action": first_move(view)})
                assert status == 200
                assert call(port, "GET", f"/api/games/{view['id']}") == (200, view | {"events": []})
        assert call(port, "GET", "/api/replays")[1]["total"] == 3
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_serve_names_a_database_it_cannot_open_and_a_move_budget_it_cannot_keep(tmp_path, capsys):
    """A database URL that cannot be opened is one line naming it (its password hidden), not
    SQLAlchemy's traceback; so is a move budget of no finite length."""
    from block_env.apps.budget import MoveBudget
    from block_env.cli import main

    missing = tmp_path / "no such folder" / "games.db"
    with pytest.raises(ValueError, match="the store cannot open its database .*no such folder.*unable to open"):
        Store(f"sqlite:///{missing}")
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--store", f"sqlite:///{missing}"])
    assert exit_.value.code == 2 and "cannot open its database" in capsys.readouterr().err
    for seconds in (float("inf"), float("nan"), 0.0, 86_401.0):
        with pytest.raises(ValueError, match="a move's time budget is a number of seconds"):
            MoveBudget(seconds)
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--move-seconds", "inf"])
    assert exit_.value.code == 2 and "got inf" in capsys.readouterr().err
