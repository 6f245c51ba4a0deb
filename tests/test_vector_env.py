"""The vector env and its SB3 VecEnv against the single env, game by game."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import block_env  # noqa: F401  (registers the env)
from block_env.agents import make_env, make_vector_env
from block_env.vector_env import BlockDominoesVectorEnv


def mirror(vec: BlockDominoesVectorEnv, game: int, **kwargs):
    """The single env playing the same deal from the same seat against greedy."""
    games = vec.games
    rules = vec.rules
    hands = [rules.tile_set.tiles_of(h) for h in games.dealt_hands(game)]
    env = make_env(rules, opponents=["greedy"], learner_seat=int(vec.seats[game]), **kwargs)
    obs, _ = env.reset(seed=0, options={"hands": hands, "leader": int(games.leader[game])})
    return env, obs


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership", "house_4p"])
@pytest.mark.parametrize("reward", ["zero_sum", "points", "win_loss"])
def test_every_game_steps_exactly_as_the_single_env(preset, reward):
    n = 6
    kwargs = {"reward": reward, "reward_scale": 0.5}
    vec = make_vector_env(n, preset, opponents=["greedy"], **kwargs)
    obs, _ = vec.reset(seed=1)
    mirrors = [mirror(vec, i, **kwargs) for i in range(n)]
    for i, (_, single_obs) in enumerate(mirrors):
        np.testing.assert_array_equal(obs[i], single_obs)
    rng = np.random.default_rng(2)
    episodes = 0
    for _ in range(120):
        masks = vec.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
        obs, rewards, terminated, truncated, info = vec.step(actions)
        assert not truncated.any()
        for i, (env, _) in enumerate(mirrors):
            np.testing.assert_array_equal(masks[i], env.action_masks())
            single_obs, single_reward, single_terminated, _, single_info = env.step(int(actions[i]))
            assert rewards[i] == pytest.approx(single_reward) and terminated[i] == single_terminated
            if terminated[i]:  # the final observation and info are kept; the new episode's first returned
                np.testing.assert_array_equal(info["final_obs"][i], single_obs)
                final = info["final_info"]
                assert info["_final_obs"][i] and final["learner_seat"][i] == env.seat
                assert list(final["scores"][i]) == single_info["scores"]
                assert final["learner_side"][i] == single_info["learner_side"]
                mirrors[i] = mirror(vec, i, **kwargs)
                episodes += 1
            np.testing.assert_array_equal(obs[i], mirrors[i][1] if terminated[i] else single_obs)
    assert episodes > n


def test_a_match_pays_every_round_even_one_over_before_the_learners_first_decision():
    """Each match's rewards add up to its final score margin (read from the final observation):
    a round that ends before the learner's first decision of a new match is paid with that
    decision's step, not dropped."""
    from block_env.observations import decode_observation

    vec = BlockDominoesVectorEnv(32, "tiny", episode="match", learner_seat=0)
    vec.reset(seed=0)
    rng = np.random.default_rng(0)
    returns, matches = np.zeros(32), 0
    no_mask = np.zeros(vec.rules.tile_set.num_actions, dtype=np.int8)
    for _ in range(600):
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in vec.action_masks()])
        _, rewards, terminated, _, info = vec.step(actions)
        returns += rewards
        for game in np.flatnonzero(terminated):
            scores = decode_observation({"observation": info["final_obs"][game], "action_mask": no_mask}, vec.rules)[
                "scores"
            ]
            assert returns[game] == scores[0] - scores[1], game
            returns[game], matches = 0.0, matches + 1
    assert matches > 100


def test_make_vec_builds_it_with_spaces_autoreset_mode_and_masks():
    env = gymnasium.make_vec(
        "block_env/BlockDominoes-v0",
        num_envs=5,
        vectorization_mode="vector_entry_point",
        rules="standard_4p",
        opponents=["random", "strategic"],
    )
    assert isinstance(env, gymnasium.vector.VectorEnv)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, info = env.reset(seed=0)
    assert obs.shape == (5, env.single_observation_space.shape[0]) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    masks = env.action_masks()
    assert masks.shape == (5, env.single_action_space.n) and masks.dtype == bool
    actions = masks.argmax(axis=1)
    assert env.action_space.contains(actions)
    obs, rewards, terminated, truncated, info = env.step(actions)
    assert rewards.shape == terminated.shape == truncated.shape == (5,)
    assert env.observation_space.contains(obs)


