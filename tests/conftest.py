"""Shared helpers: scripted scenarios written in the vocabulary of docs/rules.md."""

from __future__ import annotations

import io
import os
import random
import signal
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from block_env import Rules, raw_env
from block_env.apps.replay import replay_round
from block_env.engine import Round
from block_env.observations import replay_public
from block_env.tiles import LEFT_END, RIGHT_END


def round_of(env) -> Round:
    """The AEC env's current round as an engine Round, rebuilt from its public move record
    (what a test reads the engine's fields from, without reaching into the env)."""
    return replay_round(env.rules, env.current_round_record())[0]


# -- no silent skips in CI -----------------------------------------------------------------------

#: Skips that are expected even in CI, by test id (or a file's path, for every test in it), each
#: with the reason it is expected. Every other skip fails the run where CI is set: a test that
#: cannot run there (a missing package, browser or service) is a failure to fix, not to hide.
EXPECTED_SKIPS: dict[str, str] = {}


def load_benchmark(name: str, monkeypatch) -> Any:
    """The script ``benchmarks/NAME.py`` as a module, with ``benchmarks/`` on the import path
    for this test (a script imports its neighbours, as it does when run)."""
    import importlib.util

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(folder))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def _expected(nodeid: str) -> bool:
    return any(nodeid == key or nodeid.startswith(key + "::") for key in EXPECTED_SKIPS)


def _fail_a_skip_in_ci(report) -> None:
    if in_ci() and report.skipped and not hasattr(report, "wasxfail") and not _expected(report.nodeid):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (CI is set), which hides a test that should run: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_a_skip_in_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield  # a module-level skip (pytest.skip, importorskip) skips the whole file
    _fail_a_skip_in_ci(outcome.get_result())


def _order_seed(config) -> str | None:
    seed = getattr(config.option, "randomly_seed", None)
    return None if seed is None else f"random test order: replay it with --randomly-seed={seed}"


def pytest_sessionstart(session) -> None:
    """Say the random order's seed (pytest-randomly shuffles the tests; -q hides its header)
    first and again in the summary, so that an order-dependent failure can be replayed."""
    line = _order_seed(session.config)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if line and reporter is not None and not hasattr(session.config, "workerinput"):
        reporter.write_line(line)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    line = _order_seed(config)
    if line:
        terminalreporter.write_line(line)


settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")

PASS = "pass"
Move = str | tuple[tuple[int, int], int]
L, R = LEFT_END, RIGHT_END


def action_of(rules: Rules, move: Move) -> int:
    """(tile, end) or "pass" as an action id."""
    ts = rules.tile_set
    if move == PASS:
        return ts.pass_action
    tile, end = move
    return ts.action(tile, end)


def scripted_env(rules: Rules, hands: Sequence[Sequence[tuple[int, int]]], leader: int | None = 0, **kwargs) -> raw_env:
    env = raw_env(rules, **kwargs)
    options: dict = {"hands": [list(h) for h in hands]}
    if leader is not None:
        options["leader"] = leader
    env.reset(seed=0, options=options)
    return env


def play(env: raw_env, moves: Sequence[Move]) -> None:
    for move in moves:
        env.step(action_of(env.rules, move))


def agent_plays_legal_round(agent, rules: Rules | str, seed: int) -> None:
    """``agent`` takes every seat of one round from ``reset(seed)``; each move must be legal."""
    env = raw_env(rules)
    env.reset(seed=seed)
    while not all(env.terminations.values()):
        obs = env.observe(env.agent_selection, agent.observation)  # the encoding it reads
        action = agent.act(obs)
        assert obs["action_mask"][action]
        env.step(action)


def legal_ids(env: raw_env) -> list[int]:
    return [int(a) for a in np.flatnonzero(env.observe(env.agent_selection)["action_mask"])]


@pytest.fixture
def standard() -> Rules:
    return Rules()


def redeal_hidden(rules: Rules, initial_hands: Sequence[int], moves, observer: int, rng) -> list | None:
    """Another deal with the same public history as ``moves`` for ``observer``: the
    observer's hand and every tile another seat placed stay put; every other hidden tile is
    reshuffled among the other seats' unplaced slots and the out-of-play pile, clear of the
    suits a seat showed it lacks (so its passes stay forced). None if no such deal was found."""
    ts = rules.tile_set
    n = rules.num_players
    placed = [0] * n
    for seat, a in moves:
        if a != ts.pass_action:
            placed[seat] |= 1 << (a >> 1)
    voids = [sum(1 << v for v in suits) for suits in replay_public(rules, moves)["voids"]]
    hidden = ((1 << ts.num_tiles) - 1) & ~initial_hands[observer]
    for s in range(n):
        hidden &= ~placed[s]
    pool = ts.tiles_of(hidden)
    rng.shuffle(pool)
    hands = []
    for s in range(n):
        if s == observer:
            hands.append(ts.tiles_of(initial_hands[s]))
            continue
        fits = [t for t in pool if not any(voids[s] >> v & 1 for v in t)]
        slots = initial_hands[s].bit_count() - placed[s].bit_count()
        if len(fits) < slots:
            return None
        mine = fits[:slots]
        pool = [t for t in pool if t not in mine]
        hands.append(ts.tiles_of(placed[s]) + mine)
    return hands


