"""The checks every option goes through, in one place: each raises ``ValueError`` naming the
option, what it accepts and what it got.

Rules fields, env options, agent options, arena and training configs and web requests all use
these, so the same mistake gets the same message wherever it is made. ``bool`` is never
accepted as a number (``True`` players is a bug, not a 1); numpy integers are integers.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, TypeGuard


def is_int(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is an integer (Python's or numpy's), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[float]:
    """Whether ``value`` is a finite real number, not a bool (NaN and inf are not)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int, or ValueError unless it is an integer in ``low..high`` (either bound may be open).

    Examples:
        >>> check_int("deals", 3, low=1)
        3
        >>> check_int("deals", 0, low=1)
        Traceback (most recent call last):
        ...
        ValueError: deals must be an int >= 1, got 0
    """
    if not is_int(value) or (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be an int{_range_text(low, high)}, got {value!r}")
    return int(value)


def check_number(name: str, value: Any, low: float | None = None, *, positive: bool = False) -> float:
    """``value`` as a float, or ValueError unless it is a finite number (``> 0`` when
    ``positive``, ``>= low`` when given)."""
    if not is_number(value) or (positive and value <= 0) or (low is not None and value < low):
        kind = "a positive finite number" if positive else "a finite number"
        raise ValueError(f"{name} must be {kind}{f' >= {low}' if low is not None else ''}, got {value!r}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """``value``, or ValueError unless it is a bool."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value``, or ValueError naming ``name`` and the allowed values unless it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def _range_text(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f" in {low}..{high}"
    if low is not None:
        return f" >= {low}"
    if high is not None:
        return f" <= {high}"
    return ""
