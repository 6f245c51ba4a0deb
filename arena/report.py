"""The arena's summaries: per-agent rates with 95% intervals, head to head, ratings, and the
files they are written to (Markdown, CSV, JSON and a chart)."""

from __future__ import annotations

import csv
import io
import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from block_env.arena.config import ArenaConfig
from block_env.arena.stats import NOT_MET, Estimate, mean_ci
from block_env.engine import RoundResult
from block_env.files import save_atomically, write_atomically
from block_env.rules import PRESETS, Rules


@dataclass
class AgentReport:
    agent: str
    seat_rounds: int
    round_win_rate: Estimate
    points_per_round: Estimate
    net_per_round: Estimate
    match_win_rate: Estimate | None
    rating: float | None
    """OpenSkill's conservative rating (mu - 3 sigma); None for an agent that never held a side
    against another agent, so no round rated it (with fewer agents than sides, as two agents at
    three or four individual seats, every table holds one agent on two sides)."""
    rating_mu: float | None
    rating_sigma: float | None


@dataclass
class ArenaReport:
    config: ArenaConfig
    agents: list[AgentReport]
    head_to_head: dict[str, dict[str, Estimate]]
    records: list[dict[str, Any]]

    def ranked(self) -> list[AgentReport]:
        return sorted(self.agents, key=lambda a: -a.net_per_round.mean)


#: Per deal, per agent index: the outcomes of its seat-rounds ("win", "points", "net") and
#: seat-matches ("match").
Outcomes = dict[int, dict[int, dict[str, list[float]]]]
#: Per (agent, other agent), per deal: the agent's points minus the other's, round by round.
Margins = dict[tuple[int, int], dict[int, list[float]]]


def summarize(config: ArenaConfig, records: list[dict[str, Any]]) -> ArenaReport:
    """Each agent's rates over deals with 95% intervals, head-to-head margins and ratings."""
    names = list(config.agents)
    per_deal, margin_by_deal, seat_rounds = _outcomes(config, records)

    def over_deals(a: int, key: str, clip: tuple[float, float] | None = None) -> Estimate:
        means = []
        for deal in sorted(per_deal):
            values = per_deal[deal].get(a, {}).get(key, [])
            if values:
                means.append(sum(values) / len(values))
        return mean_ci(means, clip)

    ratings = _ratings(config, records)
    reports = []
    for a, name in enumerate(names):
        rated = ratings[a]
        mu, sigma = rated if rated is not None else (None, None)
        reports.append(
            AgentReport(
                agent=name,
                seat_rounds=seat_rounds[a],
                round_win_rate=over_deals(a, "win", (0.0, 1.0)),
                points_per_round=over_deals(a, "points"),
                net_per_round=over_deals(a, "net"),
                match_win_rate=over_deals(a, "match", (0.0, 1.0)) if config.episode == "match" else None,
                rating=None if mu is None or sigma is None else mu - 3 * sigma,
                rating_mu=mu,
                rating_sigma=sigma,
            )
        )
    return ArenaReport(
        config=config, agents=reports, head_to_head=_head_to_head(names, margin_by_deal), records=records
    )


def margins(config: ArenaConfig, records: list[dict[str, Any]]) -> dict[str, dict[str, Estimate]]:
    """:func:`summarize`'s ``head_to_head`` alone (each agent's points minus each other agent's per
    round, over deals), without the rates and ratings: what a learning-curve point reads."""
    return _head_to_head(list(config.agents), _outcomes(config, records)[1])


def _head_to_head(names: list[str], margin_by_deal: Margins) -> dict[str, dict[str, Estimate]]:
    h2h: dict[str, dict[str, Estimate]] = {name: {} for name in names}
    for (a, b), deals in margin_by_deal.items():
        h2h[names[a]][names[b]] = mean_ci([sum(v) / len(v) for _, v in sorted(deals.items()) if v])
    return h2h


