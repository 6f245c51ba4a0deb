"""The batched engine and encoders against the scalar ones, move for move."""

from __future__ import annotations

import numpy as np
import pytest

from block_env import PRESETS, Match, Round
from block_env.batched import PLAYED, BatchedGames
from block_env.engine import next_lead
from block_env.observations import batch_encoder, encoder
from block_env.options import ENCODINGS, EPISODES, REWARDS


def hands_of(games: BatchedGames, game: int) -> list[int]:
    owner = games.owner[game]
    return [sum(1 << int(i) for i in np.flatnonzero(owner == seat)) for seat in range(games.rules.num_players)]


def first_round(games: BatchedGames, game: int) -> Match:
    """The scalar match of a batched game's new episode: the same deal; the leader by lot is
    the batched one, a "heaviest" lead is the scalar engine's own choice."""
    rules = games.rules
    match = Match(rules, 0, hands=hands_of(games, game), leader=int(games.leader[game]))
    check_lead(games, game, match.round)
    return match


def next_round(games: BatchedGames, game: int, match: Match) -> None:
    """The scalar next round: the batched deal, the lead by the scalar rule."""
    match.round = Round.start(games.rules, hands_of(games, game), next_lead(games.rules, match.round))
    check_lead(games, game, match.round)


def check_lead(games: BatchedGames, game: int, rnd: Round) -> None:
    assert games.leader[game] == rnd.leader and games.current[game] == rnd.current
    assert games.forced[game] == rnd.forced_opening


def check_state(games: BatchedGames, game: int, rnd: Round) -> None:
    assert (games.left[game], games.right[game]) == (rnd.left, rnd.right)
    assert games.current[game] == rnd.current and games.passes[game] == rnd.passes
    assert games.counts[game].tolist() == rnd.counts and games.voids[game].tolist() == rnd.voids
    assert hands_of(games, game) == rnd.hands
    assert sum(1 << int(i) for i in np.flatnonzero(games.owner[game] == PLAYED)) == rnd.played


@pytest.mark.parametrize("episode", EPISODES)
@pytest.mark.parametrize("preset", list(PRESETS))
def test_batched_engine_and_encoders_agree_with_the_scalar_ones_move_for_move(preset, episode):
    rules = PRESETS[preset]
    n = 12
    games = BatchedGames(rules, n, episode=episode, seed=11)
    matches = [first_round(games, i) for i in range(n)]
    encoders = {obs: (encoder(rules, obs), batch_encoder(rules, obs)) for obs in ENCODINGS}
    rng = np.random.default_rng(5)
    finished_rounds = finished_episodes = 0
    for _ in range(260 if episode == "match" else 90):
        mask = games.legal_mask()
        for seat in range(rules.num_players):
            seats = np.full(n, seat)
            for scalar_encoder, batched_encoder in encoders.values():
                batched = batched_encoder(games, games.all_games, seats)
                for i, match in enumerate(matches):
                    np.testing.assert_array_equal(batched[i], scalar_encoder(match.round, seat, match.scores))
        actions = np.empty(n, dtype=np.int64)
        for i, match in enumerate(matches):
            legal = match.round.legal_actions()
            assert np.flatnonzero(mask[i]).tolist() == legal
            actions[i] = legal[rng.integers(len(legal))]
        results = games.step(actions)
        ended = {int(g): j for j, g in enumerate(results.games)}
        for i, match in enumerate(matches):
            result = match.step(int(actions[i]))
            check_state(games, i, match.round)
            assert (result is not None) == (i in ended)
            if result is None:
                continue
            j = ended[i]
            assert results.result(j) == result
            assert games.scores[i].tolist() == match.scores
            over = episode == "round" or match.is_over
            assert results.episode_over[j] == over
            winner = result.winning_side if episode == "round" else match.winner_side
            for mode in REWARDS:
                expected = result.side_values(mode, episode_winner=winner, episode_over=over)
                assert results.side_values(mode)[j].tolist() == pytest.approx(expected)
        finished_rounds += len(ended)
        if ended:
            done = results.games
            finished_episodes += int(results.episode_over.sum())
            games.advance(done)
            for j, i in enumerate(done):
                if results.episode_over[j]:
                    matches[i] = first_round(games, int(i))
                else:
                    next_round(games, int(i), matches[i])
    assert finished_rounds > n and finished_episodes > 0


