"""Rules validation, presets, leads, partnerships, club doubling and matches."""

from __future__ import annotations

import dataclasses
import random

import pytest
from conftest import PASS, L, R, legal_ids, play, round_of, scripted_env

from block_env import PRESETS, Match, RoundResult, Rules
from block_env.engine import deal, heaviest_holding, opponents_of, partner_of
from block_env.tiles import tile_set

# -- Rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"num_players": 1}, "num_players"),
        ({"num_players": 5}, "num_players"),
        ({"num_players": True}, "num_players"),
        ({"num_players": 2.0}, "num_players"),
        ({"max_pip": 1}, "max_pip"),
        ({"max_pip": 13}, "max_pip"),
        ({"hand_size": 0}, "hand_size"),
        ({"hand_size": 15}, "hand_size"),  # 2 x 15 > 28 tiles
        ({"num_players": 4, "hand_size": 8}, "hand_size"),
        ({"target": 0}, "target"),
        ({"target": -5}, "target"),
        ({"partnership": True}, "partnership"),  # needs 4 players
        ({"num_players": 3, "partnership": True}, "partnership"),
        ({"partnership": 1}, "partnership"),
        ({"first_lead": "random"}, "first_lead"),
        ({"next_lead": "loser"}, "next_lead"),
        ({"blocked_scoring": "half"}, "blocked_scoring"),
        ({"club_doubling": "yes"}, "club_doubling"),
    ],
)
def test_bad_rules_raise_value_error_naming_the_field(changes, field):
    with pytest.raises(ValueError, match=rf"Rules\.{field}"):
        Rules(**changes)


def test_rules_are_frozen_and_defaults_resolve_per_players():
    rules = Rules()
    with pytest.raises(AttributeError):
        rules.num_players = 3  # type: ignore[misc]
    assert (rules.resolved_hand_size, rules.resolved_target) == (7, 100)
    assert (Rules(num_players=3).resolved_hand_size, Rules(num_players=3).resolved_target) == (5, 61)
    assert (Rules(num_players=4).resolved_hand_size, Rules(num_players=4).resolved_target) == (5, 61)
    p = Rules(num_players=4, partnership=True)
    assert (p.resolved_hand_size, p.resolved_target, p.num_sides) == (7, 100, 2)
    assert Rules(num_players=4, hand_size=7).resolved_hand_size == 7  # the whole set dealt


def test_sets_and_action_layout():
    for max_pip, tiles in [(6, 28), (8, 45), (9, 55)]:
        ts = tile_set(max_pip)
        assert ts.num_tiles == tiles and ts.num_actions == 2 * tiles + 1
        assert ts.tiles[0] == (0, 0) and ts.tiles[1] == (0, 1) and ts.tiles[-1] == (max_pip, max_pip)
        assert all(a <= b for a, b in ts.tiles)
    ts = tile_set(6)
    assert ts.total_pips == 168
    assert all(bin(m).count("1") == 7 for m in ts.suit_masks)  # each suit on 7 tiles
    assert ts.action((3, 6), 1) == 2 * ts.tiles.index((3, 6)) + 1
    assert ts.tile_index((6, 3)) == ts.tile_index((3, 6))


@pytest.mark.parametrize(
    "preset, players, max_pip, hand, target, partnership, first_lead, next_lead, blocked, club",
    [
        ("standard", 2, 6, 7, 100, False, "lot", "rotate", "subtract_own", False),
        ("standard_3p", 3, 6, 5, 61, False, "lot", "rotate", "subtract_own", False),
        ("standard_4p", 4, 6, 5, 61, False, "lot", "rotate", "subtract_own", False),
        ("partnership", 4, 6, 7, 100, True, "lot", "rotate", "subtract_own", False),
        ("house", 2, 6, 7, 100, False, "heaviest", "winner", "others_total", False),
        ("house_3p", 3, 6, 5, 100, False, "heaviest", "winner", "others_total", False),
        ("house_4p", 4, 6, 5, 100, False, "heaviest", "winner", "others_total", False),
        ("house_4p_full", 4, 6, 7, 100, False, "heaviest", "winner", "others_total", False),
        ("highest_double", 2, 6, 7, 100, False, "heaviest", "heaviest", "subtract_own", False),
        ("club", 2, 6, 7, 100, False, "lot", "rotate", "subtract_own", True),
        ("hungarian", 2, 8, 7, 100, False, "lot", "rotate", "subtract_own", False),
        ("double_nine_4p", 4, 9, 10, 61, False, "lot", "rotate", "subtract_own", False),
        ("tiny", 2, 2, 2, 100, False, "lot", "rotate", "subtract_own", False),
        ("small", 2, 3, 2, 100, False, "lot", "rotate", "subtract_own", False),
        ("medium", 2, 3, 3, 100, False, "lot", "rotate", "subtract_own", False),
    ],
)
def test_each_preset_is_the_game_the_rules_page_names(
    preset, players, max_pip, hand, target, partnership, first_lead, next_lead, blocked, club
):
    """docs/rules.md's table of presets, field by field (a double-eight set is max_pip 8...)."""
    rules = Rules.preset(preset)
    assert (rules.num_players, rules.max_pip, rules.resolved_hand_size, rules.resolved_target) == (
        players,
        max_pip,
        hand,
        target,
    )
    assert (rules.partnership, rules.first_lead, rules.next_lead, rules.blocked_scoring, rules.club_doubling) == (
        partnership,
        first_lead,
        next_lead,
        blocked,
        club,
    )


