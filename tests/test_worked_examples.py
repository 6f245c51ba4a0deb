"""Every worked example of docs/rules.md, played through the real environment."""

from __future__ import annotations

import pytest
from conftest import PASS, L, R, play, round_of, scripted_env

from block_env import Rules

NELL = [(6, 6), (4, 6), (2, 4), (1, 5), (0, 3), (2, 2), (1, 1)]
OMAR = [(3, 6), (4, 4), (5, 5), (1, 3), (0, 2), (1, 6), (0, 5)]
# The plays of the two-player worked example (docs/rules.md, Worked examples), each with the ends that follow.
SAMPLE_HAND = [
    (((6, 6), L), (6, 6)),
    (((3, 6), R), (6, 3)),
    (((4, 6), L), (4, 3)),
    (((4, 4), L), (4, 3)),
    (((2, 4), L), (2, 3)),
    (((1, 3), R), (2, 1)),
    (((2, 2), L), (2, 1)),
    (((0, 2), L), (0, 1)),
    (((0, 3), L), (3, 1)),
    (((1, 6), R), (3, 6)),
]


def test_sample_hand_nell_and_omar_blocks_and_nell_scores_7():
    env = scripted_env(Rules(), [NELL, OMAR], leader=0, reward="points")
    for move, ends in SAMPLE_HAND:
        play(env, [move])
        assert round_of(env).ends == ends
    # 11. Nell has no 3 or 6 and passes; Omar neither: blocked.
    play(env, [PASS, PASS])
    result = round_of(env).result
    assert result.end == "blocked"
    assert round_of(env).ends == (3, 6)
    assert result.hand_pips == (8, 15)
    assert result.winner == 0 and result.award == 7
    assert env.rewards == {"player_0": 7.0, "player_1": 0.0}
    assert all(env.terminations.values())


def test_three_players_pia_goes_out_and_scores_20():
    pia, quinn, rae = [(0, 5), (5, 5)], [(2, 6), (1, 3)], [(4, 4)]
    env = scripted_env(Rules(num_players=3), [pia, quinn, rae], leader=0, reward="points")
    play(env, [((0, 5), L), PASS, PASS, ((5, 5), R)])
    result = round_of(env).result
    assert result.end == "domino" and result.winner == 0
    assert result.hand_pips == (0, 12, 8)
    assert result.award == 20
    assert env._cumulative_rewards == {"player_0": 20.0, "player_1": 0.0, "player_2": 0.0}


def _blocked_at_once(rules: Rules, hands):
    """Seat 0 opens [6|6] and nobody else holds a six: every seat passes, blocked."""
    env = scripted_env(rules, hands, leader=0, reward="points")
    play(env, [((6, 6), L), PASS, PASS, PASS])
    return round_of(env).result


@pytest.mark.parametrize(
    "hands, totals, winner, award",
    [
        ([[(6, 6), (2, 5)], [(3, 4)], [(4, 5), (0, 4)]], (7, 7, 13), None, 0),
        ([[(6, 6), (1, 2)], [(0, 3)], [(3, 5)]], (3, 3, 8), None, 0),
        ([[(6, 6), (1, 2)], [(3, 4)], [(3, 5)]], (3, 7, 8), 0, 12),
    ],
    ids=["7-7-13", "3-3-8", "3-7-8"],
)
def test_blocked_ties_score_nobody_and_unique_lowest_scores_others_minus_own(hands, totals, winner, award):
    result = _blocked_at_once(Rules(num_players=3), hands)
    assert result.end == "blocked"
    assert result.hand_pips == totals
    assert result.winner == winner
    assert result.award == award


@pytest.mark.parametrize(
    "opponents, award",
    [([[(0, 0)], [(3, 5)]], 8), ([[(1, 4)], [(2, 3)]], 10)],
    ids=["only-double-blank-and-8", "5-and-5"],
)
def test_domino_scores_every_opponents_pips_and_double_blank_is_no_tie(opponents, award):
    env = scripted_env(Rules(num_players=3), [[(6, 6)], *opponents], leader=0)
    play(env, [((6, 6), L)])
    result = round_of(env).result
    assert result.end == "domino" and result.winner == 0 and result.award == award


@pytest.mark.parametrize("scoring, award", [("others_total", 27), ("subtract_own", 23)])
def test_house_rule_blocked_others_total(scoring, award):
    hands = [[(6, 6), (1, 3)], [(2, 4), (0, 5)], [(4, 5), (2, 5)]]
    result = _blocked_at_once(Rules(num_players=3, blocked_scoring=scoring), hands)
    assert result.hand_pips == (4, 11, 16)
    assert result.winner == 0 and result.award == award


def test_house_rule_go_out_against_9_and_14_scores_23():
    env = scripted_env(Rules.preset("house_3p"), [[(6, 6)], [(4, 5)], [(5, 5), (0, 4)]], leader=None)
    play(env, [((6, 6), L)])
    result = round_of(env).result
    assert result.end == "domino" and result.winner == 0 and result.award == 23
