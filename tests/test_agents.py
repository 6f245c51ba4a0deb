"""Agents: legal play everywhere, decisions from public information only, scripted choices."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import PASS, L, R, assert_same_decisions_under_redeals, play, scripted_env

from block_env import PRESETS, Rules, raw_env
from block_env.agents import HumanAgent, StrategicAgent, make_agent, parse_spec
from block_env.agents.scripted import StrategyWeights
from block_env.engine import PublicView
from block_env.observations import layout_for, read_moves, read_public_view
from block_env.options import ENCODINGS

SCRIPTED = ["random", "greedy", "strategic", "search:worlds=4", "search:worlds=4,engine=scalar"]


def shipped_network(preset: str) -> str:
    """The shipped network that plays ``preset`` alone (``pretrained:partnership`` hands its
    endgame to a search; ``pretrained:partnership_average`` is its network)."""
    return "pretrained:partnership_average" if preset == "partnership" else f"pretrained:{preset}"


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("observation", ENCODINGS)
def test_every_agent_plays_only_legal_actions(preset, observation):
    rules = Rules.preset(preset)
    env = raw_env(rules, observation=observation, episode="match")
    for game in range(2):
        env.reset(seed=game)
        agents = [
            make_agent(SCRIPTED[(s + game) % len(SCRIPTED)], rules, seed=s, observation=observation)
            for s in range(rules.num_players)
        ]
        steps = 0
        while not all(env.terminations.values()) and steps < 5000:
            agent = env.agent_selection
            obs = env.observe(agent)
            action = agents[env.agent_name_mapping[agent]].act(obs)
            assert obs["action_mask"][action] == 1
            env.step(action)
            steps += 1
        assert all(env.terminations.values()), "the match did not end"


@pytest.mark.parametrize(
    "spec, preset",
    [(spec, preset) for spec in SCRIPTED for preset in ["standard", "standard_3p", "partnership"]]
    # trained agents too: a deployed policy reads only its seat's observation
    + [(f"pretrained:{preset}", preset) for preset in ["standard", "standard_3p", "partnership"]]
    # and the searches they guide
    + [
        ("search:worlds=4,prior=pretrained:standard_vector,playout=policy,leaf=value", "standard"),
        ("search:worlds=4,prior=pretrained:partnership_vector,playout=policy", "partnership"),
    ],
)
def test_seeded_agents_decide_the_same_under_permuted_hidden_tiles(spec, preset):
    """Same public history, hidden tiles dealt differently: the same decision."""
    assert_same_decisions_under_redeals(spec, Rules.preset(preset))


def test_same_seed_same_decisions_and_reset_reseeds():
    rules = Rules()
    env = scripted_env(rules, [[(0, 1), (0, 2), (0, 3), (0, 4)], [(1, 1), (2, 2)]], leader=0)
    obs = env.observe("player_0")
    agent = make_agent("random", rules, seed=5)
    first = [agent.act(obs) for _ in range(20)]
    agent.reset(seed=5)
    assert [agent.act(obs) for _ in range(20)] == first
    assert len(set(first)) > 1


def test_greedy_plays_heaviest_tile_and_doubles_first_on_ties():
    rules = Rules()
    env = scripted_env(rules, [[(2, 6), (4, 4), (0, 1)], [(1, 1)]], leader=0)
    assert make_agent("greedy", rules).act(env.observe("player_0")) == rules.tile_set.action((4, 4), L)
    env = scripted_env(rules, [[(1, 6), (3, 4), (2, 2)], [(1, 1)]], leader=0)
    assert make_agent("greedy", rules).act(env.observe("player_0")) == rules.tile_set.action((1, 6), L)


def test_strategic_keeps_a_suit_the_opponent_lacks_on_the_ends():
    rules = Rules()
    ts = rules.tile_set
    hands = [[(5, 5), (3, 5), (2, 6), (4, 5), (1, 1)], [(3, 6), (0, 1), (1, 2)]]
    env = scripted_env(rules, hands, leader=0)
    play(env, [((5, 5), L), PASS, ((3, 5), R), ((3, 6), R)])  # seat 1 passed on 5|5; ends 5|6
    obs = env.observe("player_0")
    assert read_public_view(obs, rules).voids[1] == 1 << 5
    keep_five = ts.action((2, 6), R)  # ends 5|2: seat 1 still cannot follow the 5
    heavier = ts.action((4, 5), L)  # ends 4|6, one pip heavier
    assert make_agent("greedy", rules).act(obs) == heavier
    assert make_agent("strategic", rules).act(obs) == keep_five
    blind = StrategicAgent(rules, weights=dataclasses.replace(StrategyWeights(), opponent_void=0.0))
    assert blind.act(obs) == heavier  # the void is what made the difference


def _lock_position(rules: Rules, hand: list[tuple[int, int]]) -> PublicView:
    """Ends 0|6 with every other six in the line: [0|6] on the 0 would show 6|6, which
    nobody else can follow."""
    ts = rules.tile_set
    played = [(1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6), (0, 1)]
    return PublicView(
        rules=rules,
        hand=ts.mask_of(hand),
        ends=(0, 6),
        played=ts.mask_of(played),
        opening=ts.tile_index((6, 6)),
        leader=1,
        to_play=0,
        hand_counts=(len(hand), 4),
        voids=(0, 0),
        passes=0,
        scores=(0, 0),
        legal=(),
    )


@pytest.mark.parametrize(
    "hand, locks",
    [([(0, 6), (0, 0)], True), ([(0, 6), (0, 0), (5, 5), (4, 5)], False)],
    ids=["light-locks", "heavy-keeps-open"],
)
def test_strategic_blocks_on_purpose_only_when_light(hand, locks):
    rules = Rules()
    ts = rules.tile_set
    k = _lock_position(rules, hand)
    agent = StrategicAgent(rules)
    lock = agent.score(k, ts.action((0, 6), L))
    keep_open = agent.score(k, ts.action((0, 0), L))
    assert (lock > keep_open) is locks


def test_search_agent_validates_its_options():
    with pytest.raises(ValueError, match="worlds must be a positive int"):
        make_agent("search:worlds=0", Rules())
    with pytest.raises(ValueError, match="playout must be"):
        make_agent("search:playout=smart", Rules())
    with pytest.raises(ValueError, match="leaf must be one of"):
        make_agent("search:leaf=deep", Rules())
    with pytest.raises(ValueError, match="read a trained prior's network"):
        make_agent("search:playout=policy", Rules())
    with pytest.raises(ValueError, match="read a trained prior's network"):
        make_agent("search:prior=strategic,leaf=value", Rules())
    with pytest.raises(ValueError, match="prior must be one of .* or a trained agent's spec, got 'greedy'"):
        make_agent("search:prior=greedy", Rules())
    with pytest.raises(ValueError, match="prior 'random:' is not a trained agent"):
        make_agent("search:prior=random:", Rules())
    with pytest.raises(ValueError, match="unknown pretrained agent 'nope'"):
        make_agent("search:prior=pretrained:nope", Rules())
    with pytest.raises(ValueError, match="runs on the batched engine"):
        make_agent("search:prior=pretrained:standard_vector,engine=scalar", Rules())
    with pytest.raises(ValueError, match="playout_temperature must be a finite number >= 0.0, got -1"):
        make_agent("search:prior=pretrained:standard_vector,playout=policy,playout_temperature=-1", Rules())
    with pytest.raises(
        ValueError, match="playout_temperature \\(0.5\\) sets the temperature .* needs playout='policy'"
    ):
        make_agent("search:prior=pretrained:standard_vector,playout_temperature=0.5", Rules())
    with pytest.raises(ValueError, match="no value_scale"):  # its agent.json names no value head units
        make_agent("search:prior=pretrained:standard_3p_vector,leaf=value", "standard_3p")
    with pytest.raises(ValueError, match="cannot play"):
        make_agent("search:prior=pretrained:standard_vector", "standard_3p")
    with pytest.raises(ValueError, match="bad options for agent 'greedy'"):
        make_agent("greedy:depth=3", Rules())
    with pytest.raises(
        ValueError,
        match=r"a prior that reads 'tracked' \(pretrained:standard\) reads the round's moves from the 'history'",
    ):
        make_agent("search:prior=pretrained:standard", Rules(), observation="vector")
    assert make_agent("search:prior=pretrained:standard", Rules()).observation == "history"
    with pytest.raises(ValueError, match="belief must be one of"):
        make_agent("search:belief=yes", Rules())
    with pytest.raises(ValueError, match="belief='prior' read a trained prior's network"):
        make_agent("search:belief=prior", Rules())
    with pytest.raises(
        ValueError, match="belief='prior' reads the round's moves from the 'history' encoding, got 'vector'"
    ):
        make_agent("search:prior=pretrained:standard_vector,belief=prior", Rules(), observation="vector")
    assert make_agent("search:prior=pretrained:standard_vector,belief=prior", Rules()).observation == "history"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("alphazero", "unknown agent 'alphazero'"),
        ("", "non-empty string"),
        ("policy", "needs a path"),
        ("search:worlds", "not key=value"),
        ("greedy:observation=bogus", "observation must be one of 'vector', 'history', 'tracked'; got 'bogus'"),
    ],
)
def test_bad_agent_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        make_agent(spec, Rules())


def test_parse_spec():
    assert parse_spec("search:worlds=96,playout=random,epsilon=0.5") == (
        "search",
        {"worlds": 96, "playout": "random", "epsilon": 0.5},
    )
    assert parse_spec("policy:runs/a:b") == ("policy", {"path": "runs/a:b"})
    assert parse_spec("search:prior_mirror=false,playout=True") == (
        "search",
        {"prior_mirror": False, "playout": "True"},
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ("search:worlds=true", "search worlds must be a positive int, got True"),
        ("search:epsilon=false", "search epsilon must be in 0..1, got False"),
        ("search:confidence=true", "search confidence must be a non-negative number, got True"),
        ("search:prior=pretrained:standard,prior_mirror=1", "search prior_mirror must be a bool, got 1"),
        (
            "search:prior=strategic,prior_mirror=true",
            "search prior_mirror reads a trained prior .* got prior='strategic'",
        ),
    ],
)
def test_a_yes_or_no_where_a_number_belongs_is_refused_by_name(spec, message):
    """Specs read true and false as booleans; a number option refuses them (Python counts a
    bool as an int) rather than running with 1 or 0."""
    with pytest.raises(ValueError, match=message):
        make_agent(spec, Rules())
    # an infinite confidence is a number: the prior's move is never overridden
    assert make_agent("search:confidence=inf", Rules()).confidence == float("inf")


def test_agents_refuse_an_all_zero_mask():
    rules = Rules()
    env = raw_env(rules)
    env.reset(seed=0)
    off_turn = [a for a in env.agents if a != env.agent_selection][0]
    for spec in SCRIPTED:
        with pytest.raises(ValueError, match="not this seat's turn"):
            make_agent(spec, rules).act(env.observe(off_turn))


def test_human_agent_shows_the_board_lists_moves_and_re_asks_bad_input():
    rules = Rules()
    env = scripted_env(rules, [[(1, 4), (4, 6), (2, 2)], [(3, 5), (1, 6)]], leader=1)
    play(env, [((1, 6), L)])  # ends 1|6
    answers = iter(["", "seven", "0", "9", "2"])
    out: list[str] = []
    human = HumanAgent(rules, read=lambda prompt: next(answers), write=out.append)
    action = human.act(env.observe("player_0"))
    text = "\n".join(out)
    assert "Ends: 1 (left) | 6 (right)" in text
    assert "Your hand: [1|4] [2|2] [4|6]" in text
    assert "1) [1|4] on left" in text and "2) [4|6] on right" in text
    assert text.count("is not a move here") == 4
    assert action == rules.tile_set.action((4, 6), R)


def test_human_agent_passes_when_forced_without_asking():
    rules = Rules()
    env = scripted_env(rules, [[(1, 4), (2, 2)], [(3, 5), (0, 6)]], leader=0)
    play(env, [((1, 4), L)])
    human = HumanAgent(rules, read=lambda prompt: pytest.fail("asked"), write=lambda s: None)
    assert human.act(env.observe("player_1")) == rules.tile_set.pass_action


@pytest.mark.parametrize("preset", ["standard", "standard_4p", "double_nine_4p"])
def test_batched_baselines_choose_as_they_do_one_by_one(preset):
    """greedy's act_batch is its act; random's act_batch plays legal moves, all of them."""
    rules = Rules.preset(preset)
    env = raw_env(rules)
    observations, masks = [], []
    for game in range(40):
        env.reset(seed=game)
        rng = np.random.default_rng(game)
        for _ in range(int(rng.integers(0, 6))):
            if all(env.terminations.values()):
                break
            env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        if not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            observations.append(obs)
            masks.append(obs["action_mask"].astype(bool))
    greedy = make_agent("greedy", rules)
    assert greedy.act_batch(None, np.array(masks)).tolist() == [greedy.act(o) for o in observations]
    random_agent = make_agent("random", rules, seed=1)
    chosen = np.stack([random_agent.act_batch(None, np.array(masks)) for _ in range(300)])
    assert all(m[a] for row in chosen for m, a in zip(masks, row))
    assert any(mask.sum() > 4 for mask in masks)
    for j, mask in enumerate(masks):  # every legal move drawn, however many there are
        assert set(chosen[:, j].tolist()) == set(np.flatnonzero(mask).tolist())


GUIDED = [
    ("standard", "search:worlds=6,prior=pretrained:standard_vector"),
    ("standard", "search:worlds=6,prior=pretrained:standard_vector,playout=policy"),
    ("standard", "search:worlds=6,prior=pretrained:standard_vector,leaf=value"),
    ("standard", "search:worlds=6,prior=pretrained:standard_vector,playout=policy,leaf=value"),
    ("standard", "search:worlds=6,prior=pretrained:standard_vector,playout=policy,belief=prior"),
    ("partnership", "search:worlds=4,prior=pretrained:partnership_vector,belief=prior,confidence=0"),
    *(
        (preset, f"search:worlds=4,prior=pretrained:{prior},belief=prior,playout={playout}")
        for preset, prior in (("standard_3p", "standard_3p_vector"), ("standard_4p", "standard_4p_vector"))
        for playout in ("heuristic", "policy")
    ),
    ("standard", "search:worlds=4,prior=pretrained:standard,playout=policy,belief=prior"),
    ("standard_3p", "search:worlds=4,prior=pretrained:standard_3p,playout=policy"),
    ("partnership", "search:worlds=4,prior=pretrained:partnership_average,playout=policy,belief=prior,confidence=0"),
    ("standard", "search:worlds=4,prior=pretrained:standard,playout=policy,belief=prior,playout_temperature=0"),
]


def test_a_playout_temperature_near_zero_plays_the_networks_best_moves():
    """playout_temperature=0 plays the prior's best move at every playout turn: a temperature
    just above it (whose draws are the best move unless two logits tie) searches the same
    values on the same seed, while the prior's own distribution (the default) draws others."""
    rules = Rules()
    env = raw_env(rules)
    env.reset(seed=2)
    spec = "search:worlds=8,prior=pretrained:standard,playout=policy"
    observations, masks = [], []
    while not env.episode_over and len(observations) < 4:
        obs = env.observe(env.agent_selection, "history")
        if obs["action_mask"].sum() > 1:
            observations.append(obs["observation"])
            masks.append(obs["action_mask"].astype(bool))
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    searched = {
        temperature: make_agent(f"{spec},playout_temperature={temperature}", rules, seed=3).search_moves(
            np.array(observations), np.array(masks)
        )
        for temperature in (0, 1e-6, 1)
    }
    assert len(searched[0]) == 4
    assert all(np.array_equal(a.values, b.values) for a, b in zip(searched[0], searched[1e-6]))
    assert not all(np.array_equal(a.values, b.values) for a, b in zip(searched[0], searched[1]))


