"""The evaluation arena: duplicate deals, confidence intervals, head-to-head and ratings.

Every deal is replayed with the agents rotated through all seats of each table, so the luck
of the deal cancels. Confidence intervals treat deals as the independent units: each agent's
outcomes are averaged within a deal (over its seats, rotations and rounds), then the mean over
deals gets a normal 95% interval (1.96 standard errors).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from block_env.aec import raw_env
from block_env.agents import Agent, make_agent, parse_spec
from block_env.agents.replay import round_record, rules_record
from block_env.engine import RoundResult
from block_env.options import EPISODES
from block_env.rules import PRESETS, Rules, check_choice, resolve_rules
from block_env.seeding import deal_seeds, seat_seed

Z95 = 1.959964


@dataclass(frozen=True)
class ArenaConfig:
    """What to play: agent specs (see :func:`block_env.agents.make_agent`), rules, episode
    mode ("round" or "match"), number of deals, seed and worker processes; ``record`` keeps
    every episode's full move record (a replay, see :mod:`block_env.agents.replay`)."""

    agents: tuple[str, ...]
    rules: Rules = field(default_factory=Rules)
    episode: str = "round"
    deals: int = 100
    seed: int = 0
    workers: int = 1
    record: bool = False

    def __post_init__(self) -> None:
        if len(self.agents) < 2:
            raise ValueError(f"the arena needs at least 2 agents, got {list(self.agents)}")
        if len(set(self.agents)) != len(self.agents):
            raise ValueError(f"agent specs must be distinct, got {list(self.agents)}")
        for spec in self.agents:
            name, _ = parse_spec(spec)  # ValueError names an unknown agent
            if name == "human":
                raise ValueError("the arena plays unattended: use `block-dominoes play` for a human")
        check_choice("episode", self.episode, EPISODES)
        if not isinstance(self.deals, int) or self.deals < 1:
            raise ValueError(f"deals must be a positive int, got {self.deals!r}")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"workers must be a positive int, got {self.workers!r}")


def tables(num_agents: int, rules: Rules) -> list[tuple[int, ...]]:
    """Seatings before rotation, as agent indices per seat.

    Partnerships: every pair of agents, one per side. Individuals: every group of n agents
    (n = players), or with fewer agents than seats, the agents in turn around the table.
    """
    n = rules.num_players
    if rules.partnership:
        return [(a, b, a, b) for a, b in itertools.combinations(range(num_agents), 2)]
    if num_agents >= n:
        return list(itertools.combinations(range(num_agents), n))
    return [tuple(s % num_agents for s in range(n))]


