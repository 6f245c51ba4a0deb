"""The batched engine and the vector envs, side by side with the scalar ones, in one run.

1. Player actions/s and rounds/s of random masked 2-player double-six play: the batched
   engine (N games per call, one action each: masks, the compiled uniform pick, a step and
   the deals of ended rounds; bare, and with the vector encoding of the player to move), the
   batched engine playing whole rounds with every seat uniform inside its compiled loop (as
   the vector env plays random opponents), the scalar engine, and OpenSpiel's
   ``python_block_dominoes``.
2. Learner steps/s (observations and masks) of the vector env against the single env,
   against random opponents and against a frozen policy snapshot; and of the vector env
   against strategic opponents choosing for every waiting game in one call (``act_batch``)
   and game by game (``act``).
3. Memory per game of the batched state.

Rows are interleaved in slices so that the shared machine's drifting speed hits every row
alike. numpy runs single-threaded here (one core):

    python benchmarks/bench_batched.py [--seconds 4] [--games 4096] [--vector-games 1024]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core: numpy's BLAS and torch stay single-threaded

import numpy as np  # noqa: E402
from bench_env import engine_round, open_spiel_round  # noqa: E402
from report_table import add_markdown_argument, show  # noqa: E402

from block_env import Rules  # noqa: E402
from block_env.agents import make_agent, make_env, make_vector_env  # noqa: E402
from block_env.batched import BatchedGames, CompiledPolicies, random_legal_actions  # noqa: E402
from block_env.observations import batch_encoder  # noqa: E402
from block_env.opponents import GameByGame  # noqa: E402

Step = Callable[[], tuple[int, int]]  # one call: (player actions, rounds finished)


def interleaved(rows: dict[str, Step], seconds: float, slices: int = 8) -> dict[str, tuple[float, float]]:
    """Each row's (actions/s, rounds/s), measured for ``seconds`` in ``slices`` turns."""
    totals = {name: [0, 0, 0.0] for name in rows}
    for step in rows.values():
        step()  # warm-up
    for _ in range(slices):
        for name, step in rows.items():
            actions = rounds = 0
            start = time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds / slices:
                a, r = step()
                actions += a
                rounds += r
            totals[name][0] += actions
            totals[name][1] += rounds
            totals[name][2] += elapsed
    return {name: (a / t, r / t) for name, (a, r, t) in totals.items()}


def batched_engine(rules: Rules, games: int, encode: bool) -> Step:
    engine = BatchedGames(rules, games, seed=0)
    encoder = batch_encoder(rules, "vector")
    rng = np.random.default_rng(0)

    def step() -> tuple[int, int]:
        masks = engine.legal_mask()
        if encode:
            encoder(engine, engine.all_games, engine.current)
        results = engine.step(random_legal_actions(masks, rng), check=False)
        engine.advance(results.games)
        return games, len(results.games)

    return step


def compiled_random_play(rules: Rules, games: int) -> Step:
    """Every seat uniform inside the compiled loop (what the vector env does for random
    opponents): each call plays every game's round to its end, then deals the next."""
    engine = BatchedGames(rules, games, seed=0)
    policies = CompiledPolicies.build([None], rules.tile_set.num_actions)
    nobody = np.full(games, -1, dtype=np.int64)  # no learner seat: nobody stops the play
    everyone_uniform = np.zeros((games, rules.num_players), dtype=np.int64)
    streams = np.random.default_rng(0).integers(0, 2**63, size=games, dtype=np.uint64)

    def step() -> tuple[int, int]:
        _, results = engine.play_until_decision(engine.all_games, nobody, everyone_uniform, policies, streams, False)
        actions = int(engine.num_moves.sum())
        engine.advance(results.games)
        return actions, len(results.games)

    return step


def scalar_rows(rules: Rules) -> dict[str, Step]:
    rows: dict[str, Step] = {}
    rng = random.Random(0)
    engine = engine_round(rules)
    rows["scalar engine (block_env.Match)"] = lambda: (engine(rng), 1)
    try:
        plain, observed = open_spiel_round(False), open_spiel_round(True)
        rows["OpenSpiel python_block_dominoes"] = lambda: (plain(rng), 1)
        rows["OpenSpiel + observation_tensor"] = lambda: (observed(rng), 1)
    except ImportError:
        print("open_spiel is not installed (pip install 'block-env[bench]'): OpenSpiel rows skipped")
    return rows


def vector_env(games: int, opponents: list) -> Step:
    env = make_vector_env(games, "standard", opponents=opponents)
    env.reset(seed=0)
    rng = np.random.default_rng(0)

    def step() -> tuple[int, int]:
        _, _, terminated, _, _ = env.step(random_legal_actions(env.action_masks(), rng))
        return games, int(terminated.sum())

    return step