def trajectory(seed, opponents=("random", "greedy")):
    env = make_vector_env(8, "standard_3p", opponents=list(opponents))
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(0)
    out = [obs]
    for _ in range(40):
        masks = env.action_masks()
        obs, rewards, terminated, _, _ = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
        out += [obs, rewards, terminated]
    return out


def test_same_seed_same_trajectories():
    a, b, c = trajectory(4), trajectory(4), trajectory(5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def _state(env):
    return {k: v.copy() for k, v in vars(env.games).items() if isinstance(v, np.ndarray)} | {"seats": env.seats.copy()}


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda a, m: a[:3], r"shape \(4,\)"),
        (lambda a, m: a.astype(np.float32), "integer dtype"),
        (lambda a, m: np.where(np.arange(4) == 2, 999, a), "game 2: action 999 is out of range"),
        (lambda a, m: np.where(np.arange(4) == 1, np.flatnonzero(~m[1])[0], a), r"game 1: action \d+ is not legal"),
    ],
    ids=["shape", "dtype", "range", "illegal"],
)
def test_bad_actions_name_the_game_and_change_no_game(bad, message):
    env = make_vector_env(4, "standard", opponents=["greedy"])
    env.reset(seed=0)
    masks = env.action_masks()
    before = _state(env)
    with pytest.raises(ValueError, match=message):
        env.step(bad(masks.argmax(axis=1), masks))
    after = _state(env)
    for key in before:
        np.testing.assert_array_equal(before[key], after[key], err_msg=key)
    if message.startswith("game 1"):
        with pytest.raises(ValueError, match="legal actions: "):
            env.step(bad(masks.argmax(axis=1), masks))


def test_illegal_action_terminate_ends_only_that_game():
    env = make_vector_env(3, "standard", opponents=["greedy"], illegal_action="terminate", reward_scale=0.25)
    env.reset(seed=0)
    masks = env.action_masks()
    actions = masks.argmax(axis=1)
    actions[0] = np.flatnonzero(~masks[0])[0]
    _, rewards, terminated, _, info = env.step(actions)
    assert terminated[0] and rewards[0] == -0.25 and info["final_info"]["illegal_action"][0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"learner_seat": 3}, "learner_seat"),
        ({"reward_scale": float("nan")}, "reward_scale"),
        ({"opponents": ["wizard"]}, "unknown agent"),
        ({"episode": "set"}, "episode"),
        ({"privileged": 1}, "privileged must be a bool"),
    ],
)
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_vector_env(2, "standard", **kwargs)
    with pytest.raises(ValueError, match="num_envs must be an int >= 1, got 0"):
        make_vector_env(0, "standard")


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership"])
def test_privileged_observations_append_the_hidden_hands_and_change_nothing_else(preset):
    """Same seed, same actions: the privileged env's observations are the plain env's followed
    by every other seat's hand (relative order), final observations included."""
    from block_env.observations import layout_for

    rules = block_env.Rules.preset(preset)
    plain = make_vector_env(6, rules, opponents=["greedy", "random"])
    privileged = make_vector_env(6, rules, opponents=["greedy", "random"], privileged=True)
    size, n, t = layout_for(rules, "vector").size, rules.num_players, rules.tile_set.num_tiles
    assert privileged.single_observation_space.shape == (size + (n - 1) * t,)
    obs_a, _ = plain.reset(seed=9)
    obs_b, _ = privileged.reset(seed=9)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(40):
        np.testing.assert_array_equal(obs_b[:, :size], obs_a)
        for game in range(6):
            owner, seat = privileged.games.owner[game], privileged.seats[game]
            hidden = np.concatenate([owner == (seat + r) % n for r in range(1, n)])
            np.testing.assert_array_equal(obs_b[game, size:], hidden)
        masks = plain.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs_a, rewards_a, done_a, _, info_a = plain.step(actions)
        obs_b, rewards_b, done_b, _, info_b = privileged.step(actions)
        assert np.array_equal(rewards_a, rewards_b) and np.array_equal(done_a, done_b)
        for game in np.flatnonzero(done_a):
            final = info_b["final_obs"][game]
            np.testing.assert_array_equal(final[:size], info_a["final_obs"][game])
            # The round's last hidden hands: each other seat's row holds as many tiles as its count.
            counts = final[layout_for(rules, "vector").slices["hand_counts"]]
            np.testing.assert_array_equal(final[size:].reshape(n - 1, t).sum(axis=1), counts[1:])
            finished += 1
    assert finished > 0


