"""The arena and training on Ray, side by side with the local paths, in one run.

1. A Ray task's fixed cost: the round trip of an empty task (what batching deals amortises).
2. Arena deals/s: the local process pool against a local Ray with the same CPUs, the same
   agents, deals and seed (the numbers must agree; the script checks).
3. RLlib self-play training env steps/s (configs/rllib.yaml's settings, a few iterations).

    python benchmarks/bench_ray.py [--deals 200] [--cpus 2] [--iterations 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time

import ray

from block_env.arena import evaluate
from block_env.arena.ray import batch_size
from block_env.training.rllib import RLlibConfig, train_rllib


@ray.remote
def _nothing() -> None:
    return None


def task_overhead(tasks: int = 500) -> float:
    """Seconds per empty task, submitted together and awaited (the arena's pattern)."""
    ray.get([_nothing.remote() for _ in range(50)])  # warm the workers
    start = time.perf_counter()
    ray.get([_nothing.remote() for _ in range(tasks)])
    return (time.perf_counter() - start) / tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deals", type=int, default=200)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=3, help="RLlib iterations to time")
    args = parser.parse_args()
    agents = ["greedy", "random", "strategic"]

    start = time.perf_counter()
    local = evaluate(agents, "standard", deals=args.deals, seed=7, workers=args.cpus)
    pool_seconds = time.perf_counter() - start

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    overhead = task_overhead()
    evaluate(agents, "standard", deals=4, seed=1, ray_address="local")  # workers start, agents load
    start = time.perf_counter()
    on_ray = evaluate(agents, "standard", deals=args.deals, seed=7, ray_address="local")
    ray_seconds = time.perf_counter() - start
    assert on_ray.records == local.records, "Ray and the process pool disagree"
    per_deal = ray_seconds * args.cpus / args.deals
    size = batch_size(args.deals, args.cpus)

    config = dataclasses.replace(RLlibConfig.load("configs/rllib.yaml"), iterations=args.iterations, snapshot_every=1)
    with tempfile.TemporaryDirectory() as tmp:
        summary = train_rllib(config, f"{tmp}/run", progress=False)
    ray.shutdown()

    print(
        "\n".join(
            [
                f"| measured ({args.cpus} CPUs) | value |",
                "|---|---:|",
                f"| Ray task round trip (empty task) | {overhead * 1e3:.2f} ms |",
                f"| arena, process pool ({args.cpus} workers), deals/s | {args.deals / pool_seconds:.1f} |",
                f"| arena, local Ray ({args.cpus} CPUs), deals/s | {args.deals / ray_seconds:.1f} |",
                f"| arena: one deal's work (3 agents, 3 tables x 2 seatings), CPU-seconds | {per_deal:.3f} |",
                f"| arena: deals per task (batch) / task overhead share | {size} / {overhead / (overhead + size * per_deal):.2%} |",
                f"| RLlib self-play PPO ({config.num_env_runners} env runner), env steps/s | {summary['env_steps_per_second']:,.0f} |",
            ]
        )
    )


if __name__ == "__main__":
    main()
