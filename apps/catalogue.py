"""The opponents a person can pick in the browser app, by readable name, with the strength
the arena measured for each (results/README.md): the one place these names and figures live.

Every figure is a head-to-head margin as the arena publishes it: the agent's points minus
the other agent's, per round at the same table, on duplicate deals, with its 95% interval
(docs/results.md). Each keeps the text it has in its results file, and the file it is in, so a
test can check the two agree. Rules without a measured figure list the scripted agents with
their description only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from block_env.rules import PRESETS


@dataclass(frozen=True)
class Measured:
    """One published head-to-head figure: ``figure`` is its text in ``where`` (a margin
    and its interval, "+0.71 (+0.61 .. +0.81)" or "1.3 ± 0.4"), ``against`` the other agent."""

    figure: str
    against: str
    deals: int
    where: str

    @property
    def margin(self) -> float:
        """Points per round over ``against`` (the figure's leading number)."""
        return float(self.figure.split()[0].replace("−", "-"))

    @property
    def interval(self) -> tuple[float, float]:
        """The figure's 95% interval: "(low .. high)", or the margin ± its half-width."""
        text = self.figure.replace("−", "-")
        if "±" in text:
            half = float(text.split("±")[1].split()[0])
            return self.margin - half, self.margin + half
        low, high = text.split("(")[1].rstrip(")").split("..")
        return float(low), float(high)

    def sentence(self, names: dict[str, str]) -> str:
        """ "beats search by +0.71 points a round" (or "loses to ... by 1.29"; "about even with
        ..." where the interval holds zero: the measurement cannot tell them apart)."""
        other = names.get(self.against, self.against)
        amount = self.figure.split()[0].lstrip("+-−")  # as printed: "1.0", not "1"
        low, high = self.interval
        if low <= 0 <= high:
            sign = "+" if self.margin >= 0 else "−"
            return f"about even with {other} ({sign}{amount} points a round, not told apart)"
        if self.margin >= 0:
            return f"beats {other} by +{amount} points a round"
        return f"loses to {other} by {amount} points a round"


@dataclass(frozen=True)
class Opponent:
    """One agent a person may play against: its spec (what the server builds), a readable
    name, a level word, what it does, and its measured figures (strongest claim first)."""

    spec: str
    name: str
    level: str
    description: str
    measured: tuple[Measured, ...] = ()

    def strength(self, names: dict[str, str]) -> str:
        """The picker's line: "strong: beats search by +0.71 points a round"."""
        if not self.measured:
            return f"{self.level}: not measured on these rules"
        return f"{self.level}: {self.measured[0].sentence(names)}"


#: The scripted agents, weakest first (agents/scripted.py, agents/search.py).
SCRIPTED = (
    Opponent("random", "Random", "beginner", "plays any tile that fits"),
    Opponent("greedy", "Greedy", "easy", "plays its heaviest tile that fits"),
    Opponent(
        "strategic",
        "Strategic",
        "medium",
        "heavy tiles and doubles early, keeps tiles for the ends, reads the suits others passed on",
    ),
    Opponent("search", "Search", "strong", "tries every move on 96 guesses of the hidden hands, each played out"),
)


def _ladder(
    preset: str,
    deals: int,
    *figures: str,
    search_level: str = "strong",
    larger: tuple[str, str, int, str] | None = None,
) -> list[Opponent]:
    """The scripted agents with the figures of ``bash scripts/ladder.sh`` for ``preset``
    (the preset's summary.md under results/ladder/): random, greedy and strategic against the rung above,
    search against strategic. ``larger``: strategic's figure against search, search's against
    strategic, the deals and the file of a larger arena, used for those two instead."""
    where = f"results/ladder/{preset}/summary.md"
    against = ("greedy", "strategic", "search", "strategic")
    measured = [Measured(figure, other, deals, where) for figure, other in zip(figures, against, strict=True)]
    if larger is not None:
        lose, win, larger_deals, larger_where = larger
        measured[2] = Measured(lose, "search", larger_deals, larger_where)
        measured[3] = Measured(win, "strategic", larger_deals, larger_where)
    return [
        Opponent(o.spec, o.name, search_level if o.spec == "search" else o.level, o.description, (m,))
        for o, m in zip(SCRIPTED, measured, strict=True)
    ]


RESULTS = "results/README.md"

_PARTNERSHIP_LADDER = _ladder(
    "partnership", 300, "-2.8 ± 1.1", "-3.8 ± 0.9", "-3.4 ± 1.1", "3.4 ± 1.1", search_level="very strong"
)
_CATALOGUE: dict[str, list[Opponent]] = {
    "standard": [
        *_ladder("standard", 400, "-2.4 ± 0.6", "-1.1 ± 0.4", "-1.3 ± 0.4", "1.3 ± 0.4"),
        Opponent(
            "pretrained:standard_vector",
            "Early network",
            "strong",
            "the first shipped network: learned from search's moves, then by playing",
            (Measured("+0.25 (+0.11 .. +0.38)", "search", 4000, RESULTS),),
        ),
        Opponent(
            "pretrained:standard_belief",
            "Second network",
            "very strong",
            "the second network: learned from a search that reads what your moves say about your hand",
            (
                Measured("+0.68 (+0.58 .. +0.77)", "search", 8000, RESULTS),
                Measured("+1.97 (+1.77 .. +2.17)", "strategic", 2000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:standard_tracked",
            "Third network",
            "very strong",
            "the third network: learned every move's value from a search that reads your moves, guided by the second network",
            (
                Measured("+0.71 (+0.61 .. +0.81)", "search", 8000, RESULTS),
                Measured("+0.19 (+0.11 .. +0.27)", "pretrained:standard_belief", 8000, RESULTS),
                Measured("+2.21 (+2.00 .. +2.42)", "strategic", 2000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:standard_fifth",
            "Fourth network",
            "very strong",
            "the fourth network: taught round after round by a search the last round's network guides, the later rounds averaged",
            (
                Measured("+0.90 (+0.81 .. +1.00)", "search", 8000, RESULTS),
                Measured("+0.14 (+0.11 .. +0.17)", "pretrained:standard_tracked", 32000, RESULTS),
                Measured("+2.18 (+1.98 .. +2.38)", "strategic", 2000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:standard_sixth",
            "Fifth network",
            "very strong",
            "the fifth network: one more round of the fourth network's teaching, reading each position both ways round",
            (
                Measured("+0.91 (+0.84 .. +0.98)", "search", 16000, RESULTS),
                Measured("+0.07 (+0.05 .. +0.10)", "pretrained:standard_fifth", 32000, RESULTS),
                Measured("+2.31 (+2.11 .. +2.52)", "strategic", 2000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:standard_seventh",
            "Sixth network",
            "very strong",
            "the sixth network: one more round of the fifth network's teaching, reading each position both ways round",
            (
                Measured("+0.95 (+0.89 .. +1.02)", "search", 16000, RESULTS),
                Measured("+0.06 (+0.03 .. +0.08)", "pretrained:standard_sixth", 32000, RESULTS),
                Measured("+2.19 (+1.99 .. +2.40)", "strategic", 2000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:standard_thirteenth",
            "Seventh network",
            "very strong",
            "the seventh network: taught by searches of more sampled deals than the sixth network's, "
            "some in the sixth network's games against search",
            (
                Measured("+0.99 (+0.96 .. +1.02)", "search", 96000, RESULTS),
                Measured("+0.04 (+0.01 .. +0.07)", "pretrained:standard_seventh", 32000, RESULTS),
                Measured("+2.20 (+2.00 .. +2.41)", "strategic", 2000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:standard",
            "Network",
            "very strong",
            "the shipped network: the seventh network with a small scorer, shared by every move, that weighs "
            "what each move leaves: the open end, the tiles of its suit kept and unseen, your voids",
            (
                Measured("+1.00 (+0.97 .. +1.03)", "search", 64000, RESULTS),
                Measured("+0.024 (+0.007 .. +0.041)", "pretrained:standard_thirteenth", 32000, RESULTS),
                Measured("+2.26 (+2.05 .. +2.48)", "strategic", 2000, RESULTS),
            ),
        ),
        Opponent(
            "search:prior=pretrained:standard_vector,playout=policy,belief=prior",
            "Search + network",
            "strongest",
            "search guided by the first network, which weighs its guesses by what your moves say (slower)",
            (Measured("+1.03 (+0.76 .. +1.30)", "search", 1000, RESULTS),),
        ),
    ],
    "standard_3p": [
        *_ladder(
            "standard_3p",
            500,
            "-1.7 ± 0.6",
            "-0.8 ± 0.5",
            "-0.5 ± 0.6",
            "0.5 ± 0.6",
            larger=("-1.0 ± 0.2", "1.0 ± 0.2", 3000, "results/standard_3p_belief/arena-3000deals.md"),
        ),
        Opponent(
            "pretrained:standard_3p_vector",
            "Early network",
            "strong",
            "the first three-player network: learned from strategic's moves, then by playing",
            (Measured("+0.72 (+0.48 .. +0.96)", "strategic", 3000, RESULTS),),
        ),
        Opponent(
            "pretrained:standard_3p",
            "Network",
            "very strong",
            "the shipped network: learned from a search that reads what both other players' moves say about their hands",
            (
                Measured("+0.33 (+0.13 .. +0.52)", "search", 3000, RESULTS),
                Measured("+1.33 (+1.12 .. +1.54)", "strategic", 3000, RESULTS),
            ),
        ),
    ],
    "standard_4p": [
        *_ladder(
            "standard_4p",
            1000,
            "-1.4 ± 0.5",
            "-1.4 ± 0.6",
            "-0.5 ± 0.6",
            "0.5 ± 0.6",
            larger=("-0.8 ± 0.3", "0.8 ± 0.3", 3000, "results/standard_4p_belief/arena-3000deals.md"),
        ),
        Opponent(
            "pretrained:standard_4p_vector",
            "Early network",
            "strong",
            "the first four-player network: learned from strategic's moves, then by playing",
            (Measured("+1.07 (+0.76 .. +1.38)", "strategic", 3000, RESULTS),),
        ),
        Opponent(
            "pretrained:standard_4p",
            "Network",
            "very strong",
            "the shipped network: learned from a search that reads what the other three players' moves say about their hands",
            (
                Measured("+0.35 (+0.05 .. +0.64)", "search", 3000, RESULTS),
                Measured("+1.12 (+0.83 .. +1.42)", "strategic", 3000, RESULTS),
            ),
        ),
    ],
    "partnership": [
        *_PARTNERSHIP_LADDER[:3],
        Opponent(
            "pretrained:partnership_vector",
            "Early network",
            "medium",
            "the first shipped partnership network",
            (Measured("+0.67 (+0.06 .. +1.28)", "strategic", 1000, RESULTS),),
        ),
        Opponent(
            "pretrained:partnership_belief",
            "Second network",
            "strong",
            "the second partnership network: learned from a search that reads the other three players' moves",
            (
                Measured("−1.29 (−2.00 .. −0.59)", "search", 1000, RESULTS),
                Measured("+2.08 (+1.43 .. +2.72)", "strategic", 1000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:partnership_tracked",
            "Third network",
            "strong",
            "the third partnership network: learned every move's value from a search that reads all players' moves, guided by the second network",
            (
                Measured("−0.54 (−0.93 .. −0.15)", "search", 3000, RESULTS),
                Measured("+2.52 (+2.17 .. +2.88)", "strategic", 3000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:partnership_third",
            "Fourth network",
            "strong",
            "the fourth partnership network: learned every move's value from a search that reads all players' moves, guided by the third network",
            (
                Measured("−0.51 (−0.78 .. −0.23)", "search", 6000, RESULTS),
                Measured("+2.66 (+2.29 .. +3.03)", "strategic", 3000, RESULTS),
            ),
        ),
        Opponent(
            "pretrained:partnership_average",
            "Network",
            "strong",
            "the shipped network: the four rounds' networks averaged weight by weight, each taught by a search that reads all players' moves",
            (
                Measured("−0.20 (−0.36 .. −0.03)", "search", 16000, RESULTS),
                Measured("+0.28 (+0.13 .. +0.42)", "pretrained:partnership_third", 16000, RESULTS),
            ),
        ),
        *_PARTNERSHIP_LADDER[3:],  # search is stronger than the partnership networks
        Opponent(
            "pretrained:partnership",
            "Network + endgame",
            "very strong",
            "the shipped network, handing its last three tiles' moves to a quick search",
            (
                Measured("+0.68 (+0.51 .. +0.86)", "search", 16000, RESULTS),
                Measured("+0.46 (+0.32 .. +0.61)", "pretrained:partnership_average", 8000, RESULTS),
            ),
        ),
        Opponent(
            "search:prior=pretrained:partnership_vector,playout=policy,belief=prior,confidence=0",
            "Search + network",
            "strongest",
            "search guided by the first network, weighing its guesses by every player's moves (slower)",
            (Measured("+1.44 (+0.68 .. +2.20)", "search", 1000, RESULTS),),
        ),
    ],
}

#: The opponent a new game offers first, by rules (strategic where none is named): the
#: strongest agent that answers at once.
DEFAULTS = {
    "standard": "pretrained:standard",
    "standard_3p": "pretrained:standard_3p",
    "standard_4p": "pretrained:standard_4p",
    "partnership": "pretrained:partnership",
}
DEFAULT = "strategic"
#: The line under the picker: what every figure means.
FIGURES = (
    "points per round: this agent's minus the other's at the same table, on duplicate deals the "
    "agents never trained on, with a 95% interval (results/README.md)"
)


def opponents(preset: str) -> list[Opponent]:
    """The agents a person may pick for ``preset``, weakest first; ValueError names the presets."""
    if preset not in PRESETS:
        raise ValueError(f"unknown rules {preset!r}; rules: {', '.join(PRESETS)}")
    return list(_CATALOGUE.get(preset, SCRIPTED))


def default_opponent(preset: str) -> str:
    """The spec a new game of ``preset`` offers first."""
    opponents(preset)  # checks the name
    return DEFAULTS.get(preset, DEFAULT)


def catalogue(preset: str) -> dict[str, Any]:
    """What ``GET /api/opponents?rules=PRESET`` answers: the opponents with their strength
    lines and figures, the default, and the seats to fill (every seat but the person's)."""
    entries = opponents(preset)
    rules = PRESETS[preset]
    names = {o.spec: o.name for o in (*SCRIPTED, *entries)}
    return {
        "rules": preset,
        "num_players": rules.num_players,
        "partnership": rules.partnership,
        "target": rules.resolved_target,
        "hand_size": rules.resolved_hand_size,
        "fields": rules.as_dict(),
        "default": default_opponent(preset),
        "figures": FIGURES,
        "opponents": [
            {
                "spec": o.spec,
                "name": o.name,
                "level": o.level,
                "description": o.description,
                "strength": o.strength(names),
                "measured": [
                    {
                        "figure": m.figure,
                        "margin": m.margin,
                        "against": m.against,
                        "against_name": names.get(m.against, m.against),
                        "deals": m.deals,
                        "where": m.where,
                        "sentence": m.sentence(names),
                    }
                    for m in o.measured
                ],
            }
            for o in entries
        ],
    }