def test_sb3_vec_env_serves_maskable_ppo_with_one_mask_call(monkeypatch):
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import VecMonitor

    from block_env.training.sb3_vec_env import BlockDominoesVecEnv

    core = make_vector_env(16, "standard", opponents=["random", "greedy"], reward_scale=0.05)
    calls = []
    real = core.action_masks
    monkeypatch.setattr(core, "action_masks", lambda: calls.append(1) or real())
    venv = VecMonitor(BlockDominoesVecEnv(core))
    venv.seed(3)
    first = venv.reset()
    assert is_masking_supported(venv)
    calls.clear()
    assert get_action_masks(venv).shape == (16, 57) and len(calls) == 1
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=128, n_epochs=1, device="cpu", seed=0)
    model.learn(1024)
    assert model.num_timesteps >= 1024
    venv.seed(3)
    np.testing.assert_array_equal(venv.reset(), first)
    obs, rewards, dones, infos = venv.step(get_action_masks(venv).argmax(axis=1))
    for i in np.flatnonzero(dones):
        assert infos[i]["terminal_observation"].shape == obs[i].shape
    with pytest.raises(ValueError, match="actions must be integers"):  # not truncated to ids
        venv.step(get_action_masks(venv).argmax(axis=1) + 0.9)


def test_sharded_vec_env_is_its_shards_side_by_side():
    """Shard k's games are a BlockDominoesVecEnv of their own, seeded with derive_seed(seed,
    "shard", k): the same observations, rewards and masks step after step, in order."""
    import functools
    import multiprocessing

    from block_env.rules import resolve_rules
    from block_env.seeding import derive_seed
    from block_env.training.sb3_vec_env import ShardedVecEnv
    from block_env.training.train import batched_shard

    rules = resolve_rules("standard")
    options = {"opponents": ["greedy", "random"], "reward_scale": 0.05}
    build = functools.partial(batched_shard, 3, rules, True, options)
    before = set(multiprocessing.active_children())
    sharded = ShardedVecEnv([build, build])
    assert len(set(multiprocessing.active_children()) - before) == 2
    alone = [build(), build()]
    try:
        assert sharded.num_envs == 6 and sharded.observation_space == alone[0].observation_space
        sharded.seed(11)
        obs = sharded.reset()
        for k, env in enumerate(alone):
            env.seed(derive_seed(11, "shard", k))
        np.testing.assert_array_equal(obs, np.concatenate([env.reset() for env in alone]))
        for _ in range(40):
            masks = sharded.action_masks()
            np.testing.assert_array_equal(masks, np.concatenate([env.action_masks() for env in alone]))
            actions = masks.argmax(axis=1)
            obs, rewards, dones, infos = sharded.step(actions)
            expected = [env.step(part) for env, part in zip(alone, np.split(actions, 2))]
            np.testing.assert_array_equal(obs, np.concatenate([e[0] for e in expected]))
            np.testing.assert_array_equal(rewards, np.concatenate([e[1] for e in expected]))
            np.testing.assert_array_equal(dones, np.concatenate([e[2] for e in expected]))
            assert [i["learner_seat"] for i in infos] == [i["learner_seat"] for e in expected for i in e[3]]
        assert sharded.env_method("set_opponents", ["strategic"]) == [None] * 6
        assert sharded.get_attr("num_envs") == [3] * 6
    finally:
        sharded.close()
        sharded.close()  # a second close is a no-op
    assert set(multiprocessing.active_children()) <= before  # the shards' processes are gone