@pytest.mark.parametrize("preset, spec", GUIDED)
def test_policy_guided_search_plays_legal_moves_and_is_seeded(preset, spec):
    """Whole rounds against itself, each seat observing in its own encoding: every move
    legal, and the same seed plays the same round."""
    rules = Rules.preset(preset)

    def round_moves(seed: int) -> list[int]:
        env = raw_env(rules)
        env.reset(seed=seed)
        agents = [make_agent(spec, rules, seed=10 + s) for s in range(rules.num_players)]
        moves = []
        while not env.episode_over:
            agent = agents[env.agent_name_mapping[env.agent_selection]]
            obs = env.observe(env.agent_selection, agent.observation)
            action = agent.act(obs)
            assert obs["action_mask"][action] == 1
            moves.append(action)
            env.step(action)
        return moves

    for seed in range(2):
        assert round_moves(seed) == round_moves(seed)


@pytest.mark.parametrize("encoding", ["history", "tracked"])
def test_a_guided_search_reading_another_encoding_writes_its_priors_input_and_plays_the_same(encoding):
    """A search that reads "history" or "tracked" hands its "vector" prior the position in
    the prior's own encoding (match scores included): over a match, the same seed makes the
    same moves as the search that reads "vector"."""
    rules = Rules()
    spec = "search:worlds=4,prior=pretrained:standard_vector,playout=policy"
    env = raw_env(rules, episode="match")
    env.reset(seed=3)
    reading = {e: make_agent(spec, rules, seed=5, observation=e) for e in ("vector", encoding)}
    decided, scored = 0, False
    while not env.episode_over:
        choices = {e: agent.act(env.observe(env.agent_selection, e)) for e, agent in reading.items()}
        assert choices["vector"] == choices[encoding]
        decided += 1
        scored |= any(env.public_view(env.agent_selection).scores)
        env.step(choices["vector"])
    assert decided > 20 and scored


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "standard_4p", "partnership"])
def test_a_search_guided_by_a_tracked_prior_writes_who_placed_what_in_its_worlds(preset):
    """A prior that reads "tracked" sees, in the worlds the search lays out, the round's
    moves as the search read them from "history": a search that never overrides its prior
    (an infinite confidence) moves as the prior does on the seat's real "tracked"
    observation, at every decision of a match."""
    rules = Rules.preset(preset)
    prior = shipped_network(preset)
    search = make_agent(f"search:worlds=3,prior={prior},playout=policy,confidence=inf", rules, seed=0)
    alone = make_agent(prior, rules, seed=0)
    assert search.observation == "history" and alone.observation == "tracked"
    env = raw_env(rules, episode="match")
    env.reset(seed=4)
    tracked_decisions = 0
    while not env.episode_over and tracked_decisions < 12:
        seat = env.agent_selection
        action = search.act(env.observe(seat, "history"))
        if env.observe(seat)["action_mask"].sum() > 1:
            assert action == alone.act(env.observe(seat, "tracked"))
            tracked_decisions += len(read_moves(env.observe(seat, "history"), rules)) > 1
        env.step(action)
    assert tracked_decisions == 12