def single_env(opponents: list) -> Step:
    env = make_env("standard", opponents=opponents)
    env.reset(seed=0)
    rng = np.random.default_rng(0)

    def step() -> tuple[int, int]:
        legal = np.flatnonzero(env.action_masks())
        _, _, terminated, _, _ = env.step(int(legal[rng.integers(len(legal))]))
        if terminated:
            env.reset()
        return 1, int(terminated)

    return step


def snapshot_policy(rules: Rules, folder: str) -> str:
    """A frozen (untrained) policy snapshot as an agent folder: what self-play adds."""
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from block_env.agents.policy import save_agent
    from block_env.observations import vector_layout

    torch.manual_seed(0)
    size = vector_layout(rules).size
    policy = MaskableActorCriticPolicy(
        spaces.Box(0.0, np.inf, shape=(size,), dtype=np.float32),
        spaces.Discrete(rules.tile_set.num_actions),
        lr_schedule=lambda _: 0.0,
        net_arch={"pi": [128, 128], "vf": [128, 128]},
    )
    save_agent(policy, folder, rules, "vector", {"pi": [128, 128], "vf": [128, 128]}, "tanh")
    return f"policy:{folder}"


def memory_per_game(rules: Rules, games: int) -> float:
    engine = BatchedGames(rules, games, seed=0)
    return sum(v.nbytes for v in vars(engine).values() if isinstance(v, np.ndarray)) / games


def table(title: str, rows: dict[str, tuple[float, float]], unit: str) -> str:
    lines = [f"| {title} | {unit} | rounds/s |", "|---|---:|---:|"]
    lines += [f"| {name} | {a:,.0f} | {r:,.0f} |" for name, (a, r) in rows.items()]
    return "\n".join(lines)


def main() -> None:
    import tempfile

    import torch

    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per row (interleaved)")
    parser.add_argument("--games", type=int, default=4096, help="N for the batched engine")
    parser.add_argument("--vector-games", type=int, default=1024, help="N for the vector env")
    add_markdown_argument(parser)
    args = parser.parse_args()
    rules = Rules()
    n = args.games

    engines = {
        f"batched engine, N={n}": batched_engine(rules, n, encode=False),
        f"batched engine + vector encoding + masks, N={n}": batched_engine(rules, n, encode=True),
        f"batched engine, compiled random play, N={n}": compiled_random_play(rules, n),
        **scalar_rows(rules),
    }
    engine_rows = interleaved(engines, args.seconds)

    with tempfile.TemporaryDirectory() as tmp:
        snapshot = snapshot_policy(rules, f"{tmp}/snapshot")
        m = args.vector_games
        envs = {
            f"vector env vs random, N={m}": vector_env(m, ["random"]),
            "single env vs random": single_env(["random"]),
            f"vector env vs policy snapshot, N={m}": vector_env(m, [snapshot]),
            "single env vs policy snapshot": single_env([snapshot]),
            f"vector env vs strategic, N={m}": vector_env(m, ["strategic"]),
            f"vector env vs strategic game by game, N={m}": vector_env(m, [GameByGame(make_agent("strategic", rules))]),
        }
        env_rows = interleaved(envs, args.seconds)

    scalar = engine_rows["scalar engine (block_env.Match)"][0]
    bare = engine_rows[f"batched engine, N={n}"][0]
    encoded = engine_rows[f"batched engine + vector encoding + masks, N={n}"][0]
    compiled = engine_rows[f"batched engine, compiled random play, N={n}"][0]
    vec_random = env_rows[f"vector env vs random, N={m}"][0] / env_rows["single env vs random"][0]
    vec_policy = env_rows[f"vector env vs policy snapshot, N={m}"][0] / env_rows["single env vs policy snapshot"][0]
    strategic = (
        env_rows[f"vector env vs strategic, N={m}"][0] / env_rows[f"vector env vs strategic game by game, N={m}"][0]
    )
    summary = [
        "| comparison | measured |",
        "|---|---:|",
        f"| batched engine, one action per game per call, player actions/s | {bare:,.0f} |",
        f"| batched engine, compiled random play, player actions/s | {compiled:,.0f} |",
        f"| batched engine + encoding + masks, player actions/s | {encoded:,.0f} |",
        f"| batched engine (one action per call) / scalar engine | {bare / scalar:.1f}x |",
        f"| batched engine (compiled random play) / scalar engine | {compiled / scalar:.1f}x |",
        f"| batched + encoding + masks / scalar engine | {encoded / scalar:.1f}x |",
        f"| vector env / single env, learner steps/s vs random | {vec_random:.1f}x |",
        f"| vector env / single env, learner steps/s vs policy snapshot | {vec_policy:.1f}x |",
        f"| vector env vs strategic, learner steps/s: in one call / game by game | {strategic:.1f}x |",
        f"| batched state, bytes per game | {memory_per_game(rules, n):,.0f} |",
    ]
    text = "\n\n".join(
        [
            table("engine", engine_rows, "player actions/s"),
            table("env", env_rows, "learner steps/s"),
            "\n".join(summary),
        ]
    )
    print()
    show(text, args.markdown)


if __name__ == "__main__":
    main()
