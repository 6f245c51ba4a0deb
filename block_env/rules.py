"""The game rules as one frozen, validated dataclass, plus named presets (docs/rules.md).

Every rule choice of docs/rules.md is a field of :class:`Rules`; env options (episode, reward,
observation, render mode) live elsewhere. ``Rules`` validates itself at construction and
raises ``ValueError`` naming the field and what it accepts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from block_env.tiles import TileSet, tile_set
from block_env.validation import check_bool, check_choice, check_int

FIRST_LEADS = ("lot", "heaviest")
NEXT_LEADS = ("rotate", "winner", "heaviest")
BLOCKED_SCORINGS = ("subtract_own", "others_total")
MIN_PLAYERS, MAX_PLAYERS = 2, 4
#: Double-two up to double-twelve; docs/rules.md uses 6 (default), 8 and 9.
MIN_PIP, MAX_PIP = 2, 12


@dataclass(frozen=True)
class Rules:
    """The rules of one Block dominoes game (docs/rules.md).

    Attributes:
        num_players: 2, 3 or 4 seats; turns go clockwise, seat + 1.
        max_pip: the set is double-``max_pip``: 6 (28 tiles, default), 8 (45), 9 (55).
        hand_size: tiles dealt to each seat; None = 7 with 2 players or partnerships,
            5 with 3 or 4 individuals. The rest of the set is out of play, never drawn.
        target: match target; None = 100 with 2 players or partnerships, 61 with 3-4.
        partnership: 4 players only; seats 0+2 and 1+3 are sides and pool their pips.
        first_lead: "lot" (uniform seat from the seeded RNG; free opening tile) or
            "heaviest" (holder of the heaviest double must lead it; with no double dealt,
            the heaviest tile, ties to the higher half).
        next_lead: "rotate" (one seat clockwise from the previous leader), "winner"
            (previous round's winner leads any tile; after a tied block the lead rotates),
            or "heaviest" (as first_lead "heaviest", every round).
        blocked_scoring: "subtract_own" (others' pips minus own) or "others_total".
        club_doubling: double the award when the winner goes out with a double or with a
            tile that fitted both open ends.

    Examples:
        >>> from block_env import Rules
        >>> rules = Rules(num_players=3)
        >>> rules.resolved_hand_size, rules.resolved_target, rules.tile_set.num_tiles
        (5, 61, 28)
        >>> Rules(num_players=5)
        Traceback (most recent call last):
        ...
        ValueError: Rules.num_players must be an int in 2..4, got 5
    """

    num_players: int = 2
    max_pip: int = 6
    hand_size: int | None = None
    target: int | None = None
    partnership: bool = False
    first_lead: str = "lot"
    next_lead: str = "rotate"
    blocked_scoring: str = "subtract_own"
    club_doubling: bool = False

    def __post_init__(self) -> None:
        check_int("Rules.num_players", self.num_players, MIN_PLAYERS, MAX_PLAYERS)
        check_int("Rules.max_pip", self.max_pip, MIN_PIP, MAX_PIP)
        check_bool("Rules.partnership", self.partnership)
        check_bool("Rules.club_doubling", self.club_doubling)
        if self.partnership and self.num_players != 4:
            raise ValueError(
                f"Rules.partnership needs num_players=4 (partners sit opposite), got num_players={self.num_players}"
            )
        num_tiles = self.tile_set.num_tiles
        if self.hand_size is not None:
            check_int("Rules.hand_size", self.hand_size, low=1)
        if self.num_players * self.resolved_hand_size > num_tiles:
            raise ValueError(
                f"Rules.hand_size: {self.num_players} players x {self.resolved_hand_size} tiles "
                f"is more than the {num_tiles} tiles of a double-{self.max_pip} set; "
                f"allowed 1..{num_tiles // self.num_players}"
            )
        if self.target is not None:
            check_int("Rules.target", self.target, low=1)
        check_choice("Rules.first_lead", self.first_lead, FIRST_LEADS)
        check_choice("Rules.next_lead", self.next_lead, NEXT_LEADS)
        check_choice("Rules.blocked_scoring", self.blocked_scoring, BLOCKED_SCORINGS)

    def __deepcopy__(self, memo: dict[int, Any]) -> Rules:
        return self  # immutable: copies of a game state share it

    # Resolved values: what None means for these rules (docs/rules.md defaults table).
    @property
    def resolved_hand_size(self) -> int:
        if self.hand_size is not None:
            return self.hand_size
        return 7 if self.num_players == 2 or self.partnership else 5

    @property
    def resolved_target(self) -> int:
        if self.target is not None:
            return self.target
        return 100 if self.num_players == 2 or self.partnership else 61

    @property
    def tile_set(self) -> TileSet:
        return tile_set(self.max_pip)

    @property
    def num_sides(self) -> int:
        """A side is a player, or a partnership of two opposite seats."""
        return 2 if self.partnership else self.num_players

    def side_of(self, seat: int) -> int:
        return seat % 2 if self.partnership else seat

    def replace(self, **changes: Any) -> Rules:
        """A copy with ``changes`` applied, validated like any new Rules."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"unknown Rules field(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)

    @classmethod
    def preset(cls, name: str) -> Rules:
        """A named preset (see :data:`PRESETS`); ValueError lists the names if unknown."""
        if not isinstance(name, str):
            raise ValueError(f"a rules preset is named by a string, got {name!r} ({type(name).__name__})")
        try:
            return PRESETS[name]
        except KeyError:
            raise ValueError(f"unknown rules preset {name!r}; presets: {', '.join(PRESETS)}") from None

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (what replays and configs store; :meth:`from_dict` reads it)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Rules:
        """Rules from a mapping of field values (e.g. a YAML config); unknown keys are errors."""
        if not isinstance(values, dict):
            raise ValueError(f"rules must be a mapping of Rules fields, got {values!r}")
        return cls().replace(**values)


def resolve_rules(rules: Rules | str | None) -> Rules:
    """A Rules object from a Rules, a preset name, or None (the default rules)."""
    if rules is None:
        return Rules()
    if isinstance(rules, Rules):
        return rules
    if isinstance(rules, str):
        return Rules.preset(rules)
    raise TypeError(f"rules must be a block_env.Rules, a preset name or None, got {type(rules).__name__}")


#: Named presets (docs/rules.md, Presets). "standard" is the default game; "house_*" are the
#: house rules (the heaviest double leads the first round, the winner leads the next, blocked
#: rounds score the others' total, 100 points for every player count).
PRESETS: dict[str, Rules] = {
    "standard": Rules(),
    "standard_3p": Rules(num_players=3),
    "standard_4p": Rules(num_players=4),
    "partnership": Rules(num_players=4, partnership=True),
    "house": Rules(first_lead="heaviest", next_lead="winner", blocked_scoring="others_total", target=100),
    "house_3p": Rules(
        num_players=3, first_lead="heaviest", next_lead="winner", blocked_scoring="others_total", target=100
    ),
    "house_4p": Rules(
        num_players=4, first_lead="heaviest", next_lead="winner", blocked_scoring="others_total", target=100
    ),
    "house_4p_full": Rules(
        num_players=4,
        hand_size=7,
        first_lead="heaviest",
        next_lead="winner",
        blocked_scoring="others_total",
        target=100,
    ),
    "highest_double": Rules(first_lead="heaviest", next_lead="heaviest"),
    "club": Rules(club_doubling=True),
    "hungarian": Rules(max_pip=8),
    "double_nine_4p": Rules(num_players=4, max_pip=9, hand_size=10),
    # Small enough for exact game-theoretic methods (docs/openspiel.md): 2 players, 2 tiles each.
    "tiny": Rules(max_pip=2, hand_size=2),
    "small": Rules(max_pip=3, hand_size=2),
    # Solved by the project's own solver (docs/solver.md): the double-three set, 2 players x 3 tiles.
    "medium": Rules(max_pip=3, hand_size=3),
}
