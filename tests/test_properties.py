"""Property-based invariants over every preset (Hypothesis)."""

from __future__ import annotations

import numpy as np
from conftest import redeal_hidden, round_of
from hypothesis import assume, given
from hypothesis import strategies as st

from block_env import PRESETS, Rules, decode_observation, raw_env
from block_env.observations import max_moves, read_public_view
from block_env.options import ENCODINGS

presets = st.sampled_from(sorted(PRESETS))
seeds = st.integers(0, 2**32 - 1)


def reference_legal(rules: Rules, hand: list[tuple[int, int]], ends, forced) -> list[int]:
    """Legal actions written straight from docs/rules.md, independently of the engine."""
    tiles = list(rules.tile_set.tiles)
    pass_action = 2 * len(tiles)
    if ends is None:  # the opening: any held tile (or the forced one), on end 0
        return sorted(2 * tiles.index(t) for t in ([forced] if forced else hand))
    legal = []
    for t in hand:
        if ends[0] in t:
            legal.append(2 * tiles.index(t))
        if ends[1] in t:
            legal.append(2 * tiles.index(t) + 1)
    return sorted(legal) or [pass_action]


def reference_heaviest(hands: list[list[tuple[int, int]]]) -> tuple[int, int]:
    held = [t for h in hands for t in h]
    doubles = [t for t in held if t[0] == t[1]]
    return max(doubles) if doubles else max(held, key=lambda t: (t[0] + t[1], t[1]))


def hand_tiles(env, seat):
    return env.rules.tile_set.tiles_of(round_of(env).hands[seat])


def play_random(env, rng, on_step=None):
    """Random legal play to the end of the episode; ``on_step(env)`` before every action."""
    moves = 0
    while not all(env.terminations.values()):
        if on_step is not None:
            on_step(env)
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
        moves += 1
    return moves


@given(presets, seeds)
def test_mask_equals_reference_legality_and_pass_iff_nothing_fits(preset, seed):
    env = raw_env(preset)
    env.reset(seed=seed)
    rules = env.rules
    forced = None
    if rules.first_lead == "heaviest":
        forced = reference_heaviest([hand_tiles(env, s) for s in range(rules.num_players)])

    def check(env):
        rnd = round_of(env)
        seat = env.agent_name_mapping[env.agent_selection]
        hand = hand_tiles(env, seat)
        expected = reference_legal(rules, hand, rnd.ends, forced if not rnd.moves else None)
        mask = env.observe(env.agent_selection)["action_mask"]
        assert list(np.flatnonzero(mask)) == expected
        fits = rnd.ends is None or any(e in t for t in hand for e in rnd.ends)
        assert (mask[rules.tile_set.pass_action] == 1) == (not fits)
        assert mask.sum() == 1 or mask[rules.tile_set.pass_action] == 0

    play_random(env, np.random.default_rng(seed), check)


@given(presets, seeds)
def test_tiles_are_conserved_and_rounds_are_bounded(preset, seed):
    env = raw_env(preset)
    env.reset(seed=seed)
    rnd = round_of(env)
    dealt = 0
    for h in rnd.hands:
        assert dealt & h == 0
        dealt |= h

    def check(env):
        rnd = round_of(env)
        union = rnd.played
        for h in rnd.hands:
            assert union & h == 0  # no tile in two places
            union |= h
        assert union == dealt  # hands + line = the deal; out-of-play tiles never move
        assert sum(rnd.counts) + rnd.played.bit_count() == dealt.bit_count()
        assert [h.bit_count() for h in rnd.hands] == rnd.counts

    moves = play_random(env, np.random.default_rng(seed), check)
    assert moves <= max_moves(env.rules)
    rnd = round_of(env)
    assert rnd.result is not None
    line = rnd.line()  # touching halves meet, and the outer halves are the open ends
    assert all(a[1] == b[0] for a, b in zip(line, line[1:]))
    assert (line[0][0], line[-1][1]) == rnd.ends
    assert sorted(tuple(sorted(t)) for t in line) == env.rules.tile_set.tiles_of(rnd.played)


@given(presets, seeds, st.sampled_from(["round", "match"]), st.sampled_from(ENCODINGS))
def test_same_seed_same_actions_same_game_bit_for_bit(preset, seed, episode, observation):
    def trace(env):
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        out = []
        steps = 0
        while not all(env.terminations.values()) and steps < 5000:
            for agent in env.possible_agents:
                out.append(env.observe(agent)["observation"].tobytes())
            out.append(repr(env.rewards))
            env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
            steps += 1
        assert all(env.terminations.values()), "the game did not end"
        return out

    assert trace(raw_env(preset, episode=episode, observation=observation)) == trace(
        raw_env(preset, episode=episode, observation=observation)
    )


@given(presets, seeds)
def test_decoded_vector_matches_the_seats_public_view(preset, seed):
    env = raw_env(preset)
    env.reset(seed=seed)
    rules = env.rules
    n = rules.num_players
    ts = rules.tile_set

    def check(env):
        rnd = round_of(env)
        for seat, agent in enumerate(env.possible_agents):
            view = rnd.public_view(seat, env.scores)
            obs = env.observe(agent)
            # One type for what a seat knows: the engine's view and the observation's agree.
            assert read_public_view(obs, rules) == view
            d = decode_observation(obs, rules)
            assert d["hand"] == view.hand_tiles
            assert d["hand_counts"] == [rnd.counts[(seat + r) % n] for r in range(n)]
            assert d["to_play"] == (rnd.current - seat) % n
            assert d["opening"] == (ts.tiles[rnd.moves[0][1] >> 1] if rnd.moves else None)

    play_random(env, np.random.default_rng(seed), check)


@given(presets, seeds, st.integers(0, 3), st.sampled_from(ENCODINGS), st.randoms(use_true_random=False))
def test_no_leak_permuting_hidden_tiles_leaves_observations_unchanged(preset, seed, observer, observation, shuffle):
    """Replay the same public history with the hidden tiles dealt differently: the
    observer's every observation and mask must be identical."""
    env = raw_env(preset, observation=observation)
    env.reset(seed=seed)
    rules = env.rules
    n = rules.num_players
    observer %= n
    start = round_of(env)
    initial = list(start.hands)
    leader = start.leader
    actions: list[int] = []
    seen: list[bytes] = []

    def record(env):
        obs = env.observe(f"player_{observer}")
        seen.append(obs["observation"].tobytes() + obs["action_mask"].tobytes())

    rng = np.random.default_rng(seed)
    while not all(env.terminations.values()):
        record(env)
        a = int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])))
        actions.append(a)
        env.step(a)

    hands = redeal_hidden(rules, initial, round_of(env).moves, observer, shuffle)
    assume(hands is not None)

    other = raw_env(rules, observation=observation)
    other.reset(seed=seed, options={"hands": hands, "leader": leader})
    # Under "heaviest" leads the deal decides the leader and opening tile, which are public.
    assume((round_of(other).leader, round_of(other).forced_opening) == (leader, start.forced_opening))
    replay: list[bytes] = []
    for a in actions:
        obs = other.observe(f"player_{observer}")
        replay.append(obs["observation"].tobytes() + obs["action_mask"].tobytes())
        assert a in round_of(other).legal_actions()
        other.step(a)
    assert replay == seen