def test_guided_search_plays_legal_moves_with_three_players():
    rules = Rules.preset("standard_3p")
    env = raw_env(rules)
    env.reset(seed=1)
    agent = make_agent("search:worlds=4,prior=pretrained:standard_3p_vector,playout=policy", rules, seed=0)
    while not env.episode_over:
        obs = env.observe(env.agent_selection)
        action = agent.act(obs)
        assert obs["action_mask"][action] == 1
        env.step(action)


def _positions(rules: Rules, count: int, encoding: str = "vector") -> list[dict]:
    """Observations of the seat to move after a few random moves of ``count`` fresh rounds."""
    rng = np.random.default_rng(0)
    found = []
    for seed in range(100):
        env = raw_env(rules)
        env.reset(seed=seed)
        for _ in range(int(rng.integers(1, 9))):
            env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        if not env.episode_over:
            found.append(env.observe(env.agent_selection, encoding))
        if len(found) == count:
            return found
    raise AssertionError("too few positions")


@pytest.mark.parametrize(("prior", "encoding"), [("pretrained:standard", "tracked"), ("strategic", "vector")])
def test_a_search_with_hand_at_most_searches_only_its_late_decisions(prior, encoding):
    """``hand_at_most``: where the seat holds more tiles the move is the prior's (as the prior
    alone plays it on its own encoding), elsewhere the search's (as the same search without
    the option chooses from the same seed), in one batch of both kinds."""
    rules = Rules()
    reads = "history" if encoding == "tracked" else "vector"
    positions = [o for o in _positions(rules, 40, reads) if o["action_mask"].sum() > 1]
    own = [o for o in _positions(rules, 40, encoding) if o["action_mask"].sum() > 1]
    observations = np.stack([o["observation"] for o in positions])
    masks = np.stack([o["action_mask"] for o in positions])
    gated = make_agent(f"search:worlds=4,prior={prior},confidence=0,hand_at_most=5", rules, seed=3)
    full = make_agent(f"search:worlds=4,prior={prior},confidence=0", rules, seed=3)
    held = np.array([gated.view(o).hand_counts[0] for o in positions])
    early, late = np.flatnonzero(held > 5), np.flatnonzero(held <= 5)
    alone = np.array([make_agent(prior, rules, seed=0).act(o) for o in own])
    searched = full.act_batch(observations, masks)
    # the two kinds of move differ on both kinds of decision, so a wrong split shows
    assert (searched[early] != alone[early]).any() and (searched[late] != alone[late]).any()
    chosen = gated.act_batch(observations, masks)
    assert chosen[early].tolist() == alone[early].tolist()
    full.reset(seed=3)
    assert chosen[late].tolist() == full.act_batch(observations[late], masks[late]).tolist()
    with pytest.raises(ValueError, match="search_moves searches every position"):
        gated.search_moves(observations, masks)
    with pytest.raises(ValueError, match="hand_at_most must be an int >= 2, got 1"):
        make_agent("search:prior=strategic,hand_at_most=1", rules)
    with pytest.raises(ValueError, match="hand_at_most plays the prior's move .* needs a prior, got prior='none'"):
        make_agent("search:prior=none,hand_at_most=3", rules)
    with pytest.raises(ValueError, match="hand_at_most runs on the batched engine"):
        make_agent("search:engine=scalar,hand_at_most=3", rules)