def test_the_batched_encoder_follows_any_layout_of_built_in_and_added_pieces():
    """Offsets come from the layout: built-in pieces in another order, one replaced and one
    added by writers, still encode as the scalar encoder with the same writers does."""
    from block_env.observations import NUMBER, BatchEncoder, Encoder, Layout, Piece, history_layout, vector_layout

    rules = PRESETS["standard_3p"]
    pieces = vector_layout(rules).pieces + history_layout(rules).pieces[2:3]  # + moves
    unseen = Piece("unseen", (1,), rules.tile_set.num_tiles, "tiles neither held nor played", NUMBER)
    bits = [p for p in pieces if p.kind != NUMBER]  # the scalar encoder wants bits first
    numbers = [p for p in pieces if p.kind == NUMBER]
    layout = Layout("mixed", (*reversed(bits), unseen, *reversed(numbers)))
    hand_bits = lambda enc, rnd, seat, piece: rnd.hands[seat] ^ ((1 << enc.num_tiles) - 1)  # noqa: E731
    scalar = Encoder(
        rules,
        layout,
        writers={
            "hand": hand_bits,
            "unseen": lambda enc, rnd, seat, scores: [28 - rnd.counts[seat] - rnd.played.bit_count()],
        },
    )

    def batched_hand(enc, games, g, seats, out, piece):
        out[:] = games.owner[g] != seats[:, None]

    def batched_unseen(enc, games, g, seats, out, piece):
        out[:, 0] = 28 - games.counts[g, seats] - (games.owner[g] == PLAYED).sum(axis=1)

    batched = BatchEncoder(rules, layout, writers={"hand": batched_hand, "unseen": batched_unseen})
    games = BatchedGames(rules, 6, seed=3)
    matches = [first_round(games, i) for i in range(6)]
    rng = np.random.default_rng(0)
    for _ in range(8):
        for seat in range(rules.num_players):
            rows = batched(games, games.all_games, np.full(6, seat))
            for i, match in enumerate(matches):
                np.testing.assert_array_equal(rows[i], scalar(match.round, seat, match.scores))
        mask = games.legal_mask()
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask])
        games.step(actions)
        for i, match in enumerate(matches):
            match.step(int(actions[i]))
    with pytest.raises(ValueError, match=r"no batched writer for piece\(s\) \['unseen'\]"):
        BatchEncoder(rules, layout)


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership"])
def test_the_hidden_hands_piece_matches_the_scalar_rounds(preset):
    """The privileged layout's batched hidden_hands = encode_hidden on the scalar round."""
    from block_env.observations import BatchEncoder, encode_hidden, layout_for, privileged_layout

    rules = PRESETS[preset]
    games = BatchedGames(rules, 5, seed=2)
    matches = [first_round(games, i) for i in range(5)]
    encode = BatchEncoder(rules, privileged_layout(rules, "vector"))
    size = layout_for(rules, "vector").size
    rng = np.random.default_rng(1)
    for _ in range(10):
        for seat in range(rules.num_players):
            rows = encode(games, games.all_games, np.full(5, seat))
            for i, match in enumerate(matches):
                np.testing.assert_array_equal(rows[i, size:], encode_hidden(match.round, seat))
        if games.over.any():  # a round ended: its hands are final, nothing left to step
            break
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in games.legal_mask()])
        games.step(actions)
        for i, match in enumerate(matches):
            match.step(int(actions[i]))
    assert (games.num_moves > 3).all()


def test_an_illegal_action_names_the_game_and_changes_nothing():
    games = BatchedGames(PRESETS["standard"], 4, seed=0)
    mask = games.legal_mask()
    actions = mask.argmax(axis=1)
    bad = actions.copy()
    bad[2] = np.flatnonzero(~mask[2])[0]
    before = {k: v.copy() for k, v in vars(games).items() if isinstance(v, np.ndarray)}
    with pytest.raises(ValueError, match=r"game 2: action \d+ is not legal .*legal actions: "):
        games.step(bad)
    for outside in (-1, PRESETS["standard"].tile_set.num_actions, 2**40):  # no action id, not an index wrapped round
        bad[2] = outside
        with pytest.raises(ValueError, match=rf"game 2: action {outside} is not legal"):
            games.step(bad)
    for key, value in before.items():
        np.testing.assert_array_equal(getattr(games, key), value, err_msg=key)
    with pytest.raises(ValueError, match="shape"):
        games.step(actions[:3])
    games.step(actions)  # the legal ones still play


def test_seeded_batches_repeat_and_autoreset_deals_fresh_rounds():
    def run(seed):
        games = BatchedGames(PRESETS["standard_3p"], 8, seed=seed)
        rng = np.random.default_rng(1)
        trace = []
        for _ in range(60):
            mask = games.legal_mask()
            actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask])
            results = games.step(actions)
            trace.append(results.award.tolist())
            games.advance(results.games)
        return trace, games.owner.copy()

    a, b, c = run(3), run(3), run(4)
    assert a[0] == b[0] and (a[1] == b[1]).all()
    assert not (a[1] == c[1]).all()


