"""The solver over the engine's game tree: the same information states, CFR+ policy, best
responses and NashConv as OpenSpiel on the tiny set; best responses checked on positions built
by hand; the solved policy as an agent; ``block-dominoes solve``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import openspiel_state

from block_env import Round, Rules
from block_env.cfr import CFRSolver, best_response, expected_value, mean_award, nash_conv, read_policy, uniform_policy
from block_env.game_tree import build_tree

pyspiel = pytest.importorskip("pyspiel")
import block_env.openspiel  # noqa: E402,F401  (registers block_dominoes)

TINY = Rules.preset("tiny")


@pytest.fixture(scope="module")
def tiny():
    return build_tree(TINY)


@pytest.fixture(scope="module")
def game():
    return pyspiel.load_game("block_dominoes(preset=tiny)")


def tabular(game, tree, policy):
    """``policy`` (over the tree's slots) as OpenSpiel's TabularPolicy."""
    from open_spiel.python.policy import TabularPolicy

    table = TabularPolicy(game)
    for info in range(tree.num_infostates):
        state = openspiel_state(game, tree, int(tree.info_node[info]))
        row = table.policy_for_key(state.information_state_string())
        row[:] = 0.0
        start, stop = tree.info_offset[info], tree.info_offset[info + 1]
        row[tree.slot_action[start:stop]] = policy[start:stop]
    return table


def test_the_trees_information_states_are_openspiels(tiny, game):
    from open_spiel.python.policy import TabularPolicy

    keys = set()
    for info in range(tiny.num_infostates):
        state = openspiel_state(game, tiny, int(tiny.info_node[info]))
        assert state.current_player() == tiny.info_seat[info]
        assert state.legal_actions() == tiny.info_actions(info).tolist()
        keys.add(state.information_state_string())
    assert len(keys) == tiny.num_infostates == len(TabularPolicy(game).state_lookup)
    # Every node of an information state is a history OpenSpiel puts in it.
    for node in np.flatnonzero(tiny.player >= 0)[::7]:
        state = openspiel_state(game, tiny, int(node))
        info = tiny.infostate[node]
        assert (
            state.information_state_string()
            == openspiel_state(game, tiny, int(tiny.info_node[info])).information_state_string()
        )


def test_the_roots_are_every_deal_and_lead_equally_likely_and_the_leaves_pay_the_engines_award(tiny):
    assert tiny.num_roots == 15 * 6 * 2  # seat 0's hand, seat 1's from the other four tiles, two leaders
    assert tiny.root_probability.sum() == pytest.approx(1.0)
    leaves = np.flatnonzero(tiny.num_children == 0)
    for node in leaves[::11]:
        result = tiny.round_at(int(node)).result
        assert result is not None and tiny.value[node] == result.side_values("zero_sum")[0]


def test_cfr_plus_gives_openspiels_average_policy_and_nash_conv(tiny, game):
    from open_spiel.python.algorithms import cfr, exploitability

    theirs = cfr.CFRPlusSolver(game)
    ours = CFRSolver(tiny)
    for _ in range(10):
        theirs.evaluate_and_update_policy()
        ours.iterate()
    mine = ours.average_policy()
    average = theirs.average_policy()
    for info in range(tiny.num_infostates):
        state = openspiel_state(game, tiny, int(tiny.info_node[info]))
        row = average.policy_for_key(state.information_state_string())
        start, stop = tiny.info_offset[info], tiny.info_offset[info + 1]
        np.testing.assert_allclose(mine[start:stop], row[tiny.slot_action[start:stop]], atol=1e-12)
    assert nash_conv(tiny, mine) == pytest.approx(exploitability.nash_conv(game, average), abs=1e-6)
    assert 0 < nash_conv(tiny, mine) < nash_conv(tiny, uniform_policy(tiny)) / 20


@pytest.mark.parametrize("iterations", [0, 3])
def test_best_responses_are_openspiels_at_the_root_and_at_every_history(tiny, game, iterations):
    from open_spiel.python.algorithms import best_response as openspiel_best_response

    solver = CFRSolver(tiny)
    for _ in range(iterations):
        solver.iterate()
    policy = solver.average_policy()
    table = tabular(game, tiny, policy)
    for seat in (0, 1):
        ours = best_response(tiny, policy, seat)
        theirs = openspiel_best_response.BestResponsePolicy(game, seat, table)
        assert ours.value == pytest.approx(theirs.value(game.new_initial_state()), abs=1e-9)
        for node in range(0, tiny.num_nodes, 5):
            state = openspiel_state(game, tiny, node)
            assert ours.node_value[node] == pytest.approx(theirs.value(state), abs=1e-9)


def test_nash_conv_of_a_scripted_agent_is_openspiels(tiny, game):
    from open_spiel.python.algorithms import exploitability

    from block_env.openspiel import AgentPolicy
    from block_env.training.solve import agent_policy

    for spec in ("greedy", "strategic"):
        theirs = exploitability.nash_conv(game, AgentPolicy(spec, game))
        assert nash_conv(tiny, agent_policy(tiny, spec)) == pytest.approx(theirs, abs=1e-6)
    assert nash_conv(tiny, agent_policy(tiny, "random")) == pytest.approx(
        exploitability.nash_conv(game, AgentPolicy("random", game)), abs=1e-6
    )


# Every tile of the double-two set is dealt (2 x 3 tiles), so each seat sees the other's hand:
# a best response is then a plain search over the engine's moves, which these tests run.
OPEN = Rules(max_pip=2, hand_size=3)


def lowest_move_policy(tree, seat):
    """Uniform for ``seat``; the other seat always plays its lowest legal action id."""
    policy = uniform_policy(tree)
    for info in np.flatnonzero(tree.info_seat != seat):
        start, stop = tree.info_offset[info], tree.info_offset[info + 1]
        policy[start:stop] = 0.0
        policy[start] = 1.0
    return policy


def search_value(rnd: Round, seat: int) -> float:
    """``seat``'s best value when the other seat always plays its lowest legal action id."""
    if rnd.result is not None:
        return rnd.result.side_values("zero_sum")[seat]
    legal = rnd.legal_actions()
    values = []
    for action in legal if rnd.current == seat else legal[:1]:
        child = rnd.copy()
        child.apply(action)
        values.append(search_value(child, seat))
    return max(values)


def reached(tree, seat):
    """The nodes the other seat's lowest moves let through (elsewhere nothing is at stake, and
    a best response's choice is arbitrary)."""
    out = np.zeros(tree.num_nodes, bool)
    out[: tree.num_roots] = True
    for node in range(tree.num_roots, tree.num_nodes):
        up = tree.parent[node]
        out[node] = out[up] and (tree.player[up] == seat or node == tree.first_child[up])
    return out


def test_a_best_response_where_every_hand_is_known_is_a_search_over_the_engine():
    tree = build_tree(OPEN)
    for seat in (0, 1):
        response = best_response(tree, lowest_move_policy(tree, seat), seat)
        nodes = np.flatnonzero(reached(tree, seat))
        assert len(nodes) > 100
        for node in nodes:
            assert response.node_value[node] == pytest.approx(search_value(tree.round_at(int(node)), seat))


def test_a_best_response_on_a_hand_made_deal():
    # Seat 0: [0|0] [0|1] [1|1]; seat 1: [0|2] [1|2] [2|2]; seat 0 leads, and seat 1 always
    # plays its lowest action id (tile index, left end first). Worked out by hand:
    # - lead [1|1]: seat 1 [1|2] on the left (ends 2, 1); seat 0 [0|1] on the right (2, 0); seat 1
    #   [0|2] on the left (0, 0); seat 0 goes out with [0|0] and wins seat 1's [2|2]: 4 points;
    # - lead [0|0]: seat 1 [0|2] on the left (2, 0); seat 0 [0|1] (2, 1); seat 1 [1|2] on the left
    #   (1, 1); seat 0 goes out with [1|1]: 4 points;
    # - lead [0|1]: seat 1 [0|2] on the left (2, 1); seat 0 [1|1] (2, 1); seat 1 [1|2] on the
    #   left (1, 1); neither can follow: blocked, seat 0 holds 0 pips against 4: 4 points.
    tree = build_tree(OPEN)
    ts = OPEN.tile_set
    hands = (ts.mask_of([(0, 0), (0, 1), (1, 1)]), ts.mask_of([(0, 2), (1, 2), (2, 2)]))
    root = next(r for r in range(tree.num_roots) if tuple(tree.root_hands[r]) == hands and tree.root_leader[r] == 0)
    response = best_response(tree, lowest_move_policy(tree, 0), 0)
    leads = [ts.tiles[int(a) >> 1] for a in tree.info_actions(int(tree.infostate[root]))]
    assert leads == [(0, 0), (0, 1), (1, 1)]
    first = tree.first_child[root]
    assert response.node_value[first : first + 3].tolist() == [4.0, 4.0, 4.0]
    assert response.node_value[root] == 4.0


def test_the_equilibrium_of_a_game_with_no_hidden_tiles_is_worth_its_search_value():
    tree = build_tree(OPEN)
    solver = CFRSolver(tree)
    for _ in range(300):
        solver.iterate()
    policy = solver.average_policy()
    assert nash_conv(tree, policy) < 1e-3

    def minimax(rnd: Round) -> float:
        if rnd.result is not None:
            return rnd.result.side_values("zero_sum")[0]
        values = []
        for action in rnd.legal_actions():
            child = rnd.copy()
            child.apply(action)
            values.append(minimax(child))
        return max(values) if rnd.current == 0 else min(values)

    exact = float(np.dot(tree.root_probability, [minimax(tree.start(r)) for r in range(tree.num_roots)]))
    assert expected_value(tree, policy) == pytest.approx(exact, abs=1e-3)


def test_mean_award_is_the_uniform_games_mean_points(tiny, game):
    def walk(state):
        if state.is_terminal():
            return abs(state.returns()[0])
        if state.is_chance_node():
            return sum(p * walk(state.child(a)) for a, p in state.chance_outcomes())
        legal = state.legal_actions()
        return sum(walk(state.child(a)) for a in legal) / len(legal)

    assert mean_award(tiny) == pytest.approx(walk(game.new_initial_state()))


def test_discounted_cfr_converges_too(tiny):
    solver = CFRSolver(tiny, "dcfr")
    for _ in range(50):
        solver.iterate()
    assert nash_conv(tiny, solver.average_policy()) < 0.01 * mean_award(tiny)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="two-player"):
        build_tree(Rules(num_players=3, max_pip=2, hand_size=1))
    tree = build_tree(TINY)
    with pytest.raises(ValueError, match="one probability per action slot"):
        nash_conv(tree, np.ones(3))
    with pytest.raises(ValueError, match="sum to 1"):
        nash_conv(tree, np.zeros(tree.num_slots))
    with pytest.raises(ValueError, match="algorithm must be one of"):
        CFRSolver(tree, "cfr")
    with pytest.raises(ValueError, match="seat must be 0 or 1"):
        best_response(tree, uniform_policy(tree), 2)


