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
    # The ends are exactly 0 with no successes and 1 with no failures (the arithmetic leaves ~1e-22).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return (low, high)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts of a paired 2x2 table.

    `b` pairs where only the first member succeeded, `c` where only the
    second did. Under the null hypothesis each discordant pair goes either
    way with probability 1/2, so the p-value is the two-sided exact binomial
    test of k = min(b, c) successes in n = b + c trials at 1/2. That
    distribution is symmetric, so the outcomes no likelier than k are the
    two tails from k and from n - k outwards, and the p-value is
    2 * P(X <= k), capped at 1: 1 exactly when k >= (n - 1) / 2, where the
    tails meet or overlap. P(X <= k) is the regularized incomplete beta
    function I_1/2(n - k, k + 1) (Abramowitz and Stegun 26.5.24), which
    scipy.special.betainc computes with Boost's ibeta, to full precision
    near the centre of a large binomial too (scipy.special.bdtr, the same
    function by cephes, is off by 4e-4 at three million pairs a side).
    It is scipy.stats.binomtest's p-value, save where binomtest counts an
    outcome within a relative 1e-7 of k's probability as a tie, which
    happens only a pair or two from the centre of more than ten million;
    tests/test_stats.py holds the two together. Not binomtest itself:
    importing scipy.stats takes over a second, which `sim compare` would
    pay on every call. 1.0 when there is no discordant pair (no evidence
    either way).
    """
    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    k, n = min(b, c), b + c
    if 2 * k + 1 >= n:  # P(X <= k) >= 1/2: the two tails cover every outcome
        return 1.0
    from scipy.special import betainc  # here, so that `import sim` does not load scipy

    return min(1.0, 2.0 * float(betainc(n - k, k + 1, 0.5)))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of p-values for testing them together (Holm 1979, Scand. J. Statist. 6: 65-70).

    The i-th smallest of m p-values is multiplied by m - i (i from 0), each kept
    at least as large as the one before it and at most 1. Rejecting where the
    adjusted p is below alpha keeps the chance of any false rejection among
    the m below alpha, whatever their dependence (the pairs of a comparison
    share runs).
    """
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_difference_interval(n: int, b: int, c: int, z: float = Z95) -> tuple[float, float]:
    """Confidence interval for p1 - p2, two success rates measured on the same n pairs.

    `b` pairs where only the first member succeeded, `c` where only the
    second did; the estimate is (b - c) / n. The interval is the Wald
    interval with the Bonett-Price (2012) Laplace adjustment: with
    p12 = (b + 1) / (n + 2) and p21 = (c + 1) / (n + 2),

        (p12 - p21) +- z * sqrt((p12 + p21 - (p12 - p21)**2) / (n + 2))

    clipped to [-1, 1]. Fagerland, Lydersen and Laake (Stat. Med. 2014,
    "Recommended tests and confidence intervals for paired binomial
    proportions") recommend it: near-nominal coverage even for few pairs,
    and unlike the plain Wald interval it is not degenerate when b = c = 0.
    For the hundreds of thousands of games of a run it equals the plain
    paired Wald interval (b - c) / n +- z * sqrt(b + c - (b - c)**2 / n) / n.
    (nan, nan) when there are no pairs.
    """
    n, b, c = int(n), int(b), int(c)
    if n <= 0:
        return (math.nan, math.nan)
    if b < 0 or c < 0 or b + c > n:
        raise ValueError(f"need b, c >= 0 and b + c <= n, got n={n}, b={b}, c={c}")
    p12 = (b + 1) / (n + 2)
    p21 = (c + 1) / (n + 2)
    d = p12 - p21
    half = z * math.sqrt(max(0.0, p12 + p21 - d * d) / (n + 2))
    return (max(-1.0, d - half), min(1.0, d + half))


def quantile_from_counts(counts: dict[int, int] | list[tuple[int, int]], q: float) -> float | None:
    """The q-quantile of integer values given as value -> count, with linear interpolation.

    The same definition as numpy's and polars' "linear" method on the
    expanded sample (position (N - 1) * q between the sorted values), so a
    report built from a histogram of 1e7 games needs no sort. None when
    the counts are empty.
    """
    if not 0 <= q <= 1:
        raise ValueError(f"quantile must be in [0, 1], got {q}")
    items = sorted((int(v), int(k)) for v, k in (counts.items() if isinstance(counts, dict) else counts) if k > 0)
    total = sum(k for _, k in items)
    if total == 0:
        return None
    pos = (total - 1) * q
    lo_index, frac = int(math.floor(pos)), pos - math.floor(pos)

    def value_at(i: int) -> int:
        seen = 0
        for v, k in items:
            seen += k
            if i < seen:
                return v
        return items[-1][0]

    lo = value_at(lo_index)
    if frac == 0:
        return float(lo)
    hi = value_at(lo_index + 1)
    return lo + (hi - lo) * frac


def t95(df: int) -> float:
    """Two-sided 95% quantile of Student's t with `df` degrees of freedom (Z95 as df grows)."""
    from scipy.special import stdtrit  # here, so that `import sim` does not load scipy

    return float(stdtrit(df, 0.975))


def mean_interval(mean: float, var: float, count: int) -> tuple[float | None, float | None]:
    """Student's t 95% interval of a mean of `count` >= 2 values with sample variance `var` (Student 1908,
    "The probable error of a mean", Biometrika 6: 1-25): mean +- t(0.975, count - 1) * sqrt(var / count). With
    few values it is wider than the normal interval (2 values: 12.7 standard errors instead of 1.96); with
    thousands, the same to three digits.

    (None, None) when `var` is 0 (every value the same): the interval would have no width, which reads as a
    mean known exactly, where the values only show no spread to measure it by (a few games that all scored 7
    say little about the next ones)."""
    if var <= 0:
        return None, None
    half = t95(count - 1) * math.sqrt(var / count)
    return mean - half, mean + half


def mean_interval_from_counts(counts: dict[int, int] | list[tuple[int, int]],
                              ) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high): the mean of integer values given as value -> count, with its 95% interval
    (`mean_interval`). (None, None, None) without values; the ends are None with a single value, and with
    values all equal (`mean_interval`).
    """
    items = [(int(v), int(k)) for v, k in (counts.items() if isinstance(counts, dict) else counts) if k > 0]
    total = sum(k for _, k in items)
    if total == 0:
        return None, None, None
    mean = sum(v * k for v, k in items) / total
    if total == 1:
        return mean, None, None
    var = sum(k * (v - mean) ** 2 for v, k in items) / (total - 1)
    return (mean, *mean_interval(mean, var, total))


def score_per_deal(wins: int, mean_score: float | None, games: int) -> float:
    """Mean score over all the games, a lost game counting 0 (what a player scores per deal dealt), from the
    mean score of the won ones."""
    return wins * mean_score / games if wins else 0.0


def pct_text(x: float, digits: int = 2, signed: bool = False) -> str:
    """A share as a percentage with `digits` decimals, or more near 0 and 100%: two significant digits of the
    distance, so a share that is not 0 or 1 never reads 0% or 100% (4e-6 is "0.00040%", 0.99996 "99.9960%").
    `signed`: with its sign (a difference)."""
    v = 100 * x
    if math.isfinite(v):
        for gap in (abs(v), round(abs(100 - abs(v)), 12)):  # rounded: 100 - 99.999 is 0.001, not 0.000999..
            if gap != 0 and gap < 10 ** (1 - digits):
                digits = max(digits, 1 - math.floor(math.log10(gap)))
    return f"{v:{'+' if signed else ''}.{digits}f}%"
