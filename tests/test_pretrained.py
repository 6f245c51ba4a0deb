"""The trained agents shipped with the package: reachable as ``pretrained:NAME`` everywhere."""

from __future__ import annotations

import pytest
from conftest import agent_plays_legal_round

from block_env.agents import PRETRAINED, PRETRAINED_DIR, make_agent, make_env
from block_env.agents.policy import load_agent_metadata
from block_env.rules import PRESETS, Rules


def test_agents_ship_and_stay_small():
    shipped = {
        "standard",
        "standard_thirteenth",
        "standard_seventh",
        "standard_fifth",
        "standard_sixth",
        "standard_average",
        "standard_tracked",
        "standard_belief",
        "standard_vector",
        "standard_3p",
        "standard_3p_vector",
        "standard_4p",
        "standard_4p_vector",
    }
    partnership = {
        "partnership",
        "partnership_average",
        "partnership_third",
        "partnership_tracked",
        "partnership_belief",
        "partnership_vector",
    }
    assert shipped | partnership <= set(PRETRAINED)
    # A "tracked" network is 2-3 MB (its first layers read every seat's placed tiles); nineteen
    # agents, six of them partnership networks (two the same network, one with an endgame
    # search), stay under 36 MiB.
    total = sum(f.stat().st_size for f in PRETRAINED_DIR.rglob("*") if f.is_file())
    assert total < 36 * 2**20, f"{total} bytes of pretrained agents"


@pytest.mark.parametrize("name", PRETRAINED)
def test_a_pretrained_agent_loads_weights_only_and_plays_its_preset(name):
    rules = Rules.from_dict(load_agent_metadata(PRETRAINED_DIR / name)["rules"])
    # Each is named after the preset it plays; a suffix names an earlier agent kept beside it.
    preset = name if name in PRESETS else name.rsplit("_", 1)[0]
    assert rules == PRESETS[preset]
    agent = make_agent(f"pretrained:{name}", rules)  # torch.load(weights_only=True) inside
    agent_plays_legal_round(agent, rules, seed=3)
    gym_env = make_env(preset, opponents=[f"pretrained:{name}"])  # as a Gymnasium opponent
    gym_env.reset(seed=1)


def test_unknown_or_mismatched_pretrained_agents_are_refused():
    with pytest.raises(ValueError, match="unknown pretrained agent 'nope'; shipped: "):
        make_agent("pretrained:nope", Rules())
    with pytest.raises(ValueError, match="cannot play"):
        make_agent("pretrained:standard_3p", Rules())


def test_the_partnership_agent_is_its_network_with_an_endgame_search():
    """``pretrained:partnership`` is ``pretrained:partnership_average``'s network, weight for
    weight, with an endgame search: its agent.json differs by the ``endgame`` key alone, and
    its network alone moves as the average does."""
    import numpy as np

    with_search, alone = PRETRAINED_DIR / "partnership", PRETRAINED_DIR / "partnership_average"
    assert (with_search / "policy.pth").read_bytes() == (alone / "policy.pth").read_bytes()
    metadata = load_agent_metadata(with_search)
    assert "endgame" in metadata and "endgame" not in load_agent_metadata(alone)
    assert {k: v for k, v in metadata.items() if k != "endgame"} == load_agent_metadata(alone)
    rules = Rules.preset("partnership")
    agent, network = make_agent("pretrained:partnership", rules), make_agent("pretrained:partnership_average", rules)
    observations = np.random.default_rng(0).random((8, metadata["observation_size"]), dtype=np.float32)
    assert np.array_equal(agent.network_only().logits(observations), network.logits(observations))


def test_the_standard_agent_is_the_thirteenth_rounds_network_with_a_move_scorer():
    """``pretrained:standard`` is ``pretrained:standard_thirteenth``'s network, weight for
    weight, with a move scorer: its agent.json differs by the ``move_scorer`` key alone, and
    the scorer changes the logits of legal moves only."""
    import numpy as np

    from block_env import raw_env

    scored, network = PRETRAINED_DIR / "standard", PRETRAINED_DIR / "standard_thirteenth"
    assert (scored / "policy.pth").read_bytes() == (network / "policy.pth").read_bytes()
    metadata = load_agent_metadata(scored)
    assert {k: v for k, v in metadata.items() if k != "move_scorer"} == load_agent_metadata(network)
    rules = Rules.preset("standard")
    env = raw_env("standard", observation="tracked")
    env.reset(seed=4)
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    obs = env.observe(env.agent_selection)
    difference = make_agent("pretrained:standard", rules).logits(obs["observation"]) - make_agent(
        "pretrained:standard_thirteenth", rules
    ).logits(obs["observation"])
    legal = obs["action_mask"].astype(bool)
    legal[rules.tile_set.pass_action] = False
    assert np.all(difference[~legal] == 0) and np.any(difference[legal] != 0)
