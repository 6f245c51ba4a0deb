"""The move scorer: the moves it scores and their features, read against the engine; an agent
with one; its fit (``block-dominoes score-moves``)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import yaml

from block_env import Rules, raw_env
from block_env.agents import PRETRAINED_DIR, make_agent
from block_env.agents.move_scorer import MOVE_SCORER_WEIGHTS, MoveScorer, move_feature_size, scored_moves
from block_env.agents.policy import (
    PolicyAgent,
    add_endgame_search,
    add_move_scorer,
    average_agent_folders,
    load_agent_metadata,
    play_both_ways,
)
from block_env.cli import main
from block_env.observations import decode_observation, layout_for
from block_env.training.teaching import held_out_cut, move_value_targets

NETWORK = PRETRAINED_DIR / "standard_thirteenth"  # the shipped network without its move scorer


def decisions(preset: str, observation: str, seed: int, games: int = 3):
    """(env, observation dict) at every decision of a few rounds of random legal moves."""
    env = raw_env(preset, observation=observation)
    rng = np.random.default_rng(seed)
    for game in range(games):
        env.reset(seed=seed + game)
        while env.agents and not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            yield env, obs
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))


@pytest.mark.parametrize(
    ("preset", "observation"), [("standard", "tracked"), ("standard_3p", "vector"), ("partnership", "tracked")]
)
def test_the_scored_moves_are_the_legal_tile_moves(preset, observation):
    rules = Rules.preset(preset)
    seen = 0
    for _, obs in decisions(preset, observation, seed=1):
        moves, features = scored_moves(rules, observation, obs["observation"][None])
        scored = set((2 * moves[:, 1] + moves[:, 2]).tolist())
        legal = set(np.flatnonzero(obs["action_mask"][: rules.tile_set.pass_action]).tolist())
        assert scored == legal
        assert features.shape == (len(moves), move_feature_size(rules))
        seen += len(moves)
    assert seen > 50


def shows(tile: tuple[int, int], suit: int) -> int:
    return (tile[0] == suit) + (tile[1] == suit)


@pytest.mark.parametrize(("preset", "observation"), [("standard", "tracked"), ("standard_4p", "vector")])
def test_each_moves_features_are_what_the_move_does_in_the_engine(preset, observation):
    """The end a move leaves is the end the engine shows after it; the counts are the hand's,
    the unseen tiles' and the voids' the observation decodes to; the rest as documented."""
    rules = Rules.preset(preset)
    suits, others = rules.tile_set.num_suits, rules.num_players - 1
    checked = 0
    for env, obs in decisions(preset, observation, seed=5, games=2):
        view = decode_observation(obs, rules, observation)
        moves, features = scored_moves(rules, observation, obs["observation"][None])
        unseen_tiles = [t for t in rules.tile_set.tiles if t not in view["hand"] and t not in view["played"]]
        for (_, tile_index, end), f in zip(moves, features):
            tile = rules.tile_set.tiles[tile_index]
            after = copy.deepcopy(env)
            seat = env.agent_selection
            after.step(2 * tile_index + end)
            if view["ends"] is None:
                assert f[:suits].tolist() == [shows(tile, v) for v in range(suits)]
                continue
            new_ends = decode_observation(after.observe(seat), rules, observation)["ends"]
            leaves, other = new_ends[end], view["ends"][1 - end]
            assert f[:suits].tolist() == [float(v == leaves) for v in range(suits)]
            assert f[suits : 2 * suits].tolist() == [float(v == other) for v in range(suits)]
            at = 2 * suits
            for suit in (leaves, other):
                kept = sum(shows(t, suit) for t in view["hand"] if t != tile)
                assert f[at] == kept and f[at + 1] == sum(shows(t, suit) for t in unseen_tiles)
                assert f[at + 2 : at + 2 + others].tolist() == [
                    float(suit in view["voids"][r]) for r in range(1, others + 1)
                ]
                at += 2 + others
            assert f[at] == float(leaves == other)
            assert f[at + 1] == pytest.approx(sum(tile) / (2 * rules.tile_set.max_pip))
            assert np.flatnonzero(f[at + 2 :]).tolist() == [tile_index]
            checked += 1
    assert checked > 30


def random_scorer(rules: Rules, hidden_layer: int, units: int = 8, seed: int = 0, zero_out: bool = False) -> MoveScorer:
    rng = np.random.default_rng(seed)
    out = np.zeros(units, np.float32) if zero_out else rng.normal(size=units).astype(np.float32)
    return MoveScorer(
        rng.normal(size=(hidden_layer, units)).astype(np.float32) * 0.1,
        rng.normal(size=(move_feature_size(rules), units)).astype(np.float32) * 0.3,
        rng.normal(size=units).astype(np.float32) * 0.1,
        out,
        np.float32(0.0 if zero_out else 0.7),
    )


@pytest.fixture(scope="module")
def scored_agent(tmp_path_factory):
    out = tmp_path_factory.mktemp("scored") / "agent"
    return add_move_scorer(NETWORK, out, random_scorer(Rules.preset("standard"), 256))


def observations_and_masks(seed: int = 3):
    pairs = [(obs["observation"], obs["action_mask"]) for _, obs in decisions("standard", "tracked", seed, games=4)]
    return np.array([o for o, _ in pairs]), np.array([m for _, m in pairs])


def test_an_agent_with_a_move_scorer_adds_its_scores_to_the_legal_moves_logits(scored_agent, tmp_path):
    rules = Rules.preset("standard")
    observations, masks = observations_and_masks()
    network = PolicyAgent(rules, path=NETWORK, mirror=False)
    scored = PolicyAgent(rules, path=scored_agent, mirror=False)
    difference = scored.logits(observations) - network.logits(observations)
    legal = masks.astype(bool)
    legal[:, rules.tile_set.pass_action] = False
    assert np.all(difference[~legal] == 0) and np.all(np.abs(difference[legal]) > 0)
    # Read without its scorer (and so its network-only copy), the agent is the network itself.
    without = PolicyAgent(rules, path=scored_agent, mirror=False, move_scorer=False)
    assert np.array_equal(without.logits(observations), network.logits(observations))
    assert without.network_only().move_scorer is None and scored.network_only().move_scorer is not None
    # A scorer whose output weights are zero is the network itself, bit for bit.
    zero = add_move_scorer(NETWORK, tmp_path / "zero", random_scorer(rules, 256, zero_out=True))
    assert np.array_equal(
        PolicyAgent(rules, path=zero).logits(observations),
        make_agent("pretrained:standard_thirteenth", rules).logits(observations),
    )


def test_an_agent_with_a_move_scorer_decides_alike_one_by_one_and_in_a_batch(scored_agent):
    agent = make_agent(f"policy:{scored_agent}", "standard", seed=0)
    observations, masks = observations_and_masks(seed=7)
    one_by_one = [agent.act({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)]
    assert agent.act_batch(observations, masks).tolist() == one_by_one
    assert all(masks[np.arange(len(masks)), one_by_one])


def test_the_mirror_and_endgame_copies_keep_the_move_scorer_and_averaging_refuses_it(scored_agent, tmp_path):
    rules = Rules.preset("standard")
    observations, _ = observations_and_masks()
    one_way = add_move_scorer(PRETRAINED_DIR / "standard_tracked", tmp_path / "one_way", random_scorer(rules, 256))
    both_ways = play_both_ways(one_way, tmp_path / "both_ways")
    assert (both_ways / MOVE_SCORER_WEIGHTS).is_file()
    assert np.array_equal(
        PolicyAgent(rules, path=both_ways).logits(observations),
        PolicyAgent(rules, path=one_way, mirror=True).logits(observations),
    )
    endgame = add_endgame_search(scored_agent, tmp_path / "endgame", "search:worlds=4", 2)
    assert load_agent_metadata(endgame)["move_scorer"] == {"hidden": 8}
    for folders in ([NETWORK, scored_agent], [scored_agent, NETWORK]):
        with pytest.raises(ValueError, match="has a move scorer, which averaging would drop"):
            average_agent_folders(folders, tmp_path / "average")
        assert not (tmp_path / "average").exists()


def test_a_move_scorer_that_does_not_fit_is_refused_with_its_reason(scored_agent, tmp_path):
    rules = Rules.preset("standard")
    with pytest.raises(ValueError, match="already has a move scorer"):
        add_move_scorer(scored_agent, tmp_path / "twice", random_scorer(rules, 256))
    with pytest.raises(ValueError, match=r"hidden_weight must have shape \(256, 8\), got \(64, 8\)"):
        add_move_scorer(NETWORK, tmp_path / "narrow", random_scorer(rules, 64))
    wrong_features = random_scorer(rules, 256)
    wrong_features = MoveScorer(**{**wrong_features.arrays(), "move_weight": np.zeros((3, 8), np.float32)})
    with pytest.raises(ValueError, match=r"move_weight must have shape \(50, 8\), got \(3, 8\)"):
        add_move_scorer(NETWORK, tmp_path / "narrow", wrong_features)
    history = tmp_path / "history_agent"  # agent.json alone: the encoding is refused before any weight is read
    history.mkdir()
    metadata = json.loads(open(NETWORK / "agent.json").read())
    size = layout_for(rules, "history").size
    (history / "agent.json").write_text(
        json.dumps({**metadata, "observation": "history", "observation_size": size, "mirror": False})
    )
    with pytest.raises(ValueError, match="reads the 'vector' or 'tracked' encoding"):
        add_move_scorer(history, tmp_path / "history", random_scorer(rules, 256))
    for name in ("twice", "narrow", "history"):
        assert not (tmp_path / name).exists()
    # A damaged folder: weights of the wrong shape, a missing file, a bad agent.json entry.
    broken = tmp_path / "broken"
    add_move_scorer(NETWORK, broken, random_scorer(rules, 256))
    arrays = dict(np.load(broken / MOVE_SCORER_WEIGHTS))
    np.savez(broken / MOVE_SCORER_WEIGHTS, **{**arrays, "bias": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match=r"move_scorer.npz: the move scorer's bias must have shape \(8,\), got \(3,\)"):
        make_agent(f"policy:{broken}", "standard")
    (broken / MOVE_SCORER_WEIGHTS).unlink()
    with pytest.raises(ValueError, match="move_scorer.npz is missing"):
        make_agent(f"policy:{broken}", "standard")
    metadata = json.loads((broken / "agent.json").read_text())
    (broken / "agent.json").write_text(json.dumps({**metadata, "move_scorer": {"hidden": 0}}))
    with pytest.raises(ValueError, match="move_scorer must be"):
        load_agent_metadata(broken)


@pytest.fixture(scope="module")
def searched_decisions(tmp_path_factory):
    """A small run's teacher decisions with a search teacher's move values."""
    root = tmp_path_factory.mktemp("searched")
    values = yaml.safe_load(open("configs/tiny.yaml"))
    values.update(observation="tracked", total_timesteps=256, checkpoint_every=256)
    values["ppo"] = {**values["ppo"], "net_arch": [16, 16]}
    values["eval"] = {**values["eval"], "every": 256, "final_deals": 2}
    values["pretrain"] = {"teacher": "search:worlds=4", "targets": "values", "decisions": 240, "epochs": 1}
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(values))
    assert main(["train", "--config", str(config), "--out", str(root / "run"), "--quiet"]) == 0
    return root / "run"


def test_the_score_moves_command_fits_a_scorer_that_plays_and_reports_its_passes(searched_decisions, tmp_path, capsys):
    out = tmp_path / "scored"
    args = ["score-moves", "--agent", f"policy:{searched_decisions / 'step_0'}", "--out", str(out)]
    args += ["--decisions", str(searched_decisions / "teacher_decisions.npz"), "--hidden", "4", "--epochs", "2"]
    args += ["--batch-size", "32", "--learning-rate", "0.01"]
    assert main(args) == 0
    assert f"play it as policy:{out}" in capsys.readouterr().out
    report = json.loads((out / "move_scorer.json").read_text())
    assert report["fitted_decisions"] == 216 and report["fitted_rows"] > 216 and report["held_out_decisions"] == 24
    assert len(report["held_out_by_epoch"]) == 2 and report["kept_epoch"] in (1, 2)
    kept = [report["held_out_before"], *report["held_out_by_epoch"]][report["kept_epoch"]]
    assert kept["loss"] == min(f["loss"] for f in [report["held_out_before"], *report["held_out_by_epoch"]])
    assert load_agent_metadata(out)["move_scorer"] == {"hidden": 4}
    # The saved scorer, read by the agent in numpy, gives the held-out loss the fit reported.
    saved = np.load(searched_decisions / "teacher_decisions.npz")
    held = slice(held_out_cut(len(saved["masks"]), 0.1), None)
    masks = saved["masks"][held].astype(bool)
    targets = move_value_targets(np.where(masks, saved["values"][held], np.nan), 1.0)
    agent_alone = PolicyAgent(Rules.preset("standard"), path=out, mirror=False)
    logits = np.where(
        masks,
        agent_alone.logits(saved["observations"][held][:, : layout_for(Rules.preset("standard"), "tracked").size]),
        -np.inf,
    )
    log_policy = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    assert -(targets * np.where(masks, log_policy, 0.0)).sum(1).mean() == pytest.approx(kept["loss"], abs=1e-5)
    env = raw_env("standard", observation="tracked")
    env.reset(seed=0)
    agent = make_agent(f"policy:{out}", "standard", seed=0)
    while env.agents and not all(env.terminations.values()):
        obs = env.observe(env.agent_selection)
        action = agent.act(obs)
        assert obs["action_mask"][action] == 1
        env.step(action)


#: score-moves options small enough for a test's decisions, shared by the first fit and the continued one.
SMALL_FIT = ["--epochs", "1", "--batch-size", "32", "--learning-rate", "0.003"]


@pytest.fixture(scope="module")
def fitted_scorer(searched_decisions, tmp_path_factory):
    """A 4-unit scorer fitted on the small run's network and decisions, for fitting further."""
    first = tmp_path_factory.mktemp("first") / "scored"
    args = ["score-moves", "--agent", f"policy:{searched_decisions / 'step_0'}", "--out", str(first), "--hidden", "4"]
    assert main([*args, "--decisions", str(searched_decisions / "teacher_decisions.npz"), *SMALL_FIT]) == 0
    return first


