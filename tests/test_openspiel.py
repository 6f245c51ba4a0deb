"""Block dominoes in OpenSpiel: OpenSpiel's own consistency checks on every preset, the game
against the engine move by move, against OpenSpiel's python_block_dominoes where the rules
coincide, the observer's tensors, and CFR+ on the tiny set."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import block_env.openspiel  # noqa: E402, F401  (registers block_dominoes)
from block_env import PRESETS, Rules, decode_observation, raw_env  # noqa: E402
from block_env.agents import PRETRAINED, PRETRAINED_DIR, make_agent  # noqa: E402
from block_env.agents.policy import load_agent_metadata  # noqa: E402
from block_env.engine import Round, deal  # noqa: E402
from block_env.episodes import play_moves  # noqa: E402
from block_env.observations import encoder  # noqa: E402
from block_env.openspiel import AgentPolicy, make_bot, resample_position, rules_from_parameters  # noqa: E402

#: The search that infers the opponent's hand from its moves (it reads the history encoding).
INFERRING_SEARCH = "search:prior=pretrained:standard_vector,playout=policy,belief=prior"


def preset_of(rules: Rules) -> str:
    return next(name for name, preset in PRESETS.items() if preset == rules)


#: Every agent the project ships that reads an encoding of its own, on the preset it plays
#: (the inferring search with fewer worlds than its default, to keep the test short).
SHIPPED = [
    (f"pretrained:{name}", preset_of(Rules.from_dict(load_agent_metadata(PRETRAINED_DIR / name)["rules"])))
    for name in PRETRAINED
] + [(INFERRING_SEARCH + ",worlds=16", "standard")]


def random_play(state, rng, step=None):
    """Play chance and player nodes at random to the end, calling ``step(state)`` before each."""
    while not state.is_terminal():
        if step is not None:
            step(state)
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=np.array(probs) / sum(probs))))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


@pytest.mark.parametrize("preset", list(PRESETS))
def test_openspiels_consistency_checks_pass_on_every_preset(preset):
    game = pyspiel.load_game(f"block_dominoes(preset={preset})")
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_match_episodes_pass_the_consistency_checks():
    game = pyspiel.load_game("block_dominoes(preset=standard,episode=match,target=30)")
    pyspiel.random_sim_test(game, num_sims=2, serialize=True, verbose=False)


def test_every_rules_field_is_a_parameter():
    game = pyspiel.load_game("block_dominoes(max_pip=9,num_players=4,hand_size=10)")
    assert game.rules == Rules(num_players=4, max_pip=9, hand_size=10)
    assert game.num_players() == 4 and game.num_distinct_actions() == 2 * 55 + 1
    partnership = pyspiel.load_game("block_dominoes(preset=standard_4p,partnership=True,target=50)")
    assert partnership.rules == Rules(num_players=4, partnership=True, target=50)
    assert rules_from_parameters({"preset": "house", "blocked_scoring": "subtract_own"}).next_lead == "winner"
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        pyspiel.load_game("block_dominoes(preset=nope)")
    with pytest.raises(ValueError, match="Rules.hand_size"):
        pyspiel.load_game("block_dominoes(num_players=4,hand_size=9)")


def test_chance_nodes_deal_every_hand_with_equal_probability():
    game = pyspiel.load_game("block_dominoes(preset=tiny)")
    probabilities = {}

    def walk(state, p):
        if state.is_chance_node() and state.is_dealing():
            for action, q in state.chance_outcomes():
                walk(state.child(action), p * q)
            return
        hands = tuple(tuple(hand) for hand in state.dealing)
        probabilities[hands] = probabilities.get(hands, 0.0) + p

    walk(game.new_initial_state(), 1.0)
    assert len(probabilities) == 15 * 6  # C(6, 2) hands for seat 0, then C(4, 2) for seat 1
    assert np.allclose(list(probabilities.values()), 1 / 90)


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership", "house", "club", "double_nine_4p"])
def test_the_game_and_the_engine_agree_move_by_move(preset):
    """The same deal and moves through the pyspiel game and raw_env: legal actions, both
    encodings (observation tensor = vector, information state tensor = history) and returns."""
    game = pyspiel.load_game(f"block_dominoes(preset={preset})")
    rules = PRESETS[preset]
    rng = np.random.default_rng(3)
    for _ in range(3):
        state = game.new_initial_state()
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=np.array(probs) / sum(probs))))
        rnd = state.current_round()
        hands = [rules.tile_set.tiles_of(h) for h in rnd.dealt_hands()]
        env = raw_env(rules, reward="zero_sum")
        env.reset(seed=0, options={"hands": hands, "leader": rnd.leader})
        history = raw_env(rules, observation="history")
        history.reset(seed=0, options={"hands": hands, "leader": rnd.leader})
        returns = dict.fromkeys(env.possible_agents, 0.0)
        while not state.is_terminal():
            player = state.current_player()
            agent = env.agent_selection
            assert env.seat_of(agent) == player
            assert state.legal_actions() == env.legal_actions()
            for seat in range(rules.num_players):
                name = f"player_{seat}"
                assert np.array_equal(state.observation_tensor(seat), env.observe(name)["observation"])
                assert np.array_equal(state.information_state_tensor(seat), history.observe(name)["observation"])
                for encoding in ("vector", "history", "tracked"):
                    assert np.array_equal(
                        state.observation_in(seat, encoding), env.observe(name, encoding)["observation"]
                    )
            action = int(rng.choice(state.legal_actions()))
            state.apply_action(action)
            env.step(action)
            history.step(action)
            for name in env.possible_agents:
                returns[name] += env.rewards[name]
        assert env.episode_over
        assert state.returns() == pytest.approx([returns[name] for name in env.possible_agents])


def test_returns_equal_openspiels_python_block_dominoes_where_the_rules_coincide():
    """OpenSpiel's own game: 2 players, seat 0 leads, passes implicit, a blocked round pays the
    others' total to the lighter hand. Ours with blocked_scoring=others_total and the lot won by
    seat 0, on the same deals and moves."""
    from open_spiel.python.games import block_dominoes  # noqa: F401  (registers python_block_dominoes)

    theirs_game = pyspiel.load_game("python_block_dominoes")
    ours_game = pyspiel.load_game("block_dominoes(blocked_scoring=others_total)")
    ts = ours_game.rules.tile_set
    rng = np.random.default_rng(11)
    for _ in range(40):
        theirs, ours = theirs_game.new_initial_state(), ours_game.new_initial_state()
        tiles = rng.permutation(ts.num_tiles)
        hands = [sorted(tiles[:7].tolist()), sorted(tiles[7:14].tolist())]
        for tile in hands[0] + hands[1]:
            theirs.apply_action(tile)  # their deal order: seat 0's seven tiles, then seat 1's
            ours.apply_action(tile)
        ours.apply_action(0)  # the lot: seat 0 leads, as in theirs
        while not theirs.is_terminal():
            assert not ours.is_terminal()
            if ours.legal_actions() == [ts.pass_action]:
                ours.apply_action(ts.pass_action)  # theirs skips a forced pass
                continue
            mine = int(rng.choice(ours.legal_actions()))
            ends = ours.current_round().ends
            tile = ts.tiles[mine >> 1]
            edge = None if ends is None else float(ends[mine & 1])
            text = f"p{theirs.current_player()} tile:{(float(tile[0]), float(tile[1]))} pip:{edge}"
            (action,) = [a for a in theirs.legal_actions() if theirs.action_to_string(a) == text]
            theirs.apply_action(action)
            ours.apply_action(mine)
        while not ours.is_terminal():  # the passes that end a blocked round
            ours.apply_action(ts.pass_action)
        assert ours.returns() == pytest.approx(theirs.returns())


def test_observations_decode_and_strings_read():
    game = pyspiel.load_game("block_dominoes(preset=standard_3p)")
    state = game.new_initial_state()
    rng = np.random.default_rng(2)
    while state.is_chance_node() or len(state.history()) < 25:
        if state.is_chance_node():
            state.apply_action(state.chance_outcomes()[0][0])
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    seat = state.current_player()
    parts = decode_observation(np.array(state.observation_tensor(seat)), "standard_3p")
    view = state.current_round().public_view(seat)
    assert parts["hand"] == view.hand_tiles and parts["ends"] == view.ends
    text = state.observation_string(seat)
    assert text.startswith(f"player_{seat} hand:") and "voids" in text
    assert "moves:" in state.information_state_string(seat)
    assert state.action_to_string(seat, state.legal_actions()[0]).startswith(("[", "pass"))
    assert "line:" in str(state)
    expected = encoder(game.rules, "vector")(state.current_round(), seat, state.match.scores)
    assert np.array_equal(expected, state.observation_tensor(seat))


def test_a_resampled_state_looks_the_same_to_the_player():
    game = pyspiel.load_game("block_dominoes(preset=standard)")
    rng = np.random.default_rng(4)
    state = game.new_initial_state()
    while state.is_chance_node() or len(state.history()) < 22:  # 15 chance nodes, then 7 moves
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=np.array(probs) / sum(probs))))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    player = state.current_player()
    seen = set()
    for _ in range(20):
        other = state.resample_from_infostate(player, lambda: rng.random())
        assert other.information_state_tensor(player) == state.information_state_tensor(player)
        assert other.legal_actions() == state.legal_actions()
        seen.add(str(other))
    assert len(seen) > 1  # the hidden tiles were dealt otherwise


def test_observation_in_names_what_it_cannot_give():
    state = pyspiel.load_game("block_dominoes(preset=tiny)").new_initial_state()
    with pytest.raises(ValueError, match="the deal is still being made"):
        state.observation_in(0, "vector")
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    with pytest.raises(ValueError, match="encoding must be one of 'vector', 'history', 'tracked'; got 'pixels'"):
        state.observation_in(0, "pixels")


def test_resampled_positions_keep_the_players_view_and_follow_the_seed():
    """Every hidden hand dealt again keeps its count and none of the suits its seat passed on;
    the player's hand and the public record stay; the same seed deals the same hands."""
    rules = PRESETS["standard_3p"]
    ts = rules.tile_set
    checked = 0
    for seed in range(40):
        rng = random.Random(seed)
        rnd = Round.start(rules, deal(rules, rng), "heaviest")
        while rnd.result is None and not any(rnd.voids):
            legal = rnd.legal_actions()
            rnd.apply(legal[rng.randrange(len(legal))])
        if rnd.result is not None:
            continue
        player = rnd.current
        position = resample_position(rnd, player, random.Random(seed))
        assert position.hands[player] == rnd.hands[player]
        assert position.played == rnd.played and position.moves == rnd.moves
        assert position.public_view(player) == rnd.public_view(player)
        dealt = [position.hands[s] for s in range(rules.num_players)]
        assert sum(h.bit_count() for h in dealt) == sum(rnd.counts)
        assert not any(a & b for i, a in enumerate(dealt) for b in dealt[i + 1 :])  # no tile dealt twice
        assert not any(h & rnd.played for h in dealt)
        for seat in range(rules.num_players):
            assert position.hands[seat].bit_count() == rnd.counts[seat]
            assert not any(rnd.voids[seat] >> v & 1 for tile in ts.tiles_of(position.hands[seat]) for v in tile)
        assert resample_position(rnd, player, random.Random(seed)).hands == position.hands
        checked += 1
    assert checked >= 5


