"""The observation decoders against each other and the engine, at every turn of random games:
the "history" encoding's replay of the moves, the "vector" encoding's pieces, and
read_public_view's bitmasks (from any encoding) all read the same public facts, and those are
the engine's."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import round_of

from block_env import Rules, decode_observation, raw_env
from block_env.observations import history_layout, layout_for, read_public_view

FACTS = ("hand", "to_play", "hand_counts", "scores", "ends", "played", "opening", "leader", "voids", "passes")


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership", "double_nine_4p"])
def test_every_decoder_reads_the_engines_public_facts_at_every_turn(preset):
    rules = Rules.preset(preset)
    ts, n = rules.tile_set, rules.num_players
    rng = np.random.default_rng(5)
    turns = with_passes = 0
    for seed in range(6):
        env = raw_env(rules)
        env.reset(seed=seed)
        while not all(env.terminations.values()):
            agent = env.agent_selection
            seat = env.agent_name_mapping[agent]
            rnd = round_of(env)
            vector = decode_observation(env.observe(agent, "vector"), rules)
            history = decode_observation(env.observe(agent, "history"), rules, "history")
            assert {k: history[k] for k in FACTS} == {k: vector[k] for k in FACTS}

            # The engine's facts, seen from this seat (relative seat r is seat + r).
            assert vector["hand"] == ts.tiles_of(rnd.hands[seat])
            assert vector["played"] == sorted(ts.tiles_of(rnd.played))
            assert vector["ends"] == rnd.ends
            assert vector["passes"] == rnd.passes
            assert vector["hand_counts"] == [rnd.counts[(seat + r) % n] for r in range(n)]
            assert vector["voids"] == [
                [v for v in range(ts.num_suits) if rnd.voids[(seat + r) % n] >> v & 1] for r in range(n)
            ]
            assert vector["to_play"] == 0 and vector["leader"] == (rnd.leader - seat) % n
            if rnd.moves:
                assert vector["opening"] == ts.tiles[rnd.moves[0][1] >> 1]

            view = read_public_view(env.observe(agent, "vector"), rules)
            assert (view.hand, view.played, view.ends, view.passes) == (
                rnd.hands[seat],
                rnd.played,
                rnd.ends,
                rnd.passes,
            )
            assert view.voids == tuple(rnd.voids[(seat + r) % n] for r in range(n))
            assert (view.leader, view.to_play, list(view.hand_counts)) == (
                vector["leader"],
                0,
                vector["hand_counts"],
            )
            assert view.opening == (None if vector["opening"] is None else ts.tiles.index(vector["opening"]))
            assert list(view.scores) == vector["scores"] and list(view.legal) == env.legal_actions()
            for observation in ("tracked", "history"):  # the same view from the other encodings
                assert read_public_view(env.observe(agent, observation), rules, observation) == view

            turns += 1
            with_passes += rnd.passes > 0
            env.step(int(rng.choice(env.legal_actions())))
    assert turns > 50 and with_passes > 0  # passes were read, not only their absence


@pytest.mark.parametrize("preset", ["standard", "partnership"])
@pytest.mark.parametrize("observation", ["vector", "tracked"])
def test_a_mirrored_observation_is_the_position_with_its_ends_swapped(preset, observation):
    """At every turn after the opening: the mirrored observation reads the same facts with the
    ends swapped, and the mirrored legal moves are the moves legal against the swapped ends."""
    rules = Rules.preset(preset)
    ts = rules.tile_set
    layout = layout_for(rules, observation)
    rng = np.random.default_rng(9)
    mirrored_turns = 0
    for seed in range(8):
        env = raw_env(rules, observation=observation)
        env.reset(seed=seed)
        while not all(env.terminations.values()):
            seen = env.observe(env.agent_selection)
            obs, mask = seen["observation"], seen["action_mask"]
            facts = decode_observation(obs, rules, observation)
            if facts["ends"] is not None:
                mirror = decode_observation(obs[layout.mirror_columns], rules, observation)
                left, right = facts["ends"]
                assert mirror == {**facts, "ends": (right, left)}
                # Independently: tile i fits end e when it carries that end's value.
                swapped = np.zeros_like(mask)
                for i, tile in enumerate(ts.tiles):
                    if tile in facts["hand"]:
                        swapped[2 * i] = right in tile
                        swapped[2 * i + 1] = left in tile
                swapped[ts.pass_action] = not swapped.any()
                assert np.array_equal(mask[ts.mirror_actions], swapped)
                mirrored_turns += 1
            env.step(int(rng.choice(np.flatnonzero(mask))))
    assert mirrored_turns > 60


def test_the_history_layout_refuses_to_mirror():
    with pytest.raises(ValueError, match="the 'history' layout has no ends piece to mirror"):
        _ = history_layout(Rules.preset("standard")).mirror_columns
