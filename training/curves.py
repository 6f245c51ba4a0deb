"""How training measures its agents and draws what it measured: one agent's margin over another
on duplicate deals (the learning-curve points, expert iteration's rounds, a best response's
final arena) and the learning-curve plots of training and of expert iteration.
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from block_env.arena import ArenaConfig, Estimate, evaluate_into, margins, run_arena
from block_env.files import save_atomically
from block_env.rules import Rules


def head_to_head(
    agent: str,
    opponent: str,
    rules: Rules,
    *,
    episode: str,
    deals: int,
    seed: int,
    workers: int = 1,
    halfwidth: float | None = None,
    max_deals: int | None = None,
    out: Path | None = None,
    progress: bool = False,
) -> Estimate:
    """``agent``'s points minus ``opponent``'s per round (match episodes too) over duplicate deals of
    ``seed``, with its 95% interval: ``deals`` of them, then, while the interval is wider than
    +-``halfwidth``, the further deals its width says are needed (10% spare; at most
    ``max_deals``). The deal seeds of a shorter run are the first of a longer one's, so only the
    new deals are played. With ``out`` the arena's records and tables are written there (a fixed
    number of deals: no ``halfwidth``)."""
    if out is not None:
        if halfwidth is not None:
            raise ValueError("a head-to-head written into a folder plays a fixed number of deals: no halfwidth")
        arena = ArenaConfig(
            agents=(agent, opponent), rules=rules, episode=episode, deals=deals, seed=seed, workers=workers
        )
        report, _ = evaluate_into(arena, out, progress=progress)
        return report.head_to_head[agent][opponent]
    if halfwidth is not None and max_deals is None:
        raise ValueError("a head-to-head played until its interval is narrow enough needs max_deals")
    target, played, records = deals, 0, []
    while True:
        arena = ArenaConfig(
            agents=(agent, opponent), rules=rules, episode=episode, deals=target, seed=seed, workers=workers
        )
        records += run_arena(arena, progress=progress, first_deal=played)
        played = target
        estimate = margins(arena, records)[agent][opponent]
        measured = estimate.n >= 2  # one deal has no interval: its zero width says nothing
        if halfwidth is None or max_deals is None or (measured and estimate.halfwidth <= halfwidth):
            return estimate
        if played >= max_deals:
            width = f"+-{estimate.halfwidth:.2f} points per round" if measured else "no interval"
            warnings.warn(
                f"learning-curve point against {opponent}: {width} after "
                f"eval.max_deals={max_deals} deals, wider than eval.halfwidth={halfwidth}",
                stacklevel=2,
            )
            return estimate
        if not measured:
            target = min(max_deals, played + 1)
        else:
            target = min(max_deals, max(played + 1, math.ceil(1.1 * played * (estimate.halfwidth / halfwidth) ** 2)))


def read_curve(path: Path) -> list[dict[str, str]]:
    """The rows of a learning-curve CSV file (none when it does not exist yet)."""
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@dataclass(frozen=True)
class CurveLine:
    """One line of a learning-curve plot: a margin at each point, with its 95% interval."""

    label: str
    mean: Sequence[float]
    low: Sequence[float]
    high: Sequence[float]


def plot_curve(
    path: Path,
    x: Sequence[int],
    lines: Sequence[CurveLine],
    *,
    xlabel: str,
    title: str | None = None,
    note: str | None = None,
    size: tuple[float, float] = (8, 4.5),
    every_x: bool = False,
) -> None:
    """A learning-curve PNG at ``path`` (written atomically): each line's margin per point with
    its 95% interval shaded, the zero line, ``note`` (e.g. which deals the points played) under
    the title; ``every_x`` marks each point's x (few points, such as rounds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    for line in lines:
        ax.plot(x, line.mean, marker="o", label=line.label)
        ax.fill_between(x, line.low, line.high, alpha=0.15)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("points margin per round (95% CI)")
    if title is not None and note is not None:
        ax.set_title(f"{title}\n{note}", fontsize=10)
    elif title is not None:
        ax.set_title(title)
    if every_x:
        ax.set_xticks(list(x))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save_atomically(path, lambda temporary: fig.savefig(temporary, dpi=110, format="png"))
    plt.close(fig)
