"""Expert iteration: a search guided by the current policy plays itself, and what it finds
is distilled back into the policy; each round's policy guides the next round's search.

The search (``agents.search.SearchAgent`` with the policy as its prior and as every seat's
playout policy) values each legal move by sampling hidden deals consistent with the public
record and playing every move out in each. Those mean values, as a softmax at
``expert.temperature`` points, are the policy's targets (or, with ``expert.targets:
choice``, the move the search chose); the searched value of the move played is the value
head's. Workers search in parallel processes, each playing
``expert.games`` games at once so that their searches share one batch.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from block_env.agents.search import SearchAgent
from block_env.arena import Estimate
from block_env.arena.play import progress_bar
from block_env.batched import BatchedGames
from block_env.files import write_csv_atomically
from block_env.observations import batch_encoder
from block_env.rules import Rules
from block_env.seeding import derive_seed
from block_env.training.config import ExpertConfig, TrainConfig
from block_env.training.curves import CurveLine, head_to_head, plot_curve
from block_env.training.teaching import (
    decisions_in_processes,
    fit_policy,
    move_value_targets,
    one_hot_targets,
    save_policy_agent,
)

EXPERT_CSV = "expert.csv"
EXPERT_PNG = "expert.png"
#: Pieces each worker's share of a round is searched in (the progress bar's steps).
CHUNKS_PER_WORKER = 8


def round_agent_name(k: int) -> str:
    """The agent folder name of round ``k``'s policy (round 0: the starting policy)."""
    return f"expert_round_{k}"


def search_decisions(student: str, rules: Rules, expert: ExpertConfig, decisions: int, seed: int) -> dict[str, Any]:
    """One worker: the search guided by the agent folder ``student`` at every seat of
    ``expert.games`` games at once until ``decisions`` decisions with two or more legal
    moves are searched. Returns their observations, masks, every legal move's mean value
    (NaN elsewhere; zero-sum points of the deciding side), the move played (the search's
    choice) and its value."""
    from threadpoolctl import threadpool_limits

    teacher = SearchAgent(
        rules,
        seed=derive_seed(seed, "teacher"),
        worlds=expert.worlds,
        prior=f"policy:{student}",
        playout="policy",
        confidence=expert.confidence,
    )
    games = BatchedGames(rules, expert.games, seed=derive_seed(seed, "deals"))
    encode = batch_encoder(rules, "vector")
    observations, masks, values, played, choices = [], [], [], [], []
    with threadpool_limits(1, user_api="blas"):  # one process per core: BLAS threads would only wait
        while len(played) < decisions:
            legal = games.legal_mask().astype(bool)
            actions = legal.argmax(axis=1)  # the forced moves
            deciding = np.flatnonzero(legal.sum(axis=1) > 1)
            obs = encode(games, deciding, games.current[deciding])
            for i, row, searched in zip(deciding, obs, teacher.search_moves(obs, legal[deciding])):
                actions[i] = searched.choice
                move_values = np.full(legal.shape[1], np.nan, dtype=np.float32)
                move_values[searched.legal] = searched.means
                observations.append(row)
                masks.append(legal[i])
                values.append(move_values)
                played.append(move_values[searched.choice])
                choices.append(searched.choice)
            games.step(actions, check=False)
            if games.over.any():
                games.advance(np.flatnonzero(games.over))
    return {
        "observations": np.asarray(observations[:decisions], dtype=np.float32),
        "masks": np.asarray(masks[:decisions]),
        "values": np.asarray(values[:decisions], dtype=np.float32),
        "played": np.asarray(played[:decisions], dtype=np.float32),
        "choices": np.asarray(choices[:decisions], dtype=np.int64),
    }