@pytest.mark.parametrize("preset", ["standard_3p", "standard_4p", "partnership"])
def test_a_sampled_world_with_the_rounds_record_is_observed_in_tracked_as_the_real_position(preset):
    """A world laid out with the round's moves as "history" lists them (relative seats, this
    seat 0) is observed in "tracked" from the searching seat exactly as the real position:
    who placed which tile against which ends, at every seat count."""
    from block_env.batched import BatchedGames
    from block_env.observations import batch_encoder

    rules = Rules.preset(preset)
    tracked = batch_encoder(rules, "tracked")
    search = make_agent(f"search:worlds=3,prior={shipped_network(preset)},playout=policy", rules, seed=0)
    rng = np.random.default_rng(1)
    for seed in range(4):
        env = raw_env(rules)
        env.reset(seed=seed)
        for _ in range(int(rng.integers(4, 12))):
            env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        history, real = (env.observe(env.agent_selection, e) for e in ("history", "tracked"))
        k = search.view(history)
        moves = read_moves(history, rules)
        dealt = search.sample_worlds(k)
        seats, actions = (np.array([[m[i] for m in moves]] * len(dealt), dtype=np.int64) for i in (0, 1))
        games = BatchedGames(rules, len(dealt))
        games.set_positions(
            dealt, ends=k.ends, played=np.array([k.played >> i & 1 for i in range(rules.tile_set.num_tiles)], bool),
            current=0, leader=k.leader, passes=k.passes, voids=np.array(k.voids), opening=k.opening,
            scores=np.array(k.scores), record=(actions, seats, len(moves)),
        )  # fmt: skip
        seen = tracked(games, np.arange(len(dealt)), np.zeros(len(dealt), dtype=np.int64))
        assert len(moves) >= 4 and all(np.array_equal(row, real["observation"]) for row in seen)
    with pytest.raises(ValueError, match=r"record num_moves must be in 0\.\.2"):
        games.set_positions(
            dealt, ends=None, played=np.zeros(rules.tile_set.num_tiles, bool), current=0, leader=0, passes=0,
            voids=np.zeros(rules.num_players, np.int64), record=(actions[:, :2], seats[:, :2], 3),
        )  # fmt: skip
    with pytest.raises(ValueError, match=r"record moves and move_seats are \(3, K\) arrays"):
        games.set_positions(
            dealt, ends=None, played=np.zeros(rules.tile_set.num_tiles, bool), current=0, leader=0, passes=0,
            voids=np.zeros(rules.num_players, np.int64), record=(actions[:1], seats[:1], 1),
        )  # fmt: skip


def test_a_sampled_world_is_observed_exactly_as_the_real_position():
    """What a guided search's network reads in each sampled world, from the searching seat,
    is that seat's real observation: only the hidden hands differ; laid out one position per
    batch (facts shared by every game) or several in one batch (facts per game)."""
    from block_env.batched import BatchedGames
    from block_env.observations import batch_encoder

    rules = Rules()
    encode = batch_encoder(rules, "vector")
    search = make_agent("search:worlds=5,prior=pretrained:standard_vector,playout=policy", rules, seed=0)
    positions = _positions(rules, 4)
    views = [search.view(obs) for obs in positions]
    worlds = [search.sample_worlds(k) for k in views]
    played = [np.array([k.played >> i & 1 for i in range(rules.tile_set.num_tiles)], dtype=bool) for k in views]
    for obs, k, dealt, seen_played in zip(positions, views, worlds, played):
        games = BatchedGames(rules, len(dealt))
        games.set_positions(
            dealt, ends=k.ends, played=seen_played, current=0, leader=k.leader, passes=k.passes,
            voids=np.array(k.voids), opening=k.opening,
        )  # fmt: skip
        seen = encode(games, np.arange(len(dealt)), np.zeros(len(dealt), dtype=np.int64))
        assert all(np.array_equal(row, obs["observation"]) for row in seen)
    each = [len(w) for w in worlds]
    games = BatchedGames(rules, sum(each))
    games.set_positions(
        np.concatenate(worlds),
        ends=np.repeat([(-1, -1) if k.ends is None else k.ends for k in views], each, axis=0),
        played=np.repeat(played, each, axis=0),
        current=0,
        leader=np.repeat([k.leader for k in views], each),
        passes=np.repeat([k.passes for k in views], each),
        voids=np.repeat([k.voids for k in views], each, axis=0),
        opening=np.repeat([-1 if k.opening is None else k.opening for k in views], each),
    )
    seen = encode(games, np.arange(sum(each)), np.zeros(sum(each), dtype=np.int64))
    expected = np.repeat([obs["observation"] for obs in positions], each, axis=0)
    np.testing.assert_array_equal(seen, expected)


