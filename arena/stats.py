"""Statistics of the arena: means with 95% confidence intervals over independent deals."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: The two-sided 95% quantile of the normal distribution.
Z95 = 1.959964


@dataclass(frozen=True)
class Estimate:
    """A mean with a 95% confidence interval over ``n`` units. One unit has no interval to
    measure: ``low`` and ``high`` are then the mean itself, and :meth:`fmt` says so."""

    mean: float
    low: float
    high: float
    n: int
    clipped: bool = False
    """Whether a bound was cut to the possible range (a win rate stays within 0..1)."""

    @property
    def halfwidth(self) -> float:
        """Half the interval's width: the ``x`` of ``mean ± x``."""
        return (self.high - self.low) / 2

    def fmt(self, percent: bool = False, digits: int = 1) -> str:
        """``mean ± x``; ``mean (low .. high)`` where a bound was clipped to the possible range
        (the interval is not symmetric); the mean alone for a single unit (no interval).

        Examples:
            >>> mean_ci([0.0, 1.0, 1.0, 1.0]).fmt(percent=True), mean_ci([0.0, 1.0, 1.0, 1.0], (0, 1)).fmt(True)
            ('75.0% ± 49.0', '75.0% (26.0 .. 100.0)')
            >>> mean_ci([2.5]).fmt()
            '2.5 (one deal: no interval)'
        """
        if self.n == 0 or math.isnan(self.mean):
            return "n/a"
        scale = 100.0 if percent else 1.0
        unit = "%" if percent else ""
        mean = f"{self.mean * scale:.{digits}f}{unit}"
        if self.n == 1:
            return f"{mean} (one deal: no interval)"
        if self.clipped:
            return f"{mean} ({self.low * scale:.{digits}f} .. {self.high * scale:.{digits}f})"
        return f"{mean} ± {self.halfwidth * scale:.{digits}f}"


NOT_MET = Estimate(float("nan"), float("nan"), float("nan"), 0)  # never at a table together


def mean_ci(values: Sequence[float], clip: tuple[float, float] | None = None) -> Estimate:
    """Mean and normal 95% interval over independent units.

    Examples:
        >>> estimate = mean_ci([1.0, 2.0, 3.0])
        >>> estimate.mean, estimate.fmt()
        (2.0, '2.0 ± 1.1')
    """
    n = len(values)
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    mean = sum(values) / n
    if n == 1:  # no spread to measure: the bounds are the mean, and fmt shows no interval
        return Estimate(mean, mean, mean, 1)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = Z95 * math.sqrt(var / n)
    low, high = mean - half, mean + half
    if clip is not None and (low < clip[0] or high > clip[1]):
        return Estimate(mean, max(clip[0], low), min(clip[1], high), n, clipped=True)
    return Estimate(mean, low, high, n)