def test_score_moves_continue_fits_the_agents_own_scorer_further_from_its_weights(
    searched_decisions, fitted_scorer, tmp_path, capsys
):
    first, further = fitted_scorer, tmp_path / "further"
    options = ["--decisions", str(searched_decisions / "teacher_decisions.npz"), *SMALL_FIT]
    capsys.readouterr()  # the fixture's fit, where this test runs first
    assert main(["score-moves", "--agent", f"policy:{first}", "--continue", "--out", str(further), *options]) == 0
    assert "with its move scorer fitted further" in capsys.readouterr().out
    before, after = (json.loads((folder / "move_scorer.json").read_text()) for folder in (first, further))
    # It starts where the first fit ended: the same network, read alone, plus the first scorer.
    assert after["continued"] is True and before["continued"] is False
    first_loss = [before["held_out_before"], *before["held_out_by_epoch"]][before["kept_epoch"]]["loss"]
    assert first_loss < before["held_out_before"]["loss"] - 1e-5  # so a fresh start would read otherwise
    assert after["held_out_before"]["loss"] == pytest.approx(first_loss, abs=1e-6)
    assert load_agent_metadata(further) == load_agent_metadata(first)  # its units and the rest
    assert (further / "policy.pth").read_bytes() == (first / "policy.pth").read_bytes()
    first_arrays, further_arrays = (np.load(folder / MOVE_SCORER_WEIGHTS) for folder in (first, further))
    assert not np.array_equal(first_arrays["move_weight"], further_arrays["move_weight"])