@pytest.mark.parametrize("preset", ["standard", "partnership"])
def test_search_decides_many_games_in_one_batch_as_it_decides_each_alone(preset):
    """``act_batch`` (a vector env's opponent) chooses for each game what ``act`` chooses for
    that game alone from the same sampled worlds. The playouts here have no random moves, so
    each game's choice depends only on its worlds: the g-th game's are drawn from the agent's
    stream after g earlier decisions' draws."""
    rules = Rules.preset(preset)
    positions = _positions(rules, 6)
    positions.append({**positions[0], "action_mask": np.eye(rules.tile_set.num_actions, dtype=np.int8)[0]})
    spec = "search:worlds=12,playout=greedy,epsilon=0,prior=none"
    batch = make_agent(spec, rules, seed=7)
    chosen = batch.act_batch(
        np.stack([o["observation"] for o in positions]), np.stack([o["action_mask"] for o in positions])
    )
    alone = make_agent(spec, rules, seed=7)
    draws = 0
    for obs, action in zip(positions, chosen):
        assert obs["action_mask"][action] == 1
        alone.reset(seed=7)
        for _ in range(draws):
            alone.rng.getrandbits(63)
        assert alone.act(obs) == action
        draws += int(obs["action_mask"].sum() > 1)  # a forced move samples no worlds
    with pytest.raises(ValueError, match=r"rows \[1\] are all zeros"):
        batch.act_batch(
            np.stack([positions[0]["observation"]] * 2),
            np.stack([positions[0]["action_mask"], np.zeros_like(positions[0]["action_mask"])]),
        )


@pytest.mark.parametrize("given_first", [False, True])
@pytest.mark.parametrize("preset", ["standard", "partnership"])
def test_ranked_playouts_in_one_compiled_call_end_as_the_move_by_move_greedy_playouts(preset, given_first):
    """play_out_ranked (a greedy search without random moves plays its worlds out so) ends
    every game with the same result and the same tiles left as play_out with the compiled
    greedy chooser, one step per move, from the same mid-round positions; with
    ``first_moves`` (a search's move in each world), as that move stepped first and then the
    move-by-move playout."""
    from block_env.agents.scripted import GREEDY_WEIGHTS, greedy_rank
    from block_env.agents.search_playouts import heuristic_moves, play_out, play_out_ranked
    from block_env.batched import BatchedGames, BatchResults, CompiledPolicies

    rules = Rules.preset(preset)
    stepped, ranked = BatchedGames(rules, 64, seed=3), BatchedGames(rules, 64, seed=3)
    rng = np.random.default_rng(0)
    for _ in range(5):  # a few random moves first: positions mid-round
        live = np.flatnonzero(~stepped.over)
        masks = stepped.legal_mask(live)
        moves = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        for games in (stepped, ranked):
            games.step(moves, live)
    live = np.flatnonzero(~stepped.over)
    policy = CompiledPolicies.build([greedy_rank(rules)], rules.tile_set.num_actions)
    first, ended_first = None, []
    if given_first:  # the last legal move, which the greedy rank would not always choose
        masks = stepped.legal_mask(live)
        first = np.array([np.flatnonzero(m)[-1] for m in masks])
        ranked_choice = np.where(masks, policy.ranks[0], np.iinfo(np.int64).min).argmax(axis=1)
        assert (first != ranked_choice).any()  # so the first moves are not what the playout would play
        ended_first = [stepped.step(first, live)]
    rest = play_out(stepped, live[~stepped.over[live]], heuristic_moves(stepped, GREEDY_WEIGHTS, 0.0, seed=1))
    a = BatchResults.concatenate([*ended_first, rest], rules.num_players, rules.num_sides)
    b = play_out_ranked(ranked, live, policy, first_moves=first)
    order_a, order_b = np.argsort(a.games), np.argsort(b.games)
    assert len(a.games) == len(live) and np.array_equal(a.games[order_a], b.games[order_b])
    assert np.array_equal(a.side_values("zero_sum")[order_a], b.side_values("zero_sum")[order_b])
    assert np.array_equal(stepped.owner, ranked.owner)


def test_search_moves_reports_every_legal_moves_value_in_every_world():
    """Without a prior the search chooses the move with the best mean value; with one it
    keeps the prior's move unless the best wins by ``confidence`` standard errors."""
    rules = Rules()
    positions = [o for o in _positions(rules, 8) if o["action_mask"].sum() > 1]
    observations = np.stack([o["observation"] for o in positions])
    masks = np.stack([o["action_mask"] for o in positions])
    searched = make_agent("search:worlds=6,prior=none", rules, seed=2).search_moves(observations, masks)
    for obs, s in zip(positions, searched):
        assert s.legal == np.flatnonzero(obs["action_mask"]).tolist() and s.values.shape == (len(s.legal), 6)
        assert s.choice == s.legal[int(np.argmax(s.means))]
        np.testing.assert_allclose(s.means, s.values.mean(axis=1))
    # an infinitely cautious search never leaves its prior's move
    stubborn = make_agent("search:worlds=6,prior=pretrained:standard_vector,confidence=1e9", rules, seed=2)
    prior = make_agent("pretrained:standard_vector", rules)
    assert [s.choice for s in stubborn.search_moves(observations, masks)] == [prior.act(o) for o in positions]
    assert make_agent("search", rules).search_moves(observations[:0], masks[:0]) == []
    with pytest.raises(ValueError, match="batched engine"):
        make_agent("search:engine=scalar", rules).search_moves(observations, masks)


@pytest.mark.parametrize("preset", ["standard", "standard_3p"])
def test_search_is_a_batched_opponent_of_the_vector_env(preset):
    """The vector env hands search every waiting game in one call (an illegal choice would
    raise there); the learner's rounds finish with rewards."""
    from block_env.opponents import BatchOpponent
    from block_env.vector_env import BlockDominoesVectorEnv

    search = make_agent("search:worlds=4", preset, seed=0)
    assert isinstance(search, BatchOpponent)
    env = BlockDominoesVectorEnv(16, preset, opponents=[search])
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(40):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks()])
        _, rewards, terminated, _, _ = env.step(actions)
        finished += int(terminated.sum())
    assert finished > 0


def test_policy_values_are_the_torch_value_head_in_points():
    import torch

    rules = Rules()
    agent = make_agent("pretrained:standard_vector", rules)
    env = raw_env(rules)
    env.reset(seed=2)
    obs = np.stack([env.observe(a)["observation"] for a in env.possible_agents])
    with torch.no_grad():
        expected = agent.policy.predict_values(torch.as_tensor(obs)).numpy()[:, 0] / agent.value_scale
    np.testing.assert_allclose(agent.values(obs), expected, rtol=1e-5, atol=1e-4)


