"""Small statistics for noisy timings: medians, percentiles, spreads."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def median(xs: Sequence[float]) -> float:
    """The median; NaN for no samples."""
    return statistics.median(xs) if xs else math.nan


def percentile(xs: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100), linear interpolation between closest ranks."""
    if not xs:
        return math.nan
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def spread(xs: Sequence[float]) -> tuple[float, float]:
    """(min, max) of the samples, the honest spread for a handful of runs."""
    return (min(xs), max(xs)) if xs else (math.nan, math.nan)


def ratio_samples(num: Sequence[float], den: Sequence[float]) -> list[float]:
    """Per-pair ratios of interleaved runs (pairs i of num and den ran back to back)."""
    return [a / b for a, b in zip(num, den, strict=False) if b > 0]