def test_cfr_plus_brings_the_tiny_games_nash_conv_down():
    from open_spiel.python.algorithms import cfr, exploitability
    from open_spiel.python.policy import UniformRandomPolicy

    game = pyspiel.load_game("block_dominoes(preset=tiny)")
    solver = cfr.CFRPlusSolver(game)
    for _ in range(10):
        solver.evaluate_and_update_policy()
    uniform = exploitability.nash_conv(game, UniformRandomPolicy(game))
    assert exploitability.nash_conv(game, solver.average_policy()) < uniform / 20


def test_any_agent_spec_is_a_bot_in_openspiels_loop():
    game = pyspiel.load_game("block_dominoes(preset=standard_3p)")
    bots = [make_bot(spec, game, seat, seed=seat) for seat, spec in enumerate(["greedy", "search:worlds=8", "random"])]
    returns = pyspiel.evaluate_bots(game.new_initial_state(), bots, 5)
    assert len(returns) == 3 and sum(returns) == pytest.approx(0.0)


def deal_by_chance(state, rng) -> None:
    while state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes())
        state.apply_action(int(rng.choice(outcomes, p=np.array(probs) / sum(probs))))


@pytest.mark.parametrize(("spec", "preset"), SHIPPED)
def test_every_shipped_agent_is_a_bot_reading_its_own_encoding(spec, preset):
    """Whole games in OpenSpiel's evaluate_bots; and on one deal the bot makes the same moves
    as the same agent at the arena's table, which hands each player its own encoding."""
    game = pyspiel.load_game(f"block_dominoes(preset={preset})")
    specs = [spec] + ["greedy"] * (game.num_players() - 1)
    for seed in range(2):
        bots = [make_bot(s, game, seat, seed=seat) for seat, s in enumerate(specs)]
        returns = pyspiel.evaluate_bots(game.new_initial_state(), bots, seed)
        assert len(returns) == game.num_players() and sum(returns) == pytest.approx(0.0)

    state = game.new_initial_state()
    deal_by_chance(state, np.random.default_rng(5))
    rnd = state.current_round()
    bots = [make_bot(s, game, seat, seed=seat) for seat, s in enumerate(specs)]
    ours = []
    while not state.is_terminal():
        seat = state.current_player()
        ours.append((seat, bots[seat].step(state)))
        state.apply_action(ours[-1][1])
    env = raw_env(game.rules)
    env.reset(
        seed=0, options={"hands": [game.rules.tile_set.tiles_of(h) for h in rnd.dealt_hands()], "leader": rnd.leader}
    )
    players = [make_agent(s, game.rules, seed=seat) for seat, s in enumerate(specs)]
    trained = spec.startswith("pretrained:")
    reads = load_agent_metadata(PRETRAINED_DIR / spec.split(":")[1])["observation"] if trained else "history"
    assert players[0].observation == reads  # its agent.json's encoding; the belief search's history
    assert [(move.seat, move.action) for move in play_moves(env, players)] == ours