def test_solve_writes_a_policy_the_solved_agent_plays(tmp_path):
    from conftest import agent_plays_legal_round

    from block_env.agents import make_agent
    from block_env.cli import main

    assert (
        main(
            [
                "solve",
                "--rules",
                "tiny",
                "--iterations",
                "50",
                "--agents",
                "greedy",
                f"solved:{tmp_path}",
                "--out",
                str(tmp_path),
                "--quiet",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "solve.json").read_text())
    assert summary["information_states"] == 516 and summary["iterations"] == 50
    assert [row["agent"] for row in summary["agents"]] == ["CFR+ average policy", "greedy", f"solved:{tmp_path}"]
    assert summary["curve"][-1]["nash_conv"] < 0.01 * summary["mean_award"]
    policy = read_policy(tmp_path)
    assert policy.rules == TINY and len(policy.info_seat) == 516
    agent = make_agent(f"solved:{tmp_path}", "tiny", seed=1)
    agent_plays_legal_round(agent, "tiny", seed=2)

    # Played from either seat, the agent is seat 0's half of the solved policy.
    from block_env.training.solve import agent_policy

    tree = build_tree(TINY)
    solved = agent_policy(tree, f"solved:{tmp_path}")
    mine = np.flatnonzero(np.repeat(tree.info_seat, np.diff(tree.info_offset)) == 0)
    np.testing.assert_allclose(solved[mine], policy.probability[mine])
    assert nash_conv(tree, solved) < 0.02 * summary["mean_award"]
    with pytest.raises(ValueError, match="is for"):
        make_agent(f"solved:{tmp_path}", "small")
    with pytest.raises(ValueError, match="no solved policy"):
        make_agent(f"solved:{tmp_path / 'nothing'}", "tiny")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "policy.npz").write_bytes(b"PK\x03\x04 not a whole archive")
    with pytest.raises(ValueError, match="is not a solved policy written by"):
        make_agent(f"solved:{corrupt}", "tiny")