def _outcomes(config: ArenaConfig, records: list[dict[str, Any]]) -> tuple[Outcomes, Margins, list[int]]:
    """Every record's rounds as each agent's outcomes, its margins over each agent it met on
    another side, and the seat-rounds each agent played."""
    rules = config.rules
    per_deal: Outcomes = {}
    margin_by_deal: Margins = {}
    seat_rounds = [0] * len(config.agents)
    for rec in records:
        deal = per_deal.setdefault(rec["deal"], {})
        seating = rec["seating"]
        results = [RoundResult.from_dict(rnd) for rnd in rec["rounds"]]
        for seat, a in enumerate(seating):
            side = rules.side_of(seat)
            bucket = deal.setdefault(a, {"win": [], "points": [], "net": [], "match": []})
            for result in results:
                bucket["win"].append(1.0 if result.winning_side == side else 0.0)
                bucket["points"].append(result.side_values("points")[side])
                bucket["net"].append(result.side_values("zero_sum")[side])
                seat_rounds[a] += 1
            if config.episode == "match":
                bucket["match"].append(1.0 if rec["match_winner_side"] == side else 0.0)
        # Head to head: per round, one agent's points minus the other's when they sit on
        # different sides. With fewer agents than seats an agent holds several seats, and
        # its points are their mean: each of its seats counts, as the rotations balance them.
        sides_of_agent: dict[int, list[int]] = {}
        for seat, a in enumerate(seating):
            sides_of_agent.setdefault(a, []).append(rules.side_of(seat))
        for a, b in itertools.permutations(sides_of_agent, 2):
            if set(sides_of_agent[a]) & set(sides_of_agent[b]):
                continue
            margins = margin_by_deal.setdefault((a, b), {}).setdefault(rec["deal"], [])
            for result in results:
                points = result.side_values("points")
                margins.append(
                    sum(points[s] for s in sides_of_agent[a]) / len(sides_of_agent[a])
                    - sum(points[s] for s in sides_of_agent[b]) / len(sides_of_agent[b])
                )
    return per_deal, margin_by_deal, seat_rounds


def _ratings(config: ArenaConfig, records: list[dict[str, Any]]) -> list[tuple[float, float] | None]:
    """OpenSkill (Plackett-Luce) ratings (mu, sigma), one update per round: the winning side
    ranks first, the other sides tie behind it; a tied block ranks all sides equal. None for an
    agent no round rated (it never held a side against another agent)."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    players = [model.rating(name=name) for name in config.agents]
    rated: set[int] = set()
    rules = config.rules
    for rec in sorted(records, key=lambda r: (r["deal"], r["table"], r["seating"])):
        side_agent: dict[int, int] = {}
        for seat, a in enumerate(rec["seating"]):
            side_agent.setdefault(rules.side_of(seat), a)
        agents_by_side = [side_agent[s] for s in sorted(side_agent)]
        if len(set(agents_by_side)) != len(agents_by_side):
            continue  # one agent on two sides (fewer agents than seats): not a contest
        for rnd in rec["rounds"]:
            w = rnd["winning_side"]
            ranks = [0.0 if (w is None or s == w) else 1.0 for s in sorted(side_agent)]
            teams = [[players[a]] for a in agents_by_side]
            new = model.rate(teams, ranks=ranks)
            for a, team in zip(agents_by_side, new):
                players[a] = team[0]
                rated.add(a)
    return [(p.mu, p.sigma) if a in rated else None for a, p in enumerate(players)]


# -- output -----------------------------------------------------------------------------------


#: Decimals of the points a round in summary.md: close agents differ by hundredths of a point.
POINT_DIGITS = 2


def markdown(report: ArenaReport) -> str:
    cfg = report.config
    head = (
        f"Arena: {cfg.deals} duplicate deals, episode={cfg.episode}, seed={cfg.seed}, "
        f"rules: {_rules_text(cfg.rules)}\n\n"
    )
    cols = ["agent", "round win rate", "points / round", "net points / round"]
    if cfg.episode == "match":
        cols.append("match win rate")
    cols += ["rating (μ−3σ)", "seat-rounds"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for a in report.ranked():
        row = [
            f"`{a.agent}`",
            a.round_win_rate.fmt(percent=True),
            a.points_per_round.fmt(digits=POINT_DIGITS),
            a.net_per_round.fmt(digits=POINT_DIGITS),
        ]
        if cfg.episode == "match":
            row.append(a.match_win_rate.fmt(percent=True) if a.match_win_rate else "n/a")
        row += ["n/a" if a.rating is None else f"{a.rating:.1f}", str(a.seat_rounds)]
        lines.append("| " + " | ".join(row) + " |")
    names = [a.agent for a in report.ranked()]
    h2h = [
        "",
        "Head to head: the row agent's points minus the column agent's, per round at the same table "
        "(duplicate deals; mean ± 95% CI over deals; an agent holding several seats counts their mean). "
        "A positive interval means the row agent is stronger. Rates whose interval was cut to 0..100% "
        "read mean (low .. high). A rating of n/a: no round rated the agent (it never held a side "
        "against another agent alone).",
        "",
    ]
    h2h.append("| vs | " + " | ".join(f"`{n}`" for n in names) + " |")
    h2h.append("|---|" + "---|" * len(names))
    for a in names:
        cells = ["—" if a == b else report.head_to_head[a].get(b, NOT_MET).fmt(digits=POINT_DIGITS) for b in names]
        h2h.append(f"| `{a}` | " + " | ".join(cells) + " |")
    return head + "\n".join(lines + h2h) + "\n"


def _rules_text(rules: Rules) -> str:
    for name, preset in PRESETS.items():
        if preset == rules:
            return f"preset `{name}`"
    return str(rules)


def write_outputs(report: ArenaReport, out: str | Path) -> dict[str, Path]:
    """summary.md, summary.csv, report.json and chart.png in ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "markdown": folder / "summary.md",
        "csv": folder / "summary.csv",
        "json": folder / "report.json",
        "chart": folder / "chart.png",
    }
    write_atomically(paths["markdown"], markdown(report))
    cfg = report.config
    payload = {
        "config": {**asdict(cfg), "rules": asdict(cfg.rules), "agents": list(cfg.agents)},
        "agents": [asdict(a) for a in report.ranked()],
        "head_to_head": {a: {b: asdict(e) for b, e in row.items()} for a, row in report.head_to_head.items()},
        "records": report.records,
    }
    write_atomically(paths["csv"], _csv_text(report))
    write_atomically(paths["json"], json.dumps(payload, indent=1))
    _chart(report, paths["chart"])
    return paths