@pytest.mark.parametrize(("spec", "preset"), SHIPPED)
def test_every_shipped_agent_is_a_policy_over_information_states(spec, preset):
    """At each decision of a game: probability 1 on one legal move, the same from another
    AgentPolicy of the same spec (one fixed policy), and for a trained agent the move it
    makes reading its own encoding at the arena's table."""
    game = pyspiel.load_game(f"block_dominoes(preset={preset})")
    first, second = AgentPolicy(spec, game), AgentPolicy(spec, game)
    agent = make_agent(spec, game.rules)
    state = game.new_initial_state()
    rng = np.random.default_rng(6)
    deal_by_chance(state, rng)
    rnd = state.current_round()
    env = raw_env(game.rules)
    env.reset(
        seed=0, options={"hands": [game.rules.tile_set.tiles_of(h) for h in rnd.dealt_hands()], "leader": rnd.leader}
    )
    while not state.is_terminal():
        probabilities = first.action_probabilities(state)
        assert sorted(probabilities) == state.legal_actions() and sorted(probabilities.values())[-1] == 1.0
        assert sum(probabilities.values()) == 1.0
        assert second.action_probabilities(state) == probabilities
        move = max(probabilities, key=probabilities.__getitem__)
        if spec.startswith("pretrained:"):
            assert agent.act(env.observe(env.agent_selection, agent.observation)) == move
        action = int(rng.choice(state.legal_actions()))  # any move: the policy is asked everywhere
        state.apply_action(action)
        env.step(action)