def searched_round(student: Path, config: TrainConfig, k: int, progress: bool) -> dict[str, np.ndarray]:
    """Round ``k``'s decisions, searched in ``expert.workers`` processes, in chunks (each
    with its own seeds) so that a progress bar can follow them."""
    expert = config.expert
    chunks = expert.workers * CHUNKS_PER_WORKER
    sizes = [size for c in range(chunks) if (size := expert.decisions // chunks + (c < expert.decisions % chunks))]
    seeds = [derive_seed(config.seed, f"expert_round_{k}", c) for c in range(len(sizes))]
    tasks = [(str(student), config.resolved_rules(), expert, size, seed) for size, seed in zip(sizes, seeds)]
    with progress_bar(progress, expert.decisions, f"round {k}: searched decisions") as advance:
        return decisions_in_processes(
            search_decisions, tasks, expert.workers, done=lambda part: advance(len(part["played"]))
        )


def measure(agent: Path, config: TrainConfig) -> Estimate:
    """The agent's margin over ``expert.eval_opponent`` on the same duplicate deals every round."""
    return head_to_head(
        f"policy:{agent}",
        config.expert.eval_opponent,
        config.resolved_rules(),
        episode=config.episode,
        deals=config.expert.eval_deals,
        seed=derive_seed(config.seed, "expert_eval"),
        workers=config.expert.workers,
    )


def expert_iteration(model: Any, config: TrainConfig, root: Path, progress: bool = True) -> list[dict[str, Any]]:
    """``expert.rounds`` rounds of search and distillation on ``model``'s policy, in place.
    Each round's policy is saved as the agent folder ``root/expert_round_K`` and measured
    against ``expert.eval_opponent``; the rows (also ``root/expert.csv`` and ``expert.png``)
    are returned. Ctrl-C keeps the rounds already saved (and says how to go on from the last)."""
    expert = config.expert
    last, saved = 0, save_policy_agent(model, root / round_agent_name(0), config)
    rows = [curve_row(0, saved, config)]
    for k in range(1, expert.rounds + 1):
        try:
            started = time.perf_counter()
            stats = distil_round(model, config, searched_round(saved, config, k, progress), k)
            last, saved = k, save_policy_agent(model, root / round_agent_name(k), config)
            rows.append(curve_row(k, saved, config, stats, time.perf_counter() - started))
            write_expert_curve(root, rows, expert.eval_opponent)
        except KeyboardInterrupt:
            print(
                f"interrupted in round {k}: rounds 0..{last} are saved; go on from round {last} with "
                f"pretrain.init_from: policy:{saved} and expert.rounds: {expert.rounds - last}",
                flush=True,
            )
            raise
    return rows


def distil_round(model: Any, config: TrainConfig, data: dict[str, np.ndarray], k: int) -> dict[str, float]:
    """Fit the policy to round ``k``'s searches (``expert.targets``: every move's value as a
    softmax at ``expert.temperature``, or the search's choice) and the value head to the
    searched value of each move played."""
    expert = config.expert
    if expert.targets == "values":
        targets = move_value_targets(data["values"], expert.temperature)
    else:
        targets = one_hot_targets(data["choices"], data["masks"].shape[1])
    return fit_policy(
        model,
        data["observations"],
        data["masks"],
        targets,
        data["played"] * config.reward_scale,
        epochs=expert.epochs,
        batch_size=expert.batch_size,
        learning_rate=expert.learning_rate,
        seed=derive_seed(config.seed, "expert_batches", k),
    )


def curve_row(
    k: int, agent: Path, config: TrainConfig, stats: dict[str, float] | None = None, seconds: float = 0.0
) -> dict[str, Any]:
    """Round ``k``'s learning-curve row (printed too): its policy's margin over
    ``expert.eval_opponent`` and, after a distillation, how it went."""
    margin = measure(agent, config)
    row = {
        "round": k,
        "decisions": int(stats["decisions"]) if stats else 0,
        "seconds": round(seconds, 1),
        "agreement": round(stats["agreement"], 4) if stats else "",
        "accuracy": round(stats["accuracy"], 4) if stats else "",
        "margin": margin.mean,
        "low": margin.low,
        "high": margin.high,
    }
    done = (
        f"{row['decisions']} searched decisions in {seconds:.0f} s, the policy agreed with the search's best "
        f"move on {stats['agreement']:.1%} (after distilling {stats['accuracy']:.1%}); "
        if stats
        else ""
    )
    print(
        f"expert iteration round {k}: {done}- {config.expert.eval_opponent} "
        f"{margin.mean:+.2f} ({margin.low:+.2f}..{margin.high:+.2f})",
        flush=True,
    )
    return row


def write_expert_curve(root: Path, rows: list[dict[str, Any]], opponent: str) -> None:
    """expert.csv and expert.png: each round's margin over ``opponent`` with its 95% interval
    (every round on the same deals)."""
    write_csv_atomically(root / EXPERT_CSV, list(rows[0]), rows)
    line = CurveLine(
        f"policy - {opponent}", [r["margin"] for r in rows], [r["low"] for r in rows], [r["high"] for r in rows]
    )
    plot_curve(
        root / EXPERT_PNG,
        [r["round"] for r in rows],
        [line],
        xlabel="expert iteration round",
        size=(7, 4),
        every_x=True,
    )
