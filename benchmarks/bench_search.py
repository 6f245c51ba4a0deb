"""Decision speed: decisions per second (and milliseconds per decision) of agents at their
default budgets, on positions from real games with at least two legal moves, per preset.
Agents that act in batch (policies, search and strategic: ``act_batch``) are also timed on all positions at once.
The last table gives each agent's time per decision as a fraction of the first spec's (search).

The agents take turns, a whole pass over the positions each, and each keeps its fastest of
``--passes`` passes, so that a stretch when the machine is slow does not land on one agent alone.

    python benchmarks/bench_search.py [--decisions 200] [--specs search pretrained:standard_vector]
        [--presets standard] [--passes 1] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the arena's workers use

import numpy as np  # noqa: E402
from report_table import add_markdown_argument, show  # noqa: E402

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


def seconds_per_decision(
    specs: list[str], rules: Rules, obs: list[dict], passes: int
) -> dict[str, tuple[float, float | None]]:
    """Per spec (one by one, in one batch or None): seconds per decision with two or more
    legal moves, after warming up on the first :data:`WARM_UP` positions (the batched search
    and the policies compile or allocate on first use, and an agent may run other code late in
    a round: a network's endgame search); each agent reads its own encoding. The specs take
    turns, a whole pass over the positions each, ``passes`` times, and each keeps its fastest
    pass: a shared machine slows some seconds more than others, and a slow stretch would
    otherwise land on whichever agent ran then. (Turns at every position would charge each
    agent for the caches the others leave cold: a network alone plays a pass with its weights
    at hand.) Agents without ``act_batch`` have no batch figure."""
    agents = {spec: make_agent(spec, rules, seed=0) for spec in specs}
    mine = {spec: [o[agent.observation] for o in obs] for spec, agent in agents.items()}
    chosen = [i for i, position in enumerate(obs) if position["choice"]]
    for spec, agent in agents.items():
        for o in mine[spec][:WARM_UP]:
            agent.act(o)
        if hasattr(agent, "act_batch"):
            agent.act_batch(*_batch(mine[spec], chosen[:2]))
    single: dict[str, float] = dict.fromkeys(specs, float("inf"))
    batched: dict[str, float] = dict.fromkeys(specs, float("inf"))
    for _ in range(passes):
        for spec, agent in agents.items():  # a whole pass each, the specs taking turns
            agent.reset(seed=0)  # every pass plays the same moves
            spent = 0.0
            for o, position in zip(mine[spec], obs):
                start = time.perf_counter()
                agent.act(o)
                spent += (time.perf_counter() - start) if position["choice"] else 0.0
            single[spec] = min(single[spec], spent / len(chosen))
            if hasattr(agent, "act_batch"):
                observations, masks = _batch(mine[spec], chosen)
                start = time.perf_counter()
                agent.act_batch(observations, masks)
                batched[spec] = min(batched[spec], (time.perf_counter() - start) / len(chosen))
    return {spec: (single[spec], batched[spec] if hasattr(agents[spec], "act_batch") else None) for spec in specs}


def _batch(observations: list[dict], rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The observations and action masks of ``rows``, stacked for ``act_batch``."""
    return (
        np.stack([observations[i]["observation"] for i in rows]),
        np.stack([observations[i]["action_mask"].astype(bool) for i in rows]),
    )


def fraction(seconds: float, reference: float) -> str:
    """``seconds`` as a share of ``reference``: "1/99", or "7.4x" when slower."""
    return f"1/{reference / seconds:,.0f}" if seconds <= reference else f"{seconds / reference:.1f}x"


def _passes(text: str) -> int:
    passes = int(text)
    if passes < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {passes}")
    return passes


def add_passes_argument(parser: argparse.ArgumentParser) -> None:
    """``--passes``, as :func:`seconds_per_decision` reads it (1 or more)."""
    parser.add_argument(
        "--passes",
        type=_passes,
        default=1,
        help="passes over the positions, the agents taking turns; each keeps its fastest (3 on a shared machine)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--specs", nargs="+", default=["search", "search:worlds=24", "strategic"])
    parser.add_argument("--presets", nargs="+", default=PRESETS, choices=PRESETS)
    add_passes_argument(parser)
    add_markdown_argument(parser)
    args = parser.parse_args()
    if len(set(args.specs)) != len(args.specs):
        parser.error(f"--specs names an agent twice: {args.specs}")
    timings: dict[tuple[str, str], tuple[float, float | None]] = {}
    for preset in args.presets:
        rules = Rules.preset(preset)
        obs = positions(rules, args.decisions)
        for spec, (single, batched) in seconds_per_decision(args.specs, rules, obs, args.passes).items():
            timings[spec, preset] = single, batched
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

    fastest = f"; each agent's fastest of {args.passes} passes" if args.passes > 1 else ""
    tables = [
        table(
            f"decisions per second (positions with 2+ legal moves; one by one, and in one batch{fastest}):", per_second
        ),
        table(f"time per decision as a fraction of `{args.specs[0]}`'s one-by-one time:", share_of_first),
    ]
    text = "\n\n".join(tables)
    print()
    show(text, args.markdown)


if __name__ == "__main__":
    main()
