"""Shared helpers: scripted scenarios written in the vocabulary of docs/rules.md."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Sequence

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
    """Send ``sig`` to ``process`` once ``ready()`` holds; its exit code."""
    deadline = time.time() + timeout
    while not ready():
        assert process.poll() is None, process.communicate()
        assert time.time() < deadline, "the run never got far enough to signal"
        time.sleep(0.2)
    process.send_signal(sig)
    return process.wait(timeout=120)
