"""One preset's ladder against search: every agent and search in one arena on duplicate deals
(every table of the preset's seats, in every rotation), then each agent's margin over search
(its points minus search's per round at the same tables, with the 95% interval over deals), its
net points per round against the whole field, its time per decision and that time as a fraction
of search's. The arena's full tables go to ``OUT/`` (summary.md, report.json, chart.png); the
ladder to ``ladder.md`` and ``ladder.csv`` there.

    python benchmarks/ladder.py --rules standard_3p --deals 300 --seed 20261209 --out results/ladder/standard_3p/versus-search \
        --agents random greedy strategic TEACHER pretrained:standard_3p_vector pretrained:standard_3p
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from bench_search import add_passes_argument, fraction, positions, seconds_per_decision

from block_env.arena import ArenaConfig, evaluate_into
from block_env.rules import Rules

REFERENCE = "search"


def ladder_rows(args: argparse.Namespace) -> list[dict]:
    rules = Rules.preset(args.rules)
    config = ArenaConfig(
        agents=(REFERENCE, *args.agents), rules=rules, deals=args.deals, seed=args.seed, workers=args.workers
    )
    started = time.perf_counter()
    report, _ = evaluate_into(config, args.out, progress=not args.quiet)
    print(f"arena: {time.perf_counter() - started:.0f} s", flush=True)
    net = {a.agent: a.net_per_round for a in report.agents}
    times = seconds_per_decision(list(config.agents), rules, positions(rules, args.decisions), args.passes)
    rows = []
    for spec in config.agents:
        margin = None if spec == REFERENCE else report.head_to_head[spec][REFERENCE]
        rows.append({"agent": spec, "margin": margin, "net": net[spec], "seconds": times[spec][0]})
    return rows


def signed(x: float) -> str:
    return f"{x:+.2f}".replace("-", "\u2212")


def write(rows: list[dict], args: argparse.Namespace) -> str:
    reference = rows[0]["seconds"]
    lines = [
        f"Ladder on `{args.rules}`: every agent and `{REFERENCE}` in one arena on {args.deals:,} duplicate deals"
        f" (seed {args.seed}); time per decision on positions with two or more legal moves, one by one.\n",
        f"| agent | − {REFERENCE} (95% CI) | net points / round | ms per decision | time / {REFERENCE}'s |",
        "|---|---:|---:|---:|---:|",
    ]
    table = [["agent", "margin", "low", "high", "net", "deals", "ms_per_decision"]]
    for row in sorted(rows, key=lambda r: -r["net"].mean):
        m, ms = row["margin"], row["seconds"] * 1e3
        cell = "(the reference)" if m is None else f"{signed(m.mean)} ({signed(m.low)} .. {signed(m.high)})"
        net = f"{signed(row['net'].mean)} ± {(row['net'].high - row['net'].low) / 2:.2f}"
        lines.append(f"| `{row['agent']}` | {cell} | {net} | {ms:.2f} | {fraction(row['seconds'], reference)} |")
        values = ["", "", ""] if m is None else [f"{m.mean:.4f}", f"{m.low:.4f}", f"{m.high:.4f}"]
        table.append([row["agent"], *values, f"{row['net'].mean:.4f}", args.deals, f"{ms:.4f}"])
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
    add_passes_argument(parser)
    parser.add_argument("--out", required=True, help="folder for the arena's tables and ladder.md/.csv")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args()
    if REFERENCE in args.agents:
        parser.error(f"--agents: {REFERENCE} is the reference every agent meets; leave it out")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    print("\n" + write(ladder_rows(args), args))


if __name__ == "__main__":
    main()