def test_score_moves_continue_refuses_an_agent_without_a_scorer_and_other_units(
    searched_decisions, fitted_scorer, tmp_path, capsys
):
    base = ["score-moves", "--decisions", str(searched_decisions / "teacher_decisions.npz"), *SMALL_FIT]
    capsys.readouterr()  # the fixture's fit, where this test runs first
    for agent, extra, message in (
        (searched_decisions / "step_0", [], "has no move scorer to fit further"),
        (fitted_scorer, ["--hidden", "8"], "--hidden 8: the scorer fitted further keeps its 4 units"),
        (fitted_scorer, [], None),  # without --continue: refused as before
    ):
        flags = ["--continue", *extra] if message else []
        with pytest.raises(SystemExit) as exit_:
            main([*base, "--agent", f"policy:{agent}", "--out", str(tmp_path / "out"), *flags])
        said = capsys.readouterr()
        assert exit_.value.code == 2 and (message or "already has a move scorer") in said.err
        assert "held out before the fit" not in said.out and not (tmp_path / "out").exists()  # refused before fitting


def test_the_score_moves_command_refuses_what_it_cannot_fit_before_writing(searched_decisions, tmp_path, capsys):
    agent = f"policy:{searched_decisions / 'step_0'}"
    kept = searched_decisions / "teacher_decisions.npz"
    saved = dict(np.load(kept))
    about = json.loads(str(saved["about"]))
    other_rules = tmp_path / "other.npz"
    np.savez(
        other_rules,
        **{**saved, "about": np.array(json.dumps({**about, "rules": Rules.preset("standard_3p").as_dict()}))},
    )
    no_values = tmp_path / "choices.npz"
    np.savez(no_values, **{k: v for k, v in saved.items() if k != "values"})
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(b"PK\x03\x04 not a zip archive")
    cases = [
        (["--decisions", str(tmp_path / "none.npz")], "no file"),
        (["--decisions", str(damaged)], "is not a saved set of teacher decisions"),
        (["--decisions", str(other_rules)], "was made under rules"),
        (["--decisions", str(no_values)], "holds no move values"),
        (["--epochs", "0"], "--epochs must be a positive int"),
        (["--holdout", "1"], "--holdout must be between 0 and 1"),
        (["--learning-rate", "-1"], "--learning-rate must be a positive"),
        (["--holdout", "0.001"], "--holdout 0.001 holds out no decision of these files"),
        (["--holdout", "0.999"], "--holdout 0.999 leaves no decision of these files to fit"),
        (["--learning-rate", "1e-30", "--epochs", "1"], "no pass lowered the held-out loss"),
    ]
    cases.append(([], "--agent: a trained agent is pretrained:NAME or policy:PATH"))
    for extra, message in cases:
        spec = "search" if not extra else agent
        with pytest.raises(SystemExit) as exit_:
            main(["score-moves", "--agent", spec, "--out", str(tmp_path / "out"), "--decisions", str(kept), *extra])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
        assert not (tmp_path / "out").exists()