@pytest.mark.parametrize("preset", list(PRESETS))
def test_compiled_play_makes_legal_moves_and_scores_as_the_scalar_engine(preset):
    """play_until_decision with every seat compiled (uniform at seat 0, greedy elsewhere):
    each round it plays, replayed move by move through the scalar engine, is legal and ends
    with the same result."""
    from block_env.agents import GreedyAgent
    from block_env.batched import ROUND_OVER, CompiledPolicies

    rules = PRESETS[preset]
    n = 40
    games = BatchedGames(rules, n, seed=3)
    ts = rules.tile_set
    policies = CompiledPolicies.build([None, GreedyAgent(rules).compiled_policy], ts.num_actions)
    seat_policies = np.ones((n, rules.num_players), dtype=np.int64)
    seat_policies[:, 0] = 0
    streams = np.arange(n, dtype=np.uint64) + np.uint64(99)
    for _ in range(3):
        starts = [(games.dealt_hands(g), int(games.leader[g])) for g in range(n)]
        status, results = games.play_until_decision(
            games.all_games, np.full(n, -1), seat_policies, policies, streams, skip_forced=True
        )
        assert (status == ROUND_OVER).all() and sorted(results.games) == list(range(n))
        for j, g in enumerate(results.games):
            hands, leader = starts[g]
            rnd = Round.start(rules, hands, "heaviest" if games.forced[g] >= 0 else leader)
            result = None
            for m in range(int(games.num_moves[g])):
                assert games.move_seats[g, m] == rnd.current
                assert int(games.moves[g, m]) in rnd.legal_actions()
                result = rnd.step(int(games.moves[g, m]))
            assert result is not None and results.result(j) == result
        games.advance(results.games)


def test_first_moves_play_before_the_compiled_policies_and_bad_input_is_refused():
    """play_until_decision's ``first_moves`` are played first, by whichever seat is to move,
    as a step of them would (mid-round, passes included), and change the games; an illegal one
    is refused naming its game, and a wrong count always, before anything moves. set_positions
    refuses hands of the wrong shape."""
    from block_env.agents import GreedyAgent
    from block_env.batched import ROUND_OVER, CompiledPolicies

    rules = PRESETS["standard"]
    n = 40
    policies = CompiledPolicies.build([GreedyAgent(rules).compiled_policy], rules.tile_set.num_actions)
    seat_policies = np.zeros((n, rules.num_players), dtype=np.int64)
    streams = np.zeros(n, dtype=np.uint64)
    given, stepped, greedy = (BatchedGames(rules, n, seed=5) for _ in range(3))
    rng = np.random.default_rng(1)
    for _ in range(6):  # random moves first: positions mid-round, some where a pass is forced
        live = np.flatnonzero(~given.over)
        moves = np.array([rng.choice(np.flatnonzero(m)) for m in given.legal_mask(live)])
        for games in (given, stepped, greedy):
            games.step(moves, live)
    live = np.flatnonzero(~given.over)
    first = np.array([np.flatnonzero(m)[-1] for m in given.legal_mask(live)])
    assert (first == rules.tile_set.pass_action).any() and (first != rules.tile_set.pass_action).any()
    ended = {"stepped": [stepped.step(first, live)]}
    for name, games, games_left, moves in (
        ("given", given, live, first),
        ("stepped", stepped, live[~stepped.over[live]], None),
        ("greedy", greedy, live, None),
    ):
        status, results = games.play_until_decision(
            games_left, np.full(n, -1), seat_policies, policies, streams, skip_forced=False, first_moves=moves
        )
        assert (status == ROUND_OVER).all()
        ended.setdefault(name, []).append(results)
    assert np.array_equal(given.moves, stepped.moves) and np.array_equal(given.owner, stepped.owner)
    awards = {
        name: dict(
            zip(np.concatenate([r.games for r in parts]).tolist(), np.concatenate([r.award for r in parts]).tolist())
        )
        for name, parts in ended.items()
    }
    assert awards["given"] == awards["stepped"] and sorted(awards["given"]) == live.tolist()
    assert not np.array_equal(given.moves, greedy.moves)  # the first moves were played, not greedy's

    fresh = BatchedGames(rules, n, seed=5)
    openings = np.array([np.flatnonzero(m)[-1] for m in fresh.legal_mask()])
    bad = openings.copy()
    bad[3] = int(np.flatnonzero(~fresh.legal_mask(np.array([3]))[0])[0])
    before = fresh.owner.copy()
    with pytest.raises(ValueError, match="game 3"):
        fresh.play_until_decision(
            fresh.all_games, np.full(n, -1), seat_policies, policies, streams, skip_forced=False, first_moves=bad
        )
    assert np.array_equal(fresh.owner, before) and (fresh.num_moves == 0).all()
    with pytest.raises(ValueError, match="first_moves must have shape"):
        fresh.play_until_decision(
            fresh.all_games, np.full(n, -1), seat_policies, policies, streams, skip_forced=False,
            first_moves=openings[:-1], check=False,
        )  # fmt: skip
    with pytest.raises(ValueError, match="hands must have shape"):
        fresh.set_positions(
            np.zeros((n, 3, rules.tile_set.num_tiles), dtype=bool),
            ends=None, played=np.zeros(rules.tile_set.num_tiles, dtype=bool), current=0, leader=0, passes=0,
            voids=np.zeros(rules.num_players, dtype=np.int64),
        )  # fmt: skip
