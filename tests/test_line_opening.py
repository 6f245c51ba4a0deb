"""Where the opening tile sits in the line, as replay frames and the web app's views say: the
page keeps the opening in place and lets the line grow both ways from it."""

from __future__ import annotations

import pytest

from block_env.aec import raw_env
from block_env.agents import make_agent
from block_env.apps.replay import opening_index, replay_round
from block_env.episodes import play_moves


@pytest.mark.parametrize("preset", ["standard", "standard_4p", "house"])
def test_the_opening_tile_is_where_the_index_says_in_every_frame(preset):
    for seed in range(5):
        env = raw_env(preset)
        env.reset(seed=seed)
        list(play_moves(env, [make_agent("random", env.rules, seed=seed + s) for s in range(env.rules.num_players)]))
        record = env.round_records()[-1]
        ts = env.rules.tile_set
        first = next(action for _, action in record["moves"] if action != ts.pass_action)
        opening_tile = sorted(ts.tiles[first >> 1])
        _, frames = replay_round(env.rules, record)
        assert frames[0]["opening"] is None and opening_index(ts, []) is None
        for frame in frames[1:]:
            assert sorted(frame["line"][frame["opening"]]) == opening_tile
