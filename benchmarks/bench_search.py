"""Decision speed: decisions per second (and milliseconds per decision) of agents at their
default budgets, on positions from real games with at least two legal moves, per preset.
Agents that act in batch (policies, search and strategic: ``act_batch``) are also timed on all positions at once.
The last table gives each agent's time per decision as a fraction of the first spec's (search).

    python benchmarks/bench_search.py [--decisions 200] [--specs search pretrained:standard_vector]
        [--presets standard] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the arena's workers use

import numpy as np  # noqa: E402

from block_env import Rules, raw_env  # noqa: E402
from block_env.agents import make_agent  # noqa: E402
from block_env.options import ENCODINGS  # noqa: E402

PRESETS = ["standard", "standard_3p", "standard_4p", "partnership"]
#: Positions an agent plays before it is timed: a few rounds of one seat's decisions.
WARM_UP = 40


def positions(rules: Rules, count: int, seed: int = 0) -> list[dict]:
    """Every decision of the first seat in random games, in order, each in every encoding and
    marked ``choice`` when it had two or more legal moves, up to ``count`` such decisions."""
    env = raw_env(rules)
    rng = np.random.default_rng(seed)
    out: list[dict] = []
    episode = choices = 0
    while choices < count:
        env.reset(seed=episode)
        episode += 1
        while not all(env.terminations.values()) and choices < count:
            agent = env.agent_selection
            legal = env.legal_actions()
            if agent == env.possible_agents[0]:
                choices += len(legal) > 1
                out.append({"choice": len(legal) > 1, **{e: env.observe(agent, e) for e in ENCODINGS}})
            env.step(int(rng.choice(legal)))
    return out


def seconds_per_decision(spec: str, rules: Rules, obs: list[dict]) -> tuple[float, float | None]:
    """(one by one, in one batch or None): seconds per decision with two or more legal moves,
    after warming up on the first :data:`WARM_UP` positions (the batched search and the
    policies compile or allocate on first use, and an agent may run other code late in a
    round: a network's endgame search); each agent reads its own encoding. Agents without
    ``act_batch`` have no batch figure."""
    agent = make_agent(spec, rules, seed=0)
    mine = [o[agent.observation] for o in obs]
    for o in mine[:WARM_UP]:
        agent.act(o)
    agent.reset(seed=0)
    spent = 0.0
    for o, position in zip(mine, obs):
        start = time.perf_counter()
        agent.act(o)
        spent += (time.perf_counter() - start) if position["choice"] else 0.0
    chosen = [o for o, position in zip(mine, obs) if position["choice"]]
    single = spent / len(chosen)
    if not hasattr(agent, "act_batch"):
        return single, None
    observations = np.stack([o["observation"] for o in chosen])
    masks = np.stack([o["action_mask"].astype(bool) for o in chosen])
    agent.act_batch(observations[:2], masks[:2])
    start = time.perf_counter()
    agent.act_batch(observations, masks)
    return single, (time.perf_counter() - start) / len(chosen)


def fraction(seconds: float, reference: float) -> str:
    """``seconds`` as a share of ``reference``: "1/99", or "7.4x" when slower."""
    return f"1/{reference / seconds:,.0f}" if seconds <= reference else f"{seconds / reference:.1f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--specs", nargs="+", default=["search", "search:worlds=24", "strategic"])
    parser.add_argument("--presets", nargs="+", default=PRESETS, choices=PRESETS)
    parser.add_argument("--markdown", help="also write the tables to this file")
    args = parser.parse_args()
    timings: dict[tuple[str, str], tuple[float, float | None]] = {}
    for preset in args.presets:
        rules = Rules.preset(preset)
        obs = positions(rules, args.decisions)
        for spec in args.specs:
            single, batched = timings[spec, preset] = seconds_per_decision(spec, rules, obs)
            extra = f", {1 / batched:,.0f}/s in one batch" if batched else ""
            print(f"  {spec} on {preset}: {1 / single:,.0f} decisions/s one by one{extra}", flush=True)

    def table(title: str, cell) -> str:
        lines = [f"{title}\n", "| agent | " + " | ".join(args.presets) + " |", "|---|" + "---:|" * len(args.presets)]
        for spec in args.specs:
            lines.append(f"| `{spec}` | " + " | ".join(cell(spec, p) for p in args.presets) + " |")
        return "\n".join(lines)

    def per_second(spec: str, preset: str) -> str:
        single, batched = timings[spec, preset]
        return f"{1 / single:,.0f}" + (f" ({1 / batched:,.0f} batched)" if batched else "")

    def share_of_first(spec: str, preset: str) -> str:
        reference = timings[args.specs[0], preset][0]
        single, batched = timings[spec, preset]
        return fraction(single, reference) + (f" ({fraction(batched, reference)} batched)" if batched else "")

    tables = [
        table("decisions per second (positions with 2+ legal moves; one by one, and in one batch):", per_second),
        table(f"time per decision as a fraction of `{args.specs[0]}`'s one-by-one time:", share_of_first),
    ]
    text = "\n\n".join(tables)
    print("\n" + text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