def rotations(table: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The table's distinct cyclic rotations: each agent takes each seat once."""
    out: list[tuple[int, ...]] = []
    for r in range(len(table)):
        seating = table[r:] + table[:r]
        if seating not in out:
            out.append(seating)
    return out


# -- playing (runs in worker processes) -------------------------------------------------------

# Agents built once per worker process (a pool lives for one run_arena call, so a policy
# file re-saved between runs is read again).
_WORKER_AGENTS: dict[str, Agent] = {}


def play_episode(env: Any, agents: Sequence[Agent], seed: int, names: Sequence[str] | None = None) -> dict[str, Any]:
    """One episode from ``reset(seed)`` with ``agents`` by seat: each round's result, the
    first deal (what duplicate play keeps identical across seatings) and the match winner.
    With ``names`` (the agents' specs by seat) also the full move record, as ``replay``."""
    env.reset(seed=seed)
    first_deal = env.deal()
    for seat, agent in enumerate(agents):
        agent.reset(seed=seat_seed(seed, seat))
    rounds = []
    while not all(env.terminations.values()):
        agent = env.agent_selection
        rnd, finished = env.match.round, len(env.results)
        env.step(agents[env.agent_name_mapping[agent]].act(env.observe(agent)))
        if names is not None and len(env.results) > finished:
            rounds.append(round_record(rnd))
    episode = {
        "rounds": [r.as_dict() for r in env.results],
        "first_deal": first_deal,
        "match_winner_side": env.match_winner if env.episode == "match" else None,
    }
    if names is not None:
        episode["replay"] = {"rules": rules_record(env.rules), "agents": list(names), "rounds": rounds}
    return episode


def play_deal(
    config: ArenaConfig, deal: int, seed: int, agents: dict[str, Agent] | None = None
) -> list[dict[str, Any]]:
    """Every table and rotation on one deal (the same seed, hence the same tiles).
    ``agents`` caches the built agents by spec across calls."""
    agents = {} if agents is None else agents
    for spec in config.agents:
        if spec not in agents:
            agents[spec] = make_agent(spec, config.rules)
    env = raw_env(config.rules, episode=config.episode, reward="points")
    records = []
    for table_index, table in enumerate(tables(len(config.agents), config.rules)):
        for seating in rotations(table):
            seated = [agents[config.agents[a]] for a in seating]
            names = [config.agents[a] for a in seating] if config.record else None
            episode = play_episode(env, seated, seed, names)
            records.append({"deal": deal, "table": table_index, "seating": list(seating), **episode})
    return records


def _play_deal_task(args: tuple[ArenaConfig, int, int]) -> list[dict[str, Any]]:
    return play_deal(*args, agents=_WORKER_AGENTS)


def play_deal_batch(
    config: ArenaConfig, deals: Sequence[tuple[int, int]], agents: dict[str, Agent]
) -> list[tuple[int, list[dict[str, Any]]]]:
    """(deal, records) for each (deal, seed), ``agents`` caching the built agents (a Ray
    task's body: ``block_env.agents.ray_arena``)."""
    return [(deal, play_deal(config, deal, seed, agents=agents)) for deal, seed in deals]


#: The file in an arena's output folder that holds every finished deal's records, one JSON
#: line per deal, after a first line with the run's config: what --resume continues from.
RECORDS_FILE = "records.jsonl"


def run_arena(
    config: ArenaConfig,
    progress: bool = True,
    records_path: str | Path | None = None,
    resume: bool = False,
    ray_address: str | None = None,
    first_deal: int = 0,
) -> list[dict[str, Any]]:
    """Play every deal (in parallel when ``config.workers > 1``), with a progress bar.

    With ``records_path`` each finished deal's records are appended to that JSON-lines file
    as it finishes (nothing is lost to an interruption); ``resume`` reads the deals already
    there (the file's config must be this one) and plays only the others, so the result is
    exactly that of an uninterrupted run. With ``ray_address`` ("local", "auto" or a
    cluster's address) the deals run as Ray tasks (:mod:`block_env.agents.ray_arena`),
    with the same results. ``first_deal`` plays only deals ``first_deal..config.deals - 1``:
    the deals a run with ``config.deals = first_deal`` (same seed) did not play, since the
    deal seeds of a shorter run are the first of a longer one's.
    """
    if not isinstance(first_deal, int) or not 0 <= first_deal < config.deals:
        raise ValueError(f"first_deal must be an int in [0, deals={config.deals}), got {first_deal!r}")
    if first_deal and records_path is not None:
        raise ValueError("first_deal plays part of a run: it cannot be combined with records_path")
    seeds = deal_seeds(config.seed, config.deals)
    done: dict[int, list[dict[str, Any]]] = {}
    if records_path is not None:
        done = _open_records(Path(records_path), config, resume)
    tasks = [(config, d, s) for d, s in enumerate(seeds) if d >= first_deal and d not in done]
    bar = _progress_bar(
        progress, config.deals - first_deal, f"arena: {len(config.agents)} agents, {config.deals} deals"
    )
    with bar as update:
        for _ in done:
            update()
        for deal, records in _play(config, tasks, ray_address):
            done[deal] = records
            if records_path is not None:
                with open(records_path, "a") as f:
                    f.write(json.dumps({"deal": deal, "records": records}) + "\n")
            update()
    return [r for deal in sorted(done) for r in done[deal]]


def _play(
    config: ArenaConfig, tasks: list[tuple[ArenaConfig, int, int]], ray_address: str | None = None
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(deal, records) for each task as it finishes (in order, but on Ray)."""
    if ray_address is not None:
        try:
            from block_env.agents.ray_arena import play_on_ray
        except ImportError as e:
            raise ValueError(f"the arena on Ray needs the [ray] extra (pip install 'block-env[ray]'): {e}") from None

        yield from play_on_ray(config, [(deal, seed) for _, deal, seed in tasks], ray_address)
        return
    if config.workers == 1:
        agents: dict[str, Agent] = {}
        for task in tasks:
            yield task[1], play_deal(*task, agents=agents)
        return
    # spawn, not fork: the parent may hold torch threads (training), which fork can deadlock.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=config.workers, mp_context=context) as pool:
        chunk = max(1, len(tasks) // (20 * config.workers))
        yield from zip((t[1] for t in tasks), pool.map(_play_deal_task, tasks, chunksize=chunk))


def _config_key(config: ArenaConfig) -> dict[str, Any]:
    """What must match for records to be resumed: everything but the worker count."""
    return {**asdict(config), "rules": asdict(config.rules), "agents": list(config.agents), "workers": None}


def _open_records(path: Path, config: ArenaConfig, resume: bool) -> dict[int, list[dict[str, Any]]]:
    """The deals already recorded in ``path`` (resume), or a fresh file with the config line."""
    if not resume or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"config": _config_key(config)}) + "\n")
        return {}
    lines = path.read_text().splitlines()
    try:
        header = json.loads(lines[0])["config"] if lines else None
    except (json.JSONDecodeError, KeyError, TypeError):
        header = None
    if header != json.loads(json.dumps(_config_key(config))):
        raise ValueError(
            f"{path} was written by another arena run (agents, rules, deals or seed differ): cannot resume it"
        )
    done: dict[int, list[dict[str, Any]]] = {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            entry = json.loads(line)
            done[int(entry["deal"])] = entry["records"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            if number == len(lines):
                break  # a last line cut short by the interruption: that deal is played again
            raise ValueError(f"{path}: line {number} is not a deal's records") from None
    # Rewrite without a cut-short last line, so appends continue a clean file.
    path.write_text(
        "\n".join([lines[0], *(json.dumps({"deal": d, "records": r}) for d, r in sorted(done.items()))]) + "\n"
    )
    return done


@contextmanager
def _progress_bar(enabled: bool, total: int, description: str) -> Iterator[Callable[[], None]]:
    """Yields ``advance()``: a rich progress bar, or nothing when ``enabled`` is False."""
    if not enabled:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns) as progress:
        task = progress.add_task(description, total=total)
        yield lambda: progress.advance(task)


# -- statistics -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A mean with a 95% confidence interval."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def halfwidth(self) -> float:
        """Half the interval's width: the ``x`` of ``mean ± x``."""
        return (self.high - self.low) / 2

    def fmt(self, percent: bool = False, digits: int = 1) -> str:
        if self.n == 0 or math.isnan(self.mean):
            return "n/a"
        scale = 100.0 if percent else 1.0
        half = self.halfwidth * scale
        unit = "%" if percent else ""
        return f"{self.mean * scale:.{digits}f}{unit} ± {half:.{digits}f}"


NOT_MET = Estimate(float("nan"), float("nan"), float("nan"), 0)  # never at a table together


def mean_ci(values: Sequence[float], clip: tuple[float, float] | None = None) -> Estimate:
    """Mean and normal 95% interval over independent units."""
    n = len(values)
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    mean = sum(values) / n
    if n == 1:
        return Estimate(mean, mean, mean, 1)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = Z95 * math.sqrt(var / n)
    low, high = mean - half, mean + half
    if clip is not None:
        low, high = max(clip[0], low), min(clip[1], high)
    return Estimate(mean, low, high, n)


@dataclass
class AgentReport:
    agent: str
    seat_rounds: int
    round_win_rate: Estimate
    points_per_round: Estimate
    net_per_round: Estimate
    match_win_rate: Estimate | None
    rating: float
    rating_mu: float
    rating_sigma: float


@dataclass
class ArenaReport:
    config: ArenaConfig
    agents: list[AgentReport]
    head_to_head: dict[str, dict[str, Estimate]]
    records: list[dict[str, Any]]

    def ranked(self) -> list[AgentReport]:
        return sorted(self.agents, key=lambda a: -a.net_per_round.mean)


def summarize(config: ArenaConfig, records: list[dict[str, Any]]) -> ArenaReport:
    rules = config.rules
    names = list(config.agents)
    # per agent, per deal: lists of outcomes over its seat-rounds (and seat-matches)
    per_deal: dict[int, dict[int, dict[str, list[float]]]] = {}
    margin_by_deal: dict[tuple[int, int], dict[int, list[float]]] = {}
    seat_rounds = [0] * len(names)
    for rec in records:
        deal = per_deal.setdefault(rec["deal"], {})
        seating = rec["seating"]
        for seat, a in enumerate(seating):
            side = rules.side_of(seat)
            bucket = deal.setdefault(a, {"win": [], "points": [], "net": [], "match": []})
            for rnd in rec["rounds"]:
                result = RoundResult.from_dict(rnd)
                won = result.winning_side == side
                bucket["win"].append(1.0 if won else 0.0)
                bucket["points"].append(result.side_values("points")[side])
                bucket["net"].append(result.side_values("zero_sum")[side])
                seat_rounds[a] += 1
            if config.episode == "match":
                bucket["match"].append(1.0 if rec["match_winner_side"] == side else 0.0)
        # Head to head: per round, one agent's points minus the other's when both sit at
        # the table on different sides (one representative seat per agent).
        side_of_agent: dict[int, int] = {}
        for seat, a in enumerate(seating):
            side_of_agent.setdefault(a, rules.side_of(seat))
        for a, b in itertools.permutations(side_of_agent, 2):
            if side_of_agent[a] == side_of_agent[b]:
                continue
            margins = margin_by_deal.setdefault((a, b), {}).setdefault(rec["deal"], [])
            for rnd in rec["rounds"]:
                points = RoundResult.from_dict(rnd).side_values("points")
                margins.append(points[side_of_agent[a]] - points[side_of_agent[b]])

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
        mu, sigma = ratings[a]
        reports.append(
            AgentReport(
                agent=name,
                seat_rounds=seat_rounds[a],
                round_win_rate=over_deals(a, "win", (0.0, 1.0)),
                points_per_round=over_deals(a, "points"),
                net_per_round=over_deals(a, "net"),
                match_win_rate=over_deals(a, "match", (0.0, 1.0)) if config.episode == "match" else None,
                rating=mu - 3 * sigma,
                rating_mu=mu,
                rating_sigma=sigma,
            )
        )
    h2h: dict[str, dict[str, Estimate]] = {name: {} for name in names}
    for (a, b), deals in margin_by_deal.items():
        h2h[names[a]][names[b]] = mean_ci([sum(v) / len(v) for _, v in sorted(deals.items()) if v])
    return ArenaReport(config=config, agents=reports, head_to_head=h2h, records=records)


def _ratings(config: ArenaConfig, records: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """OpenSkill (Plackett-Luce) ratings, one update per round: the winning side ranks
    first, the other sides tie behind it; a tied block ranks all sides equal."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    players = [model.rating(name=name) for name in config.agents]
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
            ranks = [0 if (w is None or s == w) else 1 for s in sorted(side_agent)]
            teams = [[players[a]] for a in agents_by_side]
            new = model.rate(teams, ranks=ranks)
            for a, team in zip(agents_by_side, new):
                players[a] = team[0]
    return [(p.mu, p.sigma) for p in players]


# -- output -----------------------------------------------------------------------------------


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
        row = [f"`{a.agent}`", a.round_win_rate.fmt(percent=True), a.points_per_round.fmt(), a.net_per_round.fmt()]
        if cfg.episode == "match":
            row.append(a.match_win_rate.fmt(percent=True) if a.match_win_rate else "n/a")
        row += [f"{a.rating:.1f}", str(a.seat_rounds)]
        lines.append("| " + " | ".join(row) + " |")
    names = [a.agent for a in report.ranked()]
    h2h = [
        "",
        "Head to head: the row agent's points minus the column agent's, per round at the same table "
        "(duplicate deals; mean ± 95% CI over deals). A positive interval means the row agent is stronger.",
        "",
    ]
    h2h.append("| vs | " + " | ".join(f"`{n}`" for n in names) + " |")
    h2h.append("|---|" + "---|" * len(names))
    for a in names:
        cells = ["—" if a == b else report.head_to_head[a].get(b, NOT_MET).fmt() for b in names]
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
    paths["markdown"].write_text(markdown(report))
    with paths["csv"].open("w", newline="") as f:
        writer = csv.writer(f)
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
                    round(a.rating, 4),
                    round(a.rating_mu, 4),
                    round(a.rating_sigma, 4),
                ]
            )
    cfg = report.config
    payload = {
        "config": {**asdict(cfg), "rules": asdict(cfg.rules), "agents": list(cfg.agents)},
        "agents": [asdict(a) for a in report.ranked()],
        "head_to_head": {a: {b: asdict(e) for b, e in row.items()} for a, row in report.head_to_head.items()},
        "records": report.records,
    }
    paths["json"].write_text(json.dumps(payload, indent=1))
    _chart(report, paths["chart"])
    return paths


def _triple(e: Estimate) -> list[float]:
    return [round(e.mean, 6), round(e.low, 6), round(e.high, 6)]


def _chart(report: ArenaReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranked = report.ranked()
    names = [a.agent if len(a.agent) <= 32 else "…" + a.agent[-31:] for a in ranked]
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.6 * len(names) + 1.8), layout="constrained")
    for ax, key, title in [
        (axes[0], "round_win_rate", "round win rate (95% CI)"),
        (axes[1], "net_per_round", "net points per round (95% CI)"),
    ]:
        est = [getattr(a, key) for a in ranked]
        means = [e.mean for e in est]
        err = [[e.mean - e.low for e in est], [e.high - e.mean for e in est]]
        ax.barh(names, means, xerr=err, color="#2f7d4f", capsize=4)
        ax.invert_yaxis()
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
    cfg = report.config
    fig.suptitle(f"{_rules_text(cfg.rules)}, {cfg.episode} episodes, {cfg.deals} duplicate deals")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def evaluate(
    agents: Iterable[str],
    rules: Rules | str | None = None,
    *,
    episode: str = "round",
    deals: int = 100,
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    record: bool = False,
    ray_address: str | None = None,
) -> ArenaReport:
    """Play and summarize in one call (the Python face of ``block-dominoes eval``);
    ``ray_address`` runs the deals on Ray (see :func:`run_arena`)."""
    config = ArenaConfig(
        agents=tuple(agents),
        rules=resolve_rules(rules),
        episode=episode,
        deals=deals,
        seed=seed,
        workers=workers,
        record=record,
    )
    return summarize(config, run_arena(config, progress=progress, ray_address=ray_address))