# -- a trained policy's sampled moves ------------------------------------------------------------


class _LastDraw:
    """An RNG whose every draw is the largest float below 1: a sampler's rounding edge."""

    def random(self) -> float:
        return float(np.nextafter(1.0, 0.0))


def _sampling_policy(seed: int = 0):
    from block_env.agents import PRETRAINED_DIR
    from block_env.agents.policy import PolicyAgent

    return PolicyAgent(Rules(), seed=seed, path=PRETRAINED_DIR / "standard_vector", deterministic=False)


def test_a_sampled_move_is_legal_even_when_rounding_leaves_the_weights_short_of_the_draw():
    """With every draw at the top of [0, 1) the sampler takes each position's last legal move;
    on one of these positions the softmax's float32 cumulative sum ends below such a draw, where
    a sampler that counts the cumulative sums below it would run off the end to the (illegal)
    pass."""
    from block_env.agents.policy import sample_legal

    masks = np.array([[True, True, True, True, False]])
    logits = np.where(masks, np.array([[0.2, -0.6, -0.4, -1.1, 0.0]], dtype=np.float32), -np.inf)
    assert sample_legal(logits, masks, np.array([np.nextafter(1.0, 0.0)])).tolist() == [3]
    positions = _positions(Rules(), 12)
    observations = np.stack([o["observation"] for o in positions])
    masks = np.stack([o["action_mask"] for o in positions]).astype(bool)
    agent = _sampling_policy()
    agent.rng = _LastDraw()
    last_legal = [int(np.flatnonzero(m)[-1]) for m in masks]
    assert agent.act_batch(observations, masks).tolist() == last_legal
    assert [agent.act(o) for o in positions] == last_legal


def test_a_sampling_policy_chooses_in_a_batch_what_it_chooses_one_by_one():
    """The same seed and observations: ``act_batch`` over them all, or ``act`` on each in turn."""
    positions = _positions(Rules(), 12) * 5
    observations = np.stack([o["observation"] for o in positions])
    masks = np.stack([o["action_mask"] for o in positions])
    batch = _sampling_policy(seed=3).act_batch(observations, masks)
    one_by_one = _sampling_policy(seed=3)
    assert batch.tolist() == [one_by_one.act(o) for o in positions]
    copies = batch.reshape(5, 12)  # each position's five choices: it did sample
    assert any(len(set(copies[:, k])) > 1 for k in range(12))


def _random_agent_folder(folder, rules, observation="vector", pi=(16,), activation="tanh", value_scale=None):
    """An agent folder holding a freshly initialised network (its own random weights)."""
    from block_env.agents.policy import build_policy, policy_shape, save_agent

    arch = {"pi": list(pi), "vf": [16]}
    policy = build_policy(policy_shape(rules, observation, arch, activation))
    return save_agent(policy, folder, rules, observation, arch, activation, value_scale=value_scale)


def test_averaging_agent_folders_writes_the_weight_mean_of_their_policies_and_the_first_value_head(tmp_path):
    """average_agent_folders: every policy tensor is the members' mean, the value head and
    value_scale are the first member's, the members' order does not change the average, and
    the averaged agent plays; fewer than two members, an output folder that holds files (left
    as it was), other rules, another encoding, other layers (wider or deeper, in either order)
    or another activation are refused by name."""
    import torch

    from block_env.agents.policy import ACTOR_KEYS, CRITIC_KEYS, average_agent_folders

    rules = Rules()
    members = [_random_agent_folder(tmp_path / f"m{i}", rules, value_scale=0.5 + i) for i in range(3)]
    out = average_agent_folders(members, tmp_path / "average")
    states = [torch.load(m / "policy.pth", weights_only=True) for m in members]
    average = torch.load(out / "policy.pth", weights_only=True)
    for key, tensor in average.items():
        expected = sum(s[key].double() for s in states) / 3 if key.startswith(ACTOR_KEYS) else states[0][key].double()
        assert key.startswith(ACTOR_KEYS + CRITIC_KEYS)
        torch.testing.assert_close(tensor.double(), expected, rtol=0, atol=1e-7)
    reordered = torch.load(
        average_agent_folders(members[::-1], tmp_path / "reordered") / "policy.pth", weights_only=True
    )
    assert all(torch.equal(reordered[key], average[key]) for key in average if key.startswith(ACTOR_KEYS))
    assert json.loads((out / "agent.json").read_text())["value_scale"] == 0.5
    env = raw_env(rules)
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    assert obs["action_mask"][make_agent(f"policy:{out}", rules, seed=0).act(obs)] == 1

    with pytest.raises(ValueError, match="needs two agent folders at least, got 1"):
        average_agent_folders(members[:1], tmp_path / "one")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="taken already exists and is not an empty folder"):
        average_agent_folders(members, tmp_path / "taken")
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"  # nothing lost
    other_rules = _random_agent_folder(tmp_path / "3p", Rules.preset("standard_3p"))
    with pytest.raises(ValueError, match=r"3p was trained for .* it cannot play"):
        average_agent_folders([members[0], other_rules], tmp_path / "x")
    tracked = _random_agent_folder(tmp_path / "tracked", rules, observation="tracked")
    with pytest.raises(
        ValueError, match=r"tracked was trained for .*'tracked' encoding; it cannot play .* with 'vector'"
    ):
        average_agent_folders([members[0], tracked], tmp_path / "x")
    wider = _random_agent_folder(tmp_path / "wider", rules, pi=(24,))
    with pytest.raises(
        ValueError, match=r"wider's network does not have this one's layers \(mlp_extractor\.policy_net\.0\.weight"
    ):
        average_agent_folders([members[0], wider], tmp_path / "x")
    deeper = _random_agent_folder(tmp_path / "deeper", rules, pi=(16, 16))
    for pair in ([members[0], deeper], [deeper, members[0]]):  # refused whichever comes first
        with pytest.raises(
            ValueError, match=r"network does not have this one's layers \(mlp_extractor\.policy_net\.2\."
        ):
            average_agent_folders(pair, tmp_path / "x")
    relu = _random_agent_folder(tmp_path / "relu", rules, activation="relu")
    with pytest.raises(ValueError, match="relu uses activation 'relu', not 'tanh'"):
        average_agent_folders([members[0], relu], tmp_path / "x")
    assert not (tmp_path / "x").exists()


ENDGAME_SEARCH = "search:worlds=8,playout=greedy,epsilon=0,prior=none"


