"""One preset's ladder against search: each agent's margin over search (its points minus
search's per round at the same table, with the 95% interval over deals), on the same duplicate
deals for every agent, beside its time per decision and that time as a fraction of search's.

Each agent meets search alone (``block-dominoes eval --agents AGENT search``: at three seats the
agent holds two of them, at four seats two, in every rotation), so every row is the same
measurement. Each arena's full tables go to ``OUT/<n>-<agent>/``; the ladder to
``OUT/ladder.md`` and ``OUT/ladder.csv``.

    python benchmarks/ladder.py --rules standard_3p --deals 2000 --seed 20261205 --out results/ladder/standard_3p \
        --agents random greedy strategic TEACHER pretrained:standard_3p_vector pretrained:standard_3p
"""

from __future__ import annotations

import argparse
import csv
import re
import time
from pathlib import Path

from bench_search import positions, seconds_per_decision

from block_env.arena import ArenaConfig, evaluate_into
from block_env.rules import Rules

REFERENCE = "search"


def slug(spec: str) -> str:
    """A folder name for an agent spec."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", spec).strip("_")


def ladder_rows(args: argparse.Namespace) -> list[dict]:
    rules = Rules.preset(args.rules)
    obs = positions(rules, args.decisions)
    reference_seconds, _ = seconds_per_decision(REFERENCE, rules, obs)
    rows = [{"agent": REFERENCE, "seconds": reference_seconds}]
    for n, spec in enumerate(args.agents, 1):
        start = time.perf_counter()
        config = ArenaConfig(
            agents=(spec, REFERENCE), rules=rules, deals=args.deals, seed=args.seed, workers=args.workers
        )
        report, _ = evaluate_into(config, Path(args.out) / f"{n}-{slug(spec)}", progress=not args.quiet)
        margin = report.head_to_head[spec][REFERENCE]
        seconds, _ = seconds_per_decision(spec, rules, obs)
        rows.append({"agent": spec, "margin": margin, "seconds": seconds})
        print(
            f"{spec}: {margin.mean:+.2f} ({margin.low:+.2f} .. {margin.high:+.2f}) over {REFERENCE} on"
            f" {args.deals} deals, {seconds * 1e3:.2f} ms per decision ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
    return rows


def signed(x: float) -> str:
    return f"{x:+.2f}".replace("-", "\u2212")


def fraction(seconds: float, reference: float) -> str:
    """The agent's time as a share of the reference's: "1/99", or "7.4x" when slower."""
    return f"1/{reference / seconds:,.0f}" if seconds <= reference else f"{seconds / reference:.1f}x"


def write(rows: list[dict], args: argparse.Namespace) -> str:
    reference = rows[0]["seconds"]
    lines = [
        f"Ladder on `{args.rules}`: each agent against `{REFERENCE}` alone on the same {args.deals:,} duplicate"
        f" deals (seed {args.seed}); time per decision on positions with two or more legal moves, one by one.\n",
        f"| agent | − {REFERENCE} (95% CI) | deals | ms per decision | time / {REFERENCE}'s |",
        "|---|---:|---:|---:|---:|",
    ]
    table = [["agent", "margin", "low", "high", "deals", "ms_per_decision"]]
    for row in rows:
        ms = row["seconds"] * 1e3
        if "margin" in row:
            m = row["margin"]
            cell = f"{signed(m.mean)} ({signed(m.low)} .. {signed(m.high)})"
            table.append([row["agent"], f"{m.mean:.4f}", f"{m.low:.4f}", f"{m.high:.4f}", args.deals, f"{ms:.4f}"])
        else:
            cell = "0 (the reference)"
        lines.append(
            f"| `{row['agent']}` | {cell} | {args.deals:,} | {ms:.2f} | {fraction(row['seconds'], reference)} |"
        )
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    (out / "ladder.md").write_text(text)
    with open(out / "ladder.csv", "w", newline="") as f:
        csv.writer(f).writerows(table)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rules", required=True, help="rules preset")
    parser.add_argument("--agents", nargs="+", required=True, help=f"agent specs, each measured against {REFERENCE}")
    parser.add_argument("--deals", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="arena processes")
    parser.add_argument("--decisions", type=int, default=200, help="positions timed per agent")
    parser.add_argument("--out", required=True, help="folder for each arena's tables and ladder.md/.csv")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args()
    if REFERENCE in args.agents:
        parser.error(f"--agents: {REFERENCE} is the reference every agent meets; leave it out")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    print("\n" + write(ladder_rows(args), args))


if __name__ == "__main__":
    main()
