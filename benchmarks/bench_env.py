"""Random masked play, side by side: block_env (bare engine, AEC env with observations, and
its OpenSpiel game ``block_dominoes``) against OpenSpiel's ``python_block_dominoes`` (plain,
and with observation tensors).

Both games are 2 players, double-six, 7 tiles each. Prints player actions per second and
rounds per second for each, and the ratios. block_env counts its explicit forced passes
as player actions (they are decisions an agent sees); OpenSpiel skips passes implicitly,
so rounds per second is the like-for-like figure and both ratios are printed.

    python benchmarks/bench_env.py [--seconds 5] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

import numpy as np
from report_table import add_markdown_argument, show

import block_env
from block_env import Match, Rules


def bench(
    runs: dict[str, Callable[[random.Random], int]], seconds: float, slices: int = 10
) -> dict[str, tuple[float, float]]:
    """Each ``fn`` (one round, returns player actions) for ``seconds`` in all, interleaved in
    ``slices`` turns so that the shared machine's drifting speed hits every row alike."""
    rngs = {name: random.Random(0) for name in runs}
    totals = {name: [0, 0, 0.0] for name in runs}  # actions, rounds, seconds
    for name, fn in runs.items():
        fn(rngs[name])  # warm-up
    for _ in range(slices):
        for name, fn in runs.items():
            actions = rounds = 0
            start = time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds / slices:
                actions += fn(rngs[name])
                rounds += 1
            totals[name][0] += actions
            totals[name][1] += rounds
            totals[name][2] += elapsed
    return {name: (a / t, r / t) for name, (a, r, t) in totals.items()}


def engine_round(rules: Rules) -> Callable[[random.Random], int]:
    def run(rng: random.Random) -> int:
        match = Match(rules, seed=rng.getrandbits(32))
        rnd = match.round
        n = 0
        while not rnd.is_over:
            legal = rnd.legal_actions()
            match.step(legal[rng.randrange(len(legal))])
            n += 1
        return n

    return run


def aec_round(rules: Rules) -> Callable[[random.Random], int]:
    env = block_env.raw_env(rules)
    env.reset(seed=0)  # later resets continue the env's seeded RNG, as training loops do

    def run(rng: random.Random) -> int:
        env.reset()
        n = 0
        for _agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.randrange(len(legal))]))
            n += 1
        return n

    return run


def open_spiel_round(with_observation: bool, name: str = "python_block_dominoes") -> Callable[[random.Random], int]:
    """Random playouts of an OpenSpiel game: OpenSpiel's own, or ours (``block_dominoes``)."""
    import pyspiel  # noqa: F401  (registers the python games)
    from open_spiel.python.games import block_dominoes  # noqa: F401

    import block_env.openspiel  # noqa: F401  (registers block_dominoes)

    game = pyspiel.load_game(name)

    def run(rng: random.Random) -> int:
        state = game.new_initial_state()
        n = 0
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
                continue
            if with_observation:
                state.observation_tensor(state.current_player())
            legal = state.legal_actions()
            state.apply_action(legal[rng.randrange(len(legal))])
            n += 1
        return n

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per implementation (interleaved)")
    add_markdown_argument(parser)
    args = parser.parse_args()
    rules = Rules()  # 2 players, double-six, 7 each: the same game as OpenSpiel's
    runs = {
        "block_env engine": engine_round(rules),
        "block_env AEC + observations": aec_round(rules),
    }
    try:
        runs["OpenSpiel python_block_dominoes"] = open_spiel_round(False)
        runs["OpenSpiel + observation_tensor"] = open_spiel_round(True)
        runs["block_env in OpenSpiel (block_dominoes)"] = open_spiel_round(False, "block_dominoes")
        runs["block_env in OpenSpiel + observation_tensor"] = open_spiel_round(True, "block_dominoes")
    except ImportError:
        print("open_spiel is not installed (pip install 'block-env[bench]'): OpenSpiel rows skipped")
    rows = bench(runs, args.seconds)

    lines = ["| implementation | player actions/s | rounds/s |", "|---|---:|---:|"]
    lines += [f"| {name} | {a:,.0f} | {r:,.0f} |" for name, (a, r) in rows.items()]
    pairs = [
        ("block_env engine", "OpenSpiel python_block_dominoes"),
        ("block_env AEC + observations", "OpenSpiel + observation_tensor"),
        ("block_env in OpenSpiel (block_dominoes)", "OpenSpiel python_block_dominoes"),
        ("block_env in OpenSpiel + observation_tensor", "OpenSpiel + observation_tensor"),
    ]
    ratio_lines = ["", "| comparison | actions/s ratio | rounds/s ratio |", "|---|---:|---:|"]
    for ours, theirs in pairs:
        if ours in rows and theirs in rows:
            ra = rows[ours][0] / rows[theirs][0]
            rr = rows[ours][1] / rows[theirs][1]
            ratio_lines.append(f"| {ours} / {theirs} | {ra:.1f}x | {rr:.1f}x |")
    table = "\n".join(lines + (ratio_lines if len(ratio_lines) > 3 else []))
    print()
    show(table, args.markdown)


if __name__ == "__main__":
    main()