def test_presets_and_unknown_preset():
    assert PRESETS["standard"] == Rules()
    assert Rules.preset("partnership").partnership
    house = Rules.preset("house")
    assert (house.first_lead, house.next_lead, house.blocked_scoring, house.resolved_target) == (
        "heaviest",
        "winner",
        "others_total",
        100,
    )
    with pytest.raises(ValueError, match="unknown rules preset 'nope'"):
        Rules.preset("nope")
    with pytest.raises(ValueError, match="unknown Rules field"):
        Rules.from_dict({"players": 3})


# -- the opening and forced passes ---------------------------------------------------------


def test_opening_is_on_end_0_only_and_gives_low_left_high_right():
    env = scripted_env(Rules(), [[(1, 4), (2, 2)], [(3, 5)]], leader=0)
    ts = env.rules.tile_set
    assert legal_ids(env) == sorted([ts.action((1, 4), L), ts.action((2, 2), L)])
    play(env, [((1, 4), L)])
    assert round_of(env).ends == (1, 4)


def test_pass_only_when_forced_and_then_the_only_action():
    env = scripted_env(Rules(), [[(1, 4), (2, 2)], [(3, 5), (4, 6)]], leader=0)
    play(env, [((1, 4), L)])
    ts = env.rules.tile_set
    assert legal_ids(env) == [ts.action((4, 6), R)]  # [4|6] fits the 4; passing is not allowed
    with pytest.raises(ValueError, match="legal actions"):
        env.step(ts.pass_action)
    play(env, [((4, 6), R)])  # ends 1, 6
    assert legal_ids(env) == [ts.pass_action]  # [2|2] fits nothing
    play(env, [PASS])
    assert round_of(env).voids[0] == (1 << 1) | (1 << 6)  # the pass shows no 1 and no 6


def test_double_stays_in_line_and_tile_fitting_both_ends_has_two_actions():
    env = scripted_env(Rules(), [[(4, 4), (1, 1)], [(1, 4), (0, 6)]], leader=1)
    play(env, [((1, 4), L), ((4, 4), R)])
    assert round_of(env).ends == (1, 4)
    play(env, [PASS])  # [0|6] fits neither
    ts = env.rules.tile_set
    assert legal_ids(env) == [ts.action((1, 1), L)]
    env2 = scripted_env(Rules(), [[(3, 3), (0, 3)], [(1, 2)]], leader=0)
    play(env2, [((3, 3), L), PASS])
    assert legal_ids(env2) == [ts.action((0, 3), L), ts.action((0, 3), R)]


def test_blanks_match_only_blanks():
    env = scripted_env(Rules(), [[(0, 0), (0, 5)], [(2, 3), (0, 1)]], leader=0)
    play(env, [((0, 0), L)])
    ts = env.rules.tile_set
    assert legal_ids(env) == [ts.action((0, 1), L), ts.action((0, 1), R)]


# -- leads ---------------------------------------------------------------------------------


def test_heaviest_double_must_lead_and_is_the_only_legal_action():
    rules = Rules(first_lead="heaviest")
    env = scripted_env(rules, [[(1, 2), (3, 3)], [(5, 5), (0, 6)]], leader=0)  # leader ignored
    assert env.agent_selection == "player_1"
    assert legal_ids(env) == [rules.tile_set.action((5, 5), L)]


def test_heaviest_tile_leads_when_no_double_is_dealt_ties_to_higher_half():
    ts = tile_set(6)
    hands = [ts.mask_of([(3, 5), (0, 1)]), ts.mask_of([(2, 6), (1, 2)])]
    assert heaviest_holding(ts, hands) == (1, ts.tile_index((2, 6)))  # 8 pips each; 6 > 5


