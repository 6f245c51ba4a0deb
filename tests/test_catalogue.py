"""The opponents the browser app offers: every figure is the one its results file prints, every
listed agent is one the server seats, and the JSON endpoint answers the catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from block_env.apps.catalogue import DEFAULT, catalogue, default_opponent, opponents
from block_env.rules import PRESETS

ROOT = Path(__file__).resolve().parents[1]
MEASURED_PRESETS = ["standard", "standard_3p", "standard_4p", "partnership"]


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_lists_opponents_with_a_default_among_them(preset):
    listed = catalogue(preset)
    specs = [o["spec"] for o in listed["opponents"]]
    assert len(specs) == len(set(specs)) >= 4
    assert listed["default"] in specs
    assert listed["num_players"] == PRESETS[preset].num_players
    for o in listed["opponents"]:
        assert o["name"] and o["level"] and o["description"]
        assert o["strength"].startswith(o["level"] + ": ")


@pytest.mark.parametrize("preset", MEASURED_PRESETS)
def test_each_figure_is_printed_in_its_results_file(preset):
    for o in opponents(preset):
        assert o.measured, f"{o.spec} on {preset} has no figure"
        for m in o.measured:
            text = (ROOT / m.where).read_text()
            assert m.figure in text, f"{m.figure!r} ({o.spec} against {m.against}) is not in {m.where}"
            assert m.against in {x.spec for x in opponents(preset)}
            low, high = m.interval
            assert low <= m.margin <= high
            if low <= 0 <= high:  # a margin the measurement cannot tell from zero
                assert m.sentence({}).startswith(f"about even with {m.against} (")
            else:
                word = "beats" if m.margin >= 0 else "loses to"
                assert m.sentence({}).startswith(f"{word} {m.against} by ")


def test_the_strength_line_reads_as_the_margin_says():
    network = next(o for o in catalogue("standard")["opponents"] if o["spec"] == "pretrained:standard")
    assert network["strength"] == "very strong: beats Search by +1.00 points a round"
    partnership = next(
        o for o in catalogue("partnership")["opponents"] if o["spec"] == "pretrained:partnership_average"
    )
    assert partnership["strength"] == "strong: loses to Search by 0.20 points a round"
    assert catalogue("house")["opponents"][0]["strength"] == "beginner: not measured on these rules"


def test_unknown_rules_are_refused_by_name():
    with pytest.raises(ValueError, match="unknown rules 'nope'; rules: standard"):
        catalogue("nope")
    assert default_opponent("house") == DEFAULT


starlette = pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from block_env.apps.web import Games, create_app  # noqa: E402


@pytest.fixture(scope="module")
def client():
    # Seats every listed opponent of every preset: more new games than one address may start
    # in a minute (the limit is tested in test_web_hostile.py).
    return TestClient(create_app(Games(new_games_per_minute=0)))


def test_the_endpoint_answers_the_catalogue(client):
    assert client.get("/api/opponents?rules=standard_3p").json() == catalogue("standard_3p")
    assert client.get("/api/opponents").json()["rules"] == "standard"
    refused = client.get("/api/opponents?rules=nope")
    assert refused.status_code == 400 and "unknown rules 'nope'" in refused.json()["error"]


@pytest.mark.parametrize("preset", [*MEASURED_PRESETS, "house"])
def test_the_server_seats_every_listed_opponent(client, preset):
    n = PRESETS[preset].num_players
    for o in opponents(preset):
        response = client.post("/api/games", json={"preset": preset, "opponents": [o.spec] * (n - 1), "seed": 1})
        assert response.status_code == 201, (o.spec, response.json())
        assert response.json()["agents"].count(o.spec) == n - 1