def test_a_shards_error_is_raised_in_the_parent_with_its_message():
    import functools

    from block_env.rules import resolve_rules
    from block_env.training.sb3_vec_env import ShardedVecEnv
    from block_env.training.train import batched_shard

    build = functools.partial(batched_shard, 2, resolve_rules("standard"), False, {"opponents": ["greedy"]})
    sharded = ShardedVecEnv([build, build])
    try:
        sharded.reset()
        with pytest.raises(ValueError, match=r"actions must have shape \(4,\), one per game; got \(3,\)"):
            sharded.step(np.zeros(3, dtype=np.int64))
        with pytest.raises(RuntimeError, match=r"shard 0 of the sharded env failed:(.|\n)*no_such_method"):
            sharded.env_method("no_such_method")
        sharded.reset()  # the pipes are still in step
        assert sharded.action_masks().shape == (4, 57)
    finally:
        sharded.close()


class CountingOpponent:
    """Plays the first legal move and counts its decisions."""

    def __init__(self) -> None:
        self.decisions = 0

    def act(self, obs) -> int:
        self.decisions += 1
        return int(np.flatnonzero(obs["action_mask"])[0])

    def reset(self, seed=None) -> None:
        pass


def test_a_partner_sits_opposite_the_learner_in_every_game_and_the_other_side_draws_from_the_pool():
    partner, drawn = CountingOpponent(), [CountingOpponent(), CountingOpponent()]
    vec = make_vector_env(64, "partnership", opponents=drawn, partner=partner)
    assert vec.opponents[-1] is partner and len(vec.opponents) == 3
    vec.reset(seed=3)
    rng = np.random.default_rng(0)
    games = np.arange(vec.num_envs)
    for _ in range(40):  # through several episodes (same-step autoreset redraws the seats)
        seats = vec.seats.copy()
        assert (vec.seat_opponents[games, (seats + 2) % 4] == 2).all()  # the partner's seat
        for side in (1, 3):  # the other side: the pool only, never the partner
            assert (vec.seat_opponents[games, (seats + side) % 4] < 2).all()
        masks = vec.action_masks()
        vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
    assert partner.decisions > 0 and all(o.decisions > 0 for o in drawn)

    vec.set_opponents(drawn[:1])  # a smaller pool mid-episode: the partner stays the last entry
    assert vec.opponents == [drawn[0], partner]
    assert (vec.seat_opponents[games, (vec.seats + 2) % 4] == 1).all() and (vec.seat_opponents < 2).all()
    replacement = CountingOpponent()
    vec.set_partner(replacement)  # a new partner takes the seat in the games in progress
    vec.step(np.array([np.flatnonzero(m)[0] for m in vec.action_masks()]))
    assert replacement.decisions > 0 and vec.opponents[-1] is replacement

    vec.set_opponents(drawn)
    vec.set_partner(None)  # back to drawing the partner from the pool
    vec.reset(seed=4)
    assert vec.opponents == drawn
    assert (vec.seat_opponents < 2).all() and (vec.seat_opponents[games, (vec.seats + 2) % 4] == 1).any()


def test_a_partner_needs_partnership_rules():
    with pytest.raises(ValueError, match="partner: only partnership rules seat a partner, these rules have 4 players"):
        make_vector_env(4, "standard_4p", opponents=["random"], partner="greedy")
    vec = make_vector_env(4, "standard", opponents=["random"])
    with pytest.raises(ValueError, match="partner: only partnership rules"):
        vec.set_partner("greedy")
    with pytest.raises(ValueError, match="partner: must be an agent spec string"):
        make_vector_env(4, "partnership", opponents=["random"], partner=["greedy"])