def test_an_agent_with_an_endgame_search_plays_its_late_decisions_by_that_search(tmp_path):
    """add_endgame_search: the decisions with two or more legal moves at hand_at_most tiles or
    fewer, but the last tile, are the search's (some differ from the network's), every other
    one the network's;
    the move is a function of the observation (another seed, another instance, act_batch
    over many rows: the same moves), network_only() and a search guided by it read the
    network alone."""
    from block_env.agents import PRETRAINED_DIR, SearchAgent
    from block_env.agents.policy import PolicyAgent, add_endgame_search, load_agent_metadata
    from block_env.observations import tracked_layout

    rules = Rules.preset("partnership")
    out = add_endgame_search(PRETRAINED_DIR / "partnership_average", tmp_path / "endgame", ENDGAME_SEARCH, 3)
    assert load_agent_metadata(out)["endgame"] == {"hand_at_most": 3, "search": ENDGAME_SEARCH}
    agent = make_agent(f"policy:{out}", rules, seed=0)
    again = make_agent(f"policy:{out}", rules, seed=99)
    network = make_agent("pretrained:partnership_average", rules)
    assert agent.deterministic and agent.network_only().endgame is None
    hand_count = tracked_layout(rules).slices["hand_counts"].start
    env = raw_env(rules, observation="tracked")
    rows, masks, late, searched_differently = [], [], 0, 0
    for game in range(12):
        env.reset(seed=game)
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            action = agent.act(obs)
            assert action == again.act(obs) == agent.act(obs)
            if obs["action_mask"].sum() > 1 and 2 <= obs["observation"][hand_count] <= 3:
                late += 1
                searched_differently += action != network.act(obs)
            else:
                assert action == network.act(obs) == agent.network_only().act(obs)
            rows.append(obs["observation"])
            masks.append(obs["action_mask"].astype(bool))
            env.step(action)
    assert late > 20 and searched_differently > 0
    batched = agent.act_batch(np.array(rows), np.array(masks))
    assert batched.tolist() == [agent.act({"observation": o, "action_mask": m}) for o, m in zip(rows, masks)]
    # A sampling agent draws only for the network's rows, in order, in a batch as one by one.
    samplers = [PolicyAgent(rules, seed=5, path=out, deterministic=False) for _ in range(2)]
    assert not samplers[0].deterministic
    one_by_one = [samplers[0].act({"observation": o, "action_mask": m}) for o, m in zip(rows, masks)]
    assert samplers[1].act_batch(np.array(rows), np.array(masks)).tolist() == one_by_one
    guided = SearchAgent(rules, seed=0, worlds=4, prior=f"policy:{out}", playout="policy")
    assert guided.guide is not None and guided.guide.endgame is None  # no search inside the search


def test_endgame_search_settings_are_checked_before_anything_is_written(tmp_path):
    """A bad hand count (one tile held is never searched), a spec that is not a search, a bad
    search option, a search off the batched engine or reading an encoding the agent's
    observations do not hold, a folder that holds files (left as it was) and an agent that
    already has an endgame are refused by name, nothing written; so is a malformed endgame in
    agent.json."""
    from block_env.agents import PRETRAINED_DIR
    from block_env.agents.policy import add_endgame_search, load_agent_metadata

    source = PRETRAINED_DIR / "partnership_average"
    out = tmp_path / "new" / "x"
    for hand in (1, 0, -1, 2.5, True):
        with pytest.raises(ValueError, match=f"the endgame's hand_at_most must be an int of 2 or more, got {hand!r}"):
            add_endgame_search(source, out, ENDGAME_SEARCH, hand)
    with pytest.raises(ValueError, match="the endgame's player must be a search spec .* got 'greedy'"):
        add_endgame_search(source, out, "greedy", 3)
    with pytest.raises(ValueError, match="reads the 'history' encoding, which the agent's 'tracked' observations"):
        add_endgame_search(source, out, "search:prior=pretrained:partnership_average,belief=prior", 3)
    with pytest.raises(ValueError, match=r"endgame search 'search:wrlds=3': bad options for agent 'search'"):
        add_endgame_search(source, out, "search:wrlds=3", 3)
    with pytest.raises(ValueError, match="endgame search 'search:engine=scalar' must run on the batched engine"):
        add_endgame_search(source, out, "search:engine=scalar", 3)
    with pytest.raises(ValueError, match="the endgame's own hand_at_most says which decisions it searches"):
        add_endgame_search(source, out, "search:hand_at_most=2", 3)
    assert not (tmp_path / "new").exists()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="taken already exists and is not an empty folder"):
        add_endgame_search(source, tmp_path / "taken", ENDGAME_SEARCH, 3)
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    once = add_endgame_search(source, tmp_path / "once", ENDGAME_SEARCH, 3)
    with pytest.raises(ValueError, match="already hands its endgame to"):
        add_endgame_search(once, tmp_path / "twice", ENDGAME_SEARCH, 2)
    metadata = json.loads((once / "agent.json").read_text())
    for bad, message in (
        ({"hand_at_most": 3}, "endgame must be"),
        ({"hand_at_most": 1, "search": "search"}, "the endgame's hand_at_most must be an int of 2 or more, got 1"),
        ({"hand_at_most": 3, "search": "greedy"}, "the endgame's player must be a search spec"),
        ([], "endgame must be"),
    ):
        (once / "agent.json").write_text(json.dumps({**metadata, "endgame": bad}))
        with pytest.raises(ValueError, match=f"agent.json: {message}"):
            load_agent_metadata(once)


def test_the_endgame_command_writes_an_agent_that_plays(tmp_path, capsys):
    from block_env.cli import main

    out = tmp_path / "agent"
    assert main(["endgame", "--agent", "pretrained:standard", "--hand-at-most", "2", "--out", str(out)]) == 0
    assert f"play it as policy:{out}" in capsys.readouterr().out
    env = raw_env("standard", observation="tracked")  # what pretrained:standard reads
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    assert obs["action_mask"][make_agent(f"policy:{out}", "standard", seed=0).act(obs)] == 1