def assert_same_decisions_under_redeals(spec: str, rules: Rules, seeds: int = 12) -> None:
    """Random play to a decision with a real choice, then the same public history with the
    hidden tiles dealt otherwise (:func:`redeal_hidden`): the observations match, and agent
    ``spec`` (seeded alike) decides the same in both, for at least 5 of ``seeds`` deals."""
    from block_env.agents import make_agent

    rng = np.random.default_rng(7)
    shuffle = random.Random(3)
    checked = 0
    for seed in range(seeds):
        env = raw_env(rules)
        env.reset(seed=seed)
        initial = list(round_of(env).hands)
        leader = round_of(env).leader
        for _ in range(int(rng.integers(2, 12))):
            if all(env.terminations.values()):
                break
            env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        if all(env.terminations.values()):
            continue
        observer = env.agent_name_mapping[env.agent_selection]
        hands = redeal_hidden(rules, initial, round_of(env).moves, observer, shuffle)
        if hands is None:
            continue
        other = raw_env(rules)
        other.reset(seed=seed, options={"hands": hands, "leader": leader})
        for _, action in round_of(env).moves:
            other.step(action)
        first, second = make_agent(spec, rules, seed=11), make_agent(spec, rules, seed=11)
        a = env.observe(env.agent_selection, first.observation)  # the encoding it reads
        b = other.observe(other.agent_selection, first.observation)
        assert np.array_equal(a["observation"], b["observation"])
        assert first.act(a) == second.act(b)
        checked += 1
    assert checked >= 5


def default_sigint() -> None:
    """A subprocess's preexec_fn: a background job of a non-interactive shell starts with SIGINT
    ignored, and Python keeps ignoring it; restore the default so Ctrl-C reaches the command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def signal_when(process, sig: int, ready, timeout: float = 240) -> int:
    """Send ``sig`` to ``process`` once ``ready()`` holds (a marker the run writes, at a point
    the run cannot get past by itself, such as :func:`paused_arena`'s); its exit code. The
    process must still be running until then."""
    deadline = time.time() + timeout
    while not ready():
        assert process.poll() is None, f"the run ended before it was signalled: {process.communicate()}"
        assert time.time() < deadline, "the run never got far enough to signal"
        time.sleep(0.01)
    process.send_signal(sig)
    return process.wait(timeout=120)


# The arena's command line with one deal held: deals before it are played and recorded (one
# worker plays them in order), then it touches the marker and waits there for the test's signal.
_PAUSED_ARENA = """
import sys, time
from pathlib import Path

import block_env.arena.play as play
from block_env.cli import main

pause_at, marker = int(sys.argv[1]), Path(sys.argv[2])
play_deal = play.play_deal


def paused(config, deal, seed, agents=None):
    if deal == pause_at:
        marker.touch()
        while True:
            time.sleep(1)
    return play_deal(config, deal, seed, agents=agents)


play.play_deal = paused
sys.exit(main(sys.argv[3:]))
"""


def paused_arena(pause_at: int, marker: Path, args: Sequence[str]) -> list[str]:
    """A command running ``block-dominoes ARGS`` (an ``eval`` with ``--workers 1``) that plays and
    records deals 0 to ``pause_at - 1``, touches ``marker`` and waits for a signal: a kill lands
    mid-run, after exactly ``pause_at`` deals, however fast the machine."""
    assert "--workers" in args and args[list(args).index("--workers") + 1] == "1"
    return [sys.executable, "-c", _PAUSED_ARENA, str(pause_at), str(marker), *args]


# -- resumed training -------------------------------------------------------------------------


def spy_on_learning(monkeypatch) -> list[dict]:
    """Each MaskablePPO.learn call of this process from now on: the model's step count and a
    copy of its policy's weights as the call starts."""
    from sb3_contrib import MaskablePPO

    calls: list[dict] = []
    learn = MaskablePPO.learn

    def spy(self, *args, **kwargs):
        weights = {k: v.detach().clone() for k, v in self.policy.state_dict().items()}
        calls.append({"timesteps": self.num_timesteps, "weights": weights})
        return learn(self, *args, **kwargs)

    monkeypatch.setattr(MaskablePPO, "learn", spy)
    return calls


def assert_learning_resumed_from(calls: list[dict], checkpoint: Path) -> None:
    """The one learn call (see :func:`spy_on_learning`) started at the checkpoint's step with
    the checkpoint's weights: a run started again from scratch has other weights and step 0."""
    import torch

    assert len(calls) == 1
    with zipfile.ZipFile(checkpoint) as archive:
        saved = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
    assert calls[0]["timesteps"] == int(checkpoint.stem.split("_")[1]) > 0
    assert saved.keys() == calls[0]["weights"].keys()
    assert all(torch.equal(saved[k], calls[0]["weights"][k]) for k in saved)


def openspiel_state(game, tree, node):
    """OpenSpiel's state at the solver tree's ``node``: the root's deal (seat 0's hand, then
    seat 1's, each in set order), the lot, then the moves."""
    from block_env.tiles import bit_indices

    root = tree.root_of(node)
    state = game.new_initial_state()
    for hand in tree.root_hands[root]:
        for tile in bit_indices(int(hand)):
            state.apply_action(tile)
    if state.is_chance_node():
        state.apply_action(int(tree.root_leader[root]))
    for action in tree.moves(node):
        state.apply_action(action)
    return state


def first_move(view: dict) -> int:
    """The web app's view: the first legal move in the person's hand, else the pass."""
    moves = [m["action"] for tile in view["hand"] for m in tile["moves"]]
    return moves[0] if moves else view["pass_action"]


def play_first_moves(client, view: dict, moves: int | None = None) -> dict:
    """Play the web game's first legal move ``moves`` times (None: to the end), dealing each
    next round; every move must be accepted. Returns the last view."""
    while not view["over"] and moves != 0:
        if view["paused"]:
            view = client.post(f"/api/games/{view['id']}/next").json()
            continue
        response = client.post(f"/api/games/{view['id']}/move", json={"action": first_move(view)})
        assert response.status_code == 200, response.json()
        view = response.json()
        moves = None if moves is None else moves - 1
    return view
