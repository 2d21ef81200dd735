"""Small statistics shared by summaries and reports."""

import math

Z95 = 1.959963984540054
"""Two-sided 95% normal quantile."""


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Unlike the normal approximation it stays inside [0, 1] and behaves at
    win rates near 0 or 1, which rule variants and weak policies produce.
    (nan, nan) when there are no trials.
    """
    if trials <= 0:
        return (math.nan, math.nan)
    if not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    p = successes / trials
    z2 = z * z
    denom = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))