@pytest.mark.parametrize(
    ("preset", "source"),
    [("standard", "standard_tracked"), ("standard", "standard_vector"), ("partnership", "partnership_average")],
)
def test_an_agent_playing_both_ways_reads_a_position_and_its_mirror_alike(tmp_path, preset, source):
    """play_both_ways: after the opening the agent's logits are the mean of its network's for the
    position and, read back onto the same ends, for its mirror image, so a position and its
    mirror get mirrored logits; openings are the network's own. Its moves (act, act_batch,
    network_only) are those logits' best legal move, and some differ from the network's."""
    from block_env.agents import PRETRAINED_DIR
    from block_env.agents.policy import load_agent_metadata, play_both_ways

    rules = Rules.preset(preset)
    out = play_both_ways(PRETRAINED_DIR / source, tmp_path / "both")
    assert load_agent_metadata(out)["mirror"] is True
    agent, network = make_agent(f"policy:{out}", rules, seed=0), make_agent(f"pretrained:{source}", rules)
    assert agent.mirror and agent.network_only().mirror and not network.mirror
    layout = layout_for(rules, agent.observation)
    columns, actions = layout.mirror_columns, rules.tile_set.mirror_actions
    env = raw_env(rules, observation=agent.observation)
    rows, masks, openings, differ = [], [], 0, 0
    for game in range(6):
        env.reset(seed=game)
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            row, mask = obs["observation"], obs["action_mask"].astype(bool)
            logits = agent.logits(row)
            if row[layout.slices["ends"]].any():
                mirrored = row[columns]
                expected = (network.logits(row) + network.logits(mirrored)[actions]) / 2
                np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
                np.testing.assert_allclose(agent.logits(mirrored)[actions], logits, rtol=1e-5, atol=1e-5)
            else:
                openings += 1
                assert np.array_equal(logits, network.logits(row))
            action = agent.act(obs)
            assert action == int(np.where(mask, logits, -np.inf).argmax()) == agent.network_only().act(obs)
            differ += action != network.act(obs)
            rows.append(row)
            masks.append(mask)
            env.step(action)
    assert openings >= 6 and differ > 0
    batched = agent.act_batch(np.array(rows), np.array(masks))
    assert batched.tolist() == [agent.act({"observation": o, "action_mask": m}) for o, m in zip(rows, masks)]


def test_a_search_can_read_its_prior_one_way_as_the_same_network_saved_one_way(tmp_path):
    """prior_mirror=false reads a prior that plays both ways round one way: the search then
    plays, move for move, as one guided by the same weights saved without agent.json's mirror
    (its playouts and its weighing of the deals read one position, not two); by default the
    prior reads both ways as its agent.json says. The option needs a trained prior and a bool."""
    import shutil

    from block_env.agents import PRETRAINED_DIR

    one_way = tmp_path / "one_way"
    shutil.copytree(PRETRAINED_DIR / "standard", one_way)
    metadata = json.loads((one_way / "agent.json").read_text())
    assert metadata["mirror"] is True
    (one_way / "agent.json").write_text(json.dumps({**metadata, "mirror": False}))
    settings = "playout=policy,belief=prior,confidence=0,worlds=4"
    read_one_way = make_agent(f"search:prior=pretrained:standard,prior_mirror=false,{settings}", Rules(), seed=3)
    saved_one_way = make_agent(f"search:prior=policy:{one_way},{settings}", Rules(), seed=3)
    both_ways = make_agent(f"search:prior=pretrained:standard,{settings}", Rules(), seed=3)
    assert not read_one_way.guide.mirror and not saved_one_way.guide.mirror and both_ways.guide.mirror
    env = raw_env("standard")
    rows, masks = [], []
    for deal in range(3):
        env.reset(seed=deal)
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection, read_one_way.observation)
            rows.append(obs["observation"])
            masks.append(obs["action_mask"])
            env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    observations, legal = np.array(rows), np.array(masks).astype(bool)
    assert read_one_way.act_batch(observations, legal).tolist() == saved_one_way.act_batch(observations, legal).tolist()
    assert make_agent(f"search:prior=policy:{one_way},prior_mirror=true,{settings}", Rules()).guide.mirror
    with pytest.raises(ValueError, match="search prior_mirror reads a trained prior .* got prior='none'"):
        make_agent("search:prior=none,prior_mirror=false", Rules())


def test_playing_both_ways_is_refused_where_there_are_no_ends_to_swap(tmp_path):
    """An agent already playing both ways, one reading "history" (its move rows imply the
    opening's ends), a folder that holds files (left as it was): refused by name, nothing
    written; agent.json's mirror must be true or false, and true only on an encoding with ends."""
    from block_env.agents import PRETRAINED_DIR
    from block_env.agents.policy import build_policy, load_agent_metadata, play_both_ways, policy_shape, save_agent

    rules = Rules.preset("standard")
    once = play_both_ways(PRETRAINED_DIR / "standard_fifth", tmp_path / "once")
    for mirrored in (once, PRETRAINED_DIR / "standard"):  # the shipped network reads both ways
        with pytest.raises(ValueError, match="already plays both ways round"):
            play_both_ways(mirrored, tmp_path / "twice")
    arch = {"pi": [8], "vf": [8]}
    history = save_agent(
        build_policy(policy_shape(rules, "history", arch, "tanh")), tmp_path / "history", rules, "history", arch, "tanh"
    )
    with pytest.raises(ValueError, match="cannot play both ways round: the 'history' layout has no ends piece"):
        play_both_ways(history, tmp_path / "x")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="taken already exists and is not an empty folder"):
        play_both_ways(PRETRAINED_DIR / "standard_fifth", tmp_path / "taken")
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    assert not (tmp_path / "twice").exists() and not (tmp_path / "x").exists()
    metadata = json.loads((once / "agent.json").read_text())
    for bad in ("yes", 1, None):
        (once / "agent.json").write_text(json.dumps({**metadata, "mirror": bad}))
        with pytest.raises(ValueError, match=r"once/agent.json: mirror must be true or false, got"):
            load_agent_metadata(once)
    history_metadata = json.loads((history / "agent.json").read_text())
    (history / "agent.json").write_text(json.dumps({**history_metadata, "mirror": True}))
    with pytest.raises(ValueError, match="history/agent.json: mirror: the 'history' layout has no ends piece"):
        load_agent_metadata(history)


def test_the_mirror_command_writes_an_agent_that_plays(tmp_path, capsys):
    from block_env.cli import main

    out = tmp_path / "agent"
    assert main(["mirror", "--agent", "pretrained:standard_tracked", "--out", str(out)]) == 0
    assert f"play it as policy:{out}" in capsys.readouterr().out
    env = raw_env("standard", observation="tracked")
    env.reset(seed=0)
    env.step(env.observe(env.agent_selection)["action_mask"].argmax())  # past the opening
    obs = env.observe(env.agent_selection)
    assert obs["action_mask"][make_agent(f"policy:{out}", "standard", seed=0).act(obs)] == 1


def test_a_policy_agents_last_hidden_layer_is_what_its_action_head_reads():
    """The action head applied to last_hidden_layer gives the agent's logits; observations in
    another encoding are refused as logits refuses them."""
    from block_env.agents.policy import network_layers

    agent = make_agent("pretrained:partnership_average", "partnership", seed=0)
    env = raw_env("partnership")
    env.reset(seed=2)
    observations = np.stack([env.observe(seat, "tracked")["observation"] for seat in env.possible_agents])
    hidden = agent.last_hidden_layer(observations)
    weight, bias, activation = network_layers(agent.policy, "actor")[-1]
    assert hidden.shape == (4, weight.shape[0]) and activation is None
    assert np.allclose(hidden @ weight + bias, agent.logits(observations), atol=1e-5)
    with pytest.raises(ValueError, match="reads the 'tracked' encoding"):
        agent.last_hidden_layer(observations[:, :10])
