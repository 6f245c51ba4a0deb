"""The coach: search's and the network's view of a seat's legal moves, as a hint and as a review,
through its module and the web app's endpoints."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from block_env.aec import raw_env
from block_env.agents import make_agent
from block_env.apps import coach
from block_env.apps.replay import replay_round
from block_env.engine import Round
from block_env.episodes import play_moves, step

pytest.importorskip("torch")  # the shipped networks


def table(preset, seed, opponent="greedy"):
    env = raw_env(preset, reward="points")
    env.reset(seed=seed)
    n = env.rules.num_players
    agents = [None] + [make_agent(opponent, env.rules, seed=seed + s) for s in range(1, n)]
    list(play_moves(env, agents))
    return env, agents


@pytest.mark.parametrize("preset", ["standard", "partnership", "house"])
def test_a_hint_covers_exactly_the_legal_moves(preset):
    env, _ = table(preset, 3)
    advice = coach.hint(env, preset, 0)
    (position,) = advice["positions"]
    legal = env.legal_actions()
    assert [m["action"] for m in position["moves"]] == legal
    assert position["best"] == max(position["moves"], key=lambda m: m["points"])["action"]
    for m in position["moves"]:
        assert 0.0 <= m["win"] <= 1.0 and m["error"] >= 0
        assert m["text"] == env.rules.tile_set.describe_action(m["action"])
    shares = [m["network"] for m in position["moves"]]
    if coach.network_for(preset) is None:
        assert advice["network"] is None and shares == [None] * len(legal)
    else:
        assert sum(shares) == pytest.approx(1.0, abs=0.01)
        assert position["network_best"] == legal[int(np.argmax(shares))]


def test_a_certain_domino_is_worth_the_others_pips_in_every_deal():
    """house_4p_full deals all 28 tiles to four players, so a move that goes out scores the same
    in every sampled deal: the pips of every other hand, all the tiles unseen. Find such a
    decision and check the coach."""
    for seed in range(200):
        env, agents = table("house_4p_full", seed, "random")
        while not env.episode_over:
            legal = env.legal_actions()
            view = env.public_view("player_0")
            if len(view.hand_tiles) == 1 and len(legal) == 2:
                (position,) = coach.hint(env, "house_4p_full", 0)["positions"]
                for move in position["moves"]:
                    after = copy.deepcopy(env)
                    step(after, move["action"])
                    result = after.results[-1]
                    assert result.end == "domino" and result.winner == 0
                    assert move["points"] == pytest.approx(result.award) and move["error"] == 0
                    assert move["win"] == 1.0
                return
            step(env, legal[0])
            list(play_moves(env, agents))
    pytest.fail("no seed gave seat 0 a last tile that fits both ends")


def test_a_review_looks_at_each_choice_of_the_round():
    env, agents = table("standard", 5, "strategic")
    while not env.episode_over:
        step(env, env.legal_actions()[-1])
        list(play_moves(env, agents))
    positions = coach.review(env, "standard", 0)["positions"]
    # The choices, read independently: the record replayed by the engine, seat 0's moves where
    # it had two or more legal moves, with the line before each.
    record = env.round_records()[-1]
    rnd = Round.start(env.rules, replay_round(env.rules, record)[0].dealt_hands(), record["lead"])
    choices = []
    for seat, action in record["moves"]:
        if seat == 0 and len(rnd.legal_actions()) > 1:
            choices.append(([list(t) for t in rnd.line()], action))
        rnd.step(action)
    assert choices, "seat 0 had no choice in the whole round"
    assert [(p["line"], p["played"]) for p in positions] == choices
    for p in positions:
        points = {m["action"]: m["points"] for m in p["moves"]}
        assert p["cost"] == pytest.approx(points[p["best"]] - points[p["played"]], abs=0.011)
        assert p["cost"] >= 0 and p["cost_error"] >= 0
        assert p["played_text"] == env.rules.tile_set.describe_action(p["played"])


def test_no_review_before_a_round_ends():
    env, _ = table("standard", 1)
    with pytest.raises(ValueError, match="no round has finished"):
        coach.review(env, "standard", 0)


starlette = pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from block_env.apps.web import create_app  # noqa: E402


def test_the_endpoints_answer_in_turn_and_refuse_out_of_turn():
    client = TestClient(create_app())
    view = client.post("/api/games", json={"preset": "standard", "opponents": ["greedy"], "seed": 7}).json()
    hint = client.get(f"/api/games/{view['id']}/hint")
    assert hint.status_code == 200
    legal = sorted(m["action"] for tile in view["hand"] for m in tile["moves"]) or [view["pass_action"]]
    assert sorted(m["action"] for m in hint.json()["positions"][0]["moves"]) == legal
    early = client.get(f"/api/games/{view['id']}/review")
    assert early.status_code == 409 and "no round has finished" in early.json()["error"]
    while not view["over"]:
        moves = [m["action"] for tile in view["hand"] for m in tile["moves"]]
        view = client.post(f"/api/games/{view['id']}/move", json={"action": (moves or [view["pass_action"]])[0]}).json()
    late = client.get(f"/api/games/{view['id']}/hint")
    assert late.status_code == 409 and "not your move" in late.json()["error"]
    review = client.get(f"/api/games/{view['id']}/review")
    assert review.status_code == 200
    assert all(p["played"] is not None for p in review.json()["positions"])
    assert client.get("/api/games/nope/hint").status_code == 404