def test_rotate_lead_moves_clockwise_whoever_won():
    rules = Rules(num_players=3)
    m = Match(rules, seed=3)
    leaders = [m.round.leader]
    rng = random.Random(0)
    while len(leaders) < 5 and not m.is_over:
        r = m.round
        while not r.is_over:
            m.step(rng.choice(r.legal_actions()))
        if m.is_over:
            break
        m.next_round()
        leaders.append(m.round.leader)
    assert len(leaders) >= 3  # two hand-overs at least, or the check below has nothing to check
    assert all((b - a) % 3 == 1 for a, b in zip(leaders, leaders[1:]))


def test_winner_leads_next_round_and_tied_block_rotates():
    rules = Rules(num_players=3, next_lead="winner")
    env = scripted_env(rules, [[(6, 6)], [(1, 2)], [(3, 4)]], leader=1, episode="match")
    # Seat 1 leads its only tile and is out at once: it wins and leads the next round.
    play(env, [((1, 2), L)])
    assert env.results[-1].winner == 1
    assert round_of(env).leader == 1 and env.agent_selection == "player_1"
    # A tied block: the lead rotates from the previous leader instead.
    env = scripted_env(rules, [[(6, 6), (1, 2)], [(0, 3)], [(3, 5)]], leader=0, episode="match")
    play(env, [((6, 6), L), PASS, PASS, PASS])
    assert env.results[-1].winner is None
    assert round_of(env).leader == 1


# -- partnerships and club doubling --------------------------------------------------------


def test_partnership_domino_scores_the_opposing_sides_pips_to_both_partners():
    rules = Rules.preset("partnership")
    hands = [[(6, 6)], [(1, 2)], [(5, 5)], [(0, 3)]]
    env = scripted_env(rules, hands, leader=0, reward="points")
    play(env, [((6, 6), L)])
    result = round_of(env).result
    assert result.winning_side == 0 and result.award == 3 + 3  # side 1 holds [1|2] and [0|3]
    assert result.side_pips == (10, 6)
    assert env.rewards == {"player_0": 6.0, "player_1": 0.0, "player_2": 6.0, "player_3": 0.0}


def test_partnership_blocked_compares_side_totals():
    rules = Rules.preset("partnership")
    # Seat 0 opens [6|6]; nobody else holds a six. Side 0: 1 + 9 = 10, side 1: 4 + 2 = 6.
    hands = [[(6, 6), (0, 1)], [(0, 4)], [(4, 5)], [(0, 2)]]
    env = scripted_env(rules, hands, leader=0, reward="zero_sum")
    play(env, [((6, 6), L), PASS, PASS, PASS, PASS])
    result = round_of(env).result
    assert result.end == "blocked" and result.winning_side == 1 and result.award == 10 - 6
    assert result.winner == 3  # the lighter partner of the winning side
    assert env.rewards == {"player_0": -4.0, "player_1": 4.0, "player_2": -4.0, "player_3": 4.0}


@pytest.mark.parametrize(
    "hands, moves, doubled",
    [
        ([[(2, 3), (3, 3)], [(0, 1), (1, 5)]], [((2, 3), L), PASS, ((3, 3), R)], True),  # out with a double
        ([[(3, 3), (0, 3)], [(1, 2), (1, 5)]], [((3, 3), L), PASS, ((0, 3), L)], True),  # fitted both ends
        ([[(2, 3), (3, 4)], [(0, 1), (1, 5)]], [((2, 3), L), PASS, ((3, 4), R)], False),
    ],
    ids=["double", "either-end", "plain"],
)
def test_club_doubling(hands, moves, doubled):
    env = scripted_env(Rules(club_doubling=True), hands, leader=0)
    play(env, moves)
    result = round_of(env).result
    plain = sum(a + b for a, b in hands[1])
    assert result.doubled is doubled
    assert result.award == plain * (2 if doubled else 1)
    off = scripted_env(Rules(), hands, leader=0)
    play(off, moves)
    assert round_of(off).result.award == plain


# -- matches -------------------------------------------------------------------------------


def test_match_ends_when_a_side_reaches_the_target_and_keeps_excess():
    rules = Rules(target=30)
    rng = random.Random(1)
    for seed in range(20):
        m = Match(rules, seed=seed)
        while True:
            r = m.round
            while not r.is_over:
                m.step(rng.choice(r.legal_actions()))
            if m.is_over:
                break
            assert max(m.scores) < 30
            m.next_round()
        assert m.scores[m.winner_side] >= 30
        assert m.scores[m.winner_side] == sum(res.award for res in m.results if res.winning_side == m.winner_side)
        with pytest.raises(ValueError, match="match is over"):
            m.next_round()


def test_deal_uses_hand_size_and_leaves_the_rest_out_of_play():
    rules = Rules(num_players=3)
    hands = deal(rules, random.Random(0))
    assert [h.bit_count() for h in hands] == [5, 5, 5]
    assert hands[0] & hands[1] == 0 and hands[1] & hands[2] == 0 and hands[0] & hands[2] == 0