def test_ismcts_plays_the_same_game_from_the_same_seed():
    """Same seeds, same moves over a whole round (its resampling draws from the bot's seeded
    stream); the seed is what sets the game: other seeds play it otherwise."""

    def game(seed: int) -> list[tuple[int, int]]:
        env = raw_env("standard_3p")
        env.reset(seed=11)
        players = [make_agent("openspiel:ismcts,simulations=20", "standard_3p", seed=seed + s) for s in range(3)]
        return [(move.seat, move.action) for move in play_moves(env, players)]

    moves = game(5)
    assert game(5) == moves
    assert any(game(seed) != moves for seed in (6, 7, 8))


@pytest.mark.parametrize("spec", ["openspiel:ismcts,simulations=20", "openspiel:mcts,simulations=20"])
@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership"])
def test_openspiel_bots_play_legal_rounds_as_agents(spec, preset):
    from conftest import agent_plays_legal_round

    from block_env.agents import make_agent

    agent_plays_legal_round(make_agent(spec, preset, seed=3), preset, seed=4)


def test_openspiel_agent_specs_are_checked():
    from block_env.agents import make_agent

    with pytest.raises(ValueError, match="names its bot first"):
        make_agent("openspiel:simulations=5", "standard")
    with pytest.raises(ValueError, match="openspiel bot must be one of"):
        make_agent("openspiel:alphazero", "standard")
    with pytest.raises(ValueError, match="simulations must be an int >= 1"):
        make_agent("openspiel:ismcts,simulations=0", "standard")