def _csv_text(report: ArenaReport) -> str:
    """summary.csv: one row per agent, each estimate as mean, low and high."""
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(
        [
            "agent",
            "seat_rounds",
            "round_win_rate",
            "round_win_low",
            "round_win_high",
            "points_per_round",
            "points_low",
            "points_high",
            "net_per_round",
            "net_low",
            "net_high",
            "match_win_rate",
            "match_win_low",
            "match_win_high",
            "rating",
            "rating_mu",
            "rating_sigma",
        ]
    )
    for a in report.ranked():
        m = a.match_win_rate
        writer.writerow(
            [
                a.agent,
                a.seat_rounds,
                *_triple(a.round_win_rate),
                *_triple(a.points_per_round),
                *_triple(a.net_per_round),
                *(_triple(m) if m else ["", "", ""]),
                *_rating_cells(a),
            ]
        )
    return table.getvalue()


def _rating_cells(a: AgentReport) -> list[float | str]:
    """The CSV's rating, mu and sigma; empty cells for an agent no round rated."""
    if a.rating is None or a.rating_mu is None or a.rating_sigma is None:
        return ["", "", ""]
    return [round(a.rating, 4), round(a.rating_mu, 4), round(a.rating_sigma, 4)]


def _triple(e: Estimate) -> list[float | str]:
    """Mean, low and high; empty low and high cells from one deal, which gives no interval."""
    if e.n < 2:
        return [round(e.mean, 6), "", ""]
    return [round(e.mean, 6), round(e.low, 6), round(e.high, 6)]


def _chart(report: ArenaReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranked = report.ranked()
    # Long names keep both ends; the bars sit at positions, so two equal labels stay two rows.
    names = [a.agent if len(a.agent) <= 32 else a.agent[:12] + "…" + a.agent[-19:] for a in ranked]
    rows = list(range(len(names)))
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.6 * len(names) + 1.8), layout="constrained")
    for ax, key, title in [
        (axes[0], "round_win_rate", "round win rate (95% CI)"),
        (axes[1], "net_per_round", "net points per round (95% CI)"),
    ]:
        est = [getattr(a, key) for a in ranked]
        means = [e.mean for e in est]
        err = [[e.mean - e.low for e in est], [e.high - e.mean for e in est]]
        ax.barh(rows, means, xerr=err, color="#2f7d4f", capsize=4)
        ax.set_yticks(rows, names)
        ax.invert_yaxis()
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
    cfg = report.config
    fig.suptitle(f"{_rules_text(cfg.rules)}, {cfg.episode} episodes, {cfg.deals} duplicate deals")
    save_atomically(path, lambda temporary: fig.savefig(temporary, dpi=110, format="png"))
    plt.close(fig)