def test_round_result_values_under_every_reward_mode():
    three = RoundResult(
        end="domino", winner=1, winning_side=1, award=12, doubled=False, hand_pips=(5, 0, 7), side_pips=(5, 0, 7)
    )
    assert three.side_values("zero_sum") == [-6.0, 12.0, -6.0]
    assert three.side_values("points") == [0.0, 12.0, 0.0]
    assert three.side_values("win_loss", episode_winner=1) == [-0.5, 1.0, -0.5]
    assert three.side_values("win_loss", episode_winner=1, episode_over=False) == [0.0, 0.0, 0.0]
    tied = dataclasses.replace(three, end="blocked", winner=None, winning_side=None, award=0)
    for mode in ("zero_sum", "points", "win_loss"):
        assert tied.side_values(mode, episode_winner=None) == [0.0, 0.0, 0.0]
    assert RoundResult.from_dict(three.as_dict()) == three
    with pytest.raises(ValueError, match="reward mode must be one of"):
        three.side_values("elo")


def test_seed_streams_are_named_stable_and_independent():
    from block_env.seeding import derive_seed

    assert derive_seed(0, "env", 1) == derive_seed(0, "env", 1)
    seeds = {derive_seed(root, stream, i) for root in (0, 1) for stream in ("env", "teacher") for i in range(50)}
    assert len(seeds) == 200 and all(0 <= s < 2**63 for s in seeds)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="root seed"):
            derive_seed(bad, "env")


def test_a_round_rebuilt_from_a_seats_view_is_the_same_position_in_its_frame():
    """Round.from_view at every turn of a random three-player round: the public facts rotated
    so that the viewing seat is seat 0, its own hand (or every hand, when given), and the same
    legal moves; a wrong number of hands is refused."""
    from block_env.engine import Round

    rules = Rules(num_players=3)
    n = rules.num_players
    rng = random.Random(4)
    match = Match(rules, seed=4)
    rnd = match.round
    while rnd.result is None:
        seat = rnd.current
        view = rnd.public_view(seat)
        turned = [(seat + r) % n for r in range(n)]
        for hands in (None, [rnd.hands[s] for s in turned]):
            position = Round.from_view(view, hands)
            assert (position.ends, position.played, position.passes, position.current) == (
                rnd.ends,
                rnd.played,
                rnd.passes,
                0,
            )
            assert position.counts == [rnd.counts[s] for s in turned]
            assert position.voids == [rnd.voids[s] for s in turned]
            assert position.leader == (rnd.leader - seat) % n
            assert position.hands[0] == rnd.hands[seat] and position.legal_actions() == rnd.legal_actions()
            if hands is not None:
                assert position.hands == hands
        with pytest.raises(ValueError, match=r"hands holds one bitmask per seat \(3\), got 2"):
            Round.from_view(view, [rnd.hands[seat], 0])
        rnd.apply(rng.choice(rnd.legal_actions()))
    assert len(rnd.moves) > n  # several turns checked


@pytest.mark.parametrize("lead", [-1, 2, 1.0, "first"])
def test_a_lead_that_is_not_a_seat_is_refused_naming_the_seats(lead):
    from block_env.engine import Round

    with pytest.raises(ValueError, match=rf"leader must be a seat 0\.\.1, got {lead!r}"):
        Round.start(Rules(), [0b111, 0b111000], lead)


def test_the_smallest_hand_and_target_are_allowed_and_the_largest_hand_is_named():
    assert Rules(hand_size=1).resolved_hand_size == 1 and Rules(target=1).resolved_target == 1
    assert Rules(num_players=4, hand_size=7).resolved_hand_size == 7  # 4 x 7: the whole double-six set
    with pytest.raises(ValueError, match=r"4 players x 8 tiles is more than the 28 tiles .* allowed 1\.\.7$"):
        Rules(num_players=4, hand_size=8)
    with pytest.raises(ValueError, match=r"3 players x 10 tiles is more than the 28 tiles .* allowed 1\.\.9$"):
        Rules(num_players=3, hand_size=10)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_seats_partner_sits_opposite_and_its_opponents_are_the_other_sides_seats_in_turn(preset):
    rules = Rules.preset(preset)
    n = rules.num_players
    for seat in range(n):
        partner = partner_of(rules, seat)
        assert partner == ((seat + 2) % n if rules.partnership else None)
        in_turn = [(seat + r) % n for r in range(1, n)]
        assert opponents_of(rules, seat) == [s for s in in_turn if rules.side_of(s) != rules.side_of(seat)]
        assert partner is None or rules.side_of(partner) == rules.side_of(seat)