def test_solve_writes_the_policy_the_curve_and_each_agents_exact_nash_conv(tmp_path):
    from block_env.cli import main

    assert (
        main(
            [
                "solve",
                "--rules",
                "tiny",
                "--iterations",
                "5",
                "--agents",
                "random",
                "greedy",
                "--out",
                str(tmp_path),
                "--quiet",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "solve.json").read_text())
    by_agent = {row["agent"]: row["nash_conv"] for row in summary["agents"]}
    assert by_agent["CFR+ average policy"] < by_agent["greedy"] < by_agent["random"]
    assert [row["iteration"] for row in summary["curve"]] == [1, 2, 5]
    assert summary["curve"][-1]["nash_conv"] < summary["curve"][0]["nash_conv"]
    policy = json.loads((tmp_path / "average_policy.json").read_text())
    assert all(abs(sum(p.values()) - 1) < 1e-6 for p in policy.values())
    for name in ("nash_conv.png", "nash_conv.csv", "agents.csv", "summary.md"):
        assert (tmp_path / name).stat().st_size > 0


def test_solve_refuses_an_agent_trained_on_another_set_before_solving(tmp_path):
    from block_env.training.solve import solve

    with pytest.raises(ValueError, match=r"pretrained/standard was trained for .* it cannot play"):
        solve("tiny", 1, tmp_path / "out", agents=["greedy", "pretrained:standard"], progress=False)
    assert not (tmp_path / "out").exists()  # refused before any solving or writing


def test_solve_refuses_what_it_cannot_do_before_writing_anything(tmp_path):
    """A set too large to lay out, a human among the agents, and a folder that already holds
    something: each an error naming it, and the folder left as it was."""
    from block_env.rules import Rules
    from block_env.training.solve import solve

    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"at most 200,000 .*these rules deal 7,534,800"):
        solve(Rules.preset("medium").replace(max_pip=6), 1, out, progress=False)
    with pytest.raises(ValueError, match="agents cannot be 'human'"):
        solve("tiny", 1, out, agents=["greedy", "human"], progress=False)
    assert not out.exists()
    out.mkdir()
    (out / "policy.npz").write_bytes(b"an earlier solve")
    with pytest.raises(ValueError, match="already exists and is not an empty folder"):
        solve("tiny", 1, out, progress=False)
    assert (out / "policy.npz").read_bytes() == b"an earlier solve"
