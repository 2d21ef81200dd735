"""sim.stats against values computed independently: textbook examples, exact sums, simulation."""

import math
from fractions import Fraction

import numpy as np
import pytest

from sim.stats import mcnemar_exact, mean_interval_from_counts, paired_difference_interval, quantile_from_counts, wilson


def test_wilson_on_hand_made_tables():
    # 8 of 10: centre (0.8 + z^2/20) / (1 + z^2/10), known answer (0.4902, 0.9433)
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=5e-5) and high == pytest.approx(0.9433, abs=5e-5)
    # 0 of n: the lower end is 0 and the upper end has the closed form z^2 / (n + z^2)
    z2 = 1.959963984540054 ** 2
    assert wilson(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    assert wilson(10, 10) == pytest.approx((10 / (10 + z2), 1.0))
    # 1 of 2 is symmetric about one half
    low, high = wilson(1, 2)
    assert low + high == pytest.approx(1.0)
    assert all(math.isnan(x) for x in wilson(0, 0))
    with pytest.raises(ValueError):
        wilson(3, 2)


def exact_mcnemar(b: int, c: int) -> float:
    """2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1: summed exactly with fractions."""
    m = b + c
    tail = sum(Fraction(math.comb(m, k), 2 ** m) for k in range(min(b, c) + 1))
    return float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize("b,c,expected", [
    (1, 6, 0.125),      # 2 * (1 + 7) / 128
    (6, 1, 0.125),      # symmetric
    (0, 5, 0.0625),     # 2 / 32
    (3, 3, 1.0),
    (0, 0, 1.0),        # no discordant game: no evidence either way
    (0, 1, 1.0),
])
def test_mcnemar_exact_on_hand_made_tables(b, c, expected):
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("b,c", [(10, 25), (40, 31), (2, 17), (117, 160)])
def test_mcnemar_exact_equals_the_exact_binomial_sum(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(exact_mcnemar(b, c), rel=1e-9)


@pytest.mark.parametrize("b,c", [(0, 1), (1, 2), (7, 9), (30, 31), (500, 600), (12_345, 12_600),
                                 (1_000_000, 1_000_002), (1_000_000, 1_004_000), (3_000_000, 3_000_100),
                                 (3_000_000, 3_005_000), (4_000_000, 4_020_000), (10, 5_000_000)])
def test_mcnemar_exact_is_scipy_s_binomial_test(b, c):
    # Large tables too: near the centre of millions of pairs, where cephes' binomial distribution function
    # (scipy.special.bdtr) is off in the fourth digit.
    from scipy.stats import binomtest

    want = binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(want, rel=1e-9, abs=1e-300)
    assert mcnemar_exact(c, b) == mcnemar_exact(b, c)


def test_mcnemar_exact_is_one_where_the_two_tails_meet():
    # n odd and k = (n - 1) / 2: P(X <= k) is exactly 1/2, so the p-value is exactly 1 (not 1 - 1e-16).
    assert mcnemar_exact(3_000_000, 3_000_001) == 1.0 and mcnemar_exact(4, 5) == 1.0
    assert mcnemar_exact(4, 6) < 1.0


def test_paired_interval_matches_a_textbook_example():
    # Agresti, Categorical Data Analysis, presidential approval: 1600 people asked twice,
    # 150 approve -> disapprove, 86 disapprove -> approve. Difference 0.04, 95% CI (0.021, 0.059).
    low, high = paired_difference_interval(1600, 150, 86)
    assert round(low, 3) == 0.021 and round(high, 3) == 0.059
    assert (low + high) / 2 == pytest.approx((150 - 86) / 1600, abs=1e-3)


def test_paired_interval_is_bonett_and_price_s_formula_worked_by_hand():
    # n = 50 pairs, b = 10, c = 4: p12 = 11/52, p21 = 5/52, d = 6/52 = 0.1153846;
    # (p12 + p21 - d**2) / 52 = (832 - 36) / 2704 / 52 = 796 / 140608 = 0.005661129;
    # half width 1.959964 * sqrt(0.005661129) = 0.1474686: d -/+ it.
    low, high = paired_difference_interval(50, 10, 4)
    assert low == pytest.approx(6 / 52 - 0.1474686, abs=2e-7) and high == pytest.approx(6 / 52 + 0.1474686, abs=2e-7)


def test_paired_interval_is_antisymmetric_and_never_degenerate():
    low, high = paired_difference_interval(50, 7, 2)
    low2, high2 = paired_difference_interval(50, 2, 7)
    assert (low, high) == pytest.approx((-high2, -low2))
    low, high = paired_difference_interval(20, 0, 0)  # the plain Wald interval would be [0, 0]
    assert low < 0 < high and high == pytest.approx(-low)
    low, high = paired_difference_interval(5, 5, 0)
    assert -1 <= low < 1 and high <= 1
    assert all(math.isnan(x) for x in paired_difference_interval(0, 0, 0))
    with pytest.raises(ValueError):
        paired_difference_interval(10, 6, 6)


def test_paired_interval_covers_the_true_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    n, probs = 60, [0.15, 0.05, 0.3, 0.5]  # A only, B only, both, neither
    truth = probs[0] - probs[1]
    tables = rng.multinomial(n, probs, size=20_000)
    covered = 0
    for b, c, _, _ in tables:
        low, high = paired_difference_interval(n, b, c)
        covered += low <= truth <= high
    assert 0.93 <= covered / len(tables) <= 0.97


def test_quantiles_from_counts_equal_numpy_linear_quantiles():
    rng = np.random.default_rng(2)
    values = rng.integers(0, 25, size=1001)
    counts = dict(zip(*np.unique(values, return_counts=True)))
    for q in (0, 0.1, 0.25, 0.5, 0.75, 0.9, 1):
        assert quantile_from_counts(counts, q) == pytest.approx(np.quantile(values, q))
    assert quantile_from_counts({3: 1, 7: 1}, 0.5) == 5.0
    assert quantile_from_counts({}, 0.5) is None


def test_mean_interval_is_students_t():
    # Two wins, scores 2 and 6: mean 4, s = 2*sqrt(2), t(0.975, 1) = 12.706: 4 +- 25.41 (the normal interval,
    # 4 +- 3.92, would claim far more than two games show).
    mean, low, high = mean_interval_from_counts({2: 1, 6: 1})
    assert mean == 4 and (low, high) == pytest.approx((4 - 25.4124, 4 + 25.4124), abs=1e-4)
    # Against scipy's t interval on a larger sample, and close to the normal one there.
    from scipy import stats

    values = np.repeat(np.arange(25), np.arange(25) % 7 + 1)
    counts = {v: int((values == v).sum()) for v in range(25)}
    mean, low, high = mean_interval_from_counts(counts)
    se = values.std(ddof=1) / math.sqrt(len(values))
    assert (low, high) == pytest.approx(stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=se))
    assert high - mean == pytest.approx(1.959963984540054 * se, rel=0.02)  # t(0.975, 93) = 1.986
    assert mean_interval_from_counts({5: 1}) == (5, None, None) and mean_interval_from_counts({}) == (None,) * 3


def test_holm_multiplies_the_ith_smallest_by_m_minus_i_keeping_the_order():
    from sim.stats import holm

    # Sorted 0.01, 0.03, 0.04: 3 * 0.01, 2 * 0.03, then max(0.06, 1 * 0.04).
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([0.2]) == [0.2] and holm([]) == []
    rng = np.random.default_rng(5)
    for _ in range(200):
        p = list(rng.uniform(0, 0.2, rng.integers(1, 8)))
        adjusted = holm(p)
        assert all(a >= q for a, q in zip(adjusted, p)) and max(adjusted) <= 1.0
        by_p = [a for _, a in sorted(zip(p, adjusted))]
        assert by_p == sorted(by_p)  # the adjustment keeps the order of the p-values


def test_a_share_is_never_written_as_0_or_100_percent_unless_it_is():
    from sim.stats import pct_text

    assert pct_text(399_999 / 400_000, 4) == "99.99975%" and pct_text(1 / 400_000, 4) == "0.00025%"
    assert pct_text(1.0, 4) == "100.0000%" and pct_text(0.0, 4) == "0.0000%" and pct_text(0.1, 4) == "10.0000%"


def test_values_all_equal_have_no_t_interval_rather_than_one_of_no_width():
    # Three wins that all scored 5 gave the interval [5, 5]: certainty, from values that only show no spread.
    from sim.stats import mean_interval, mean_interval_from_counts

    assert mean_interval_from_counts({5: 3}) == (5.0, None, None)
    assert mean_interval(5.0, 0.0, 3) == (None, None)
    mean, low, high = mean_interval_from_counts({5: 2, 6: 1})
    assert low < mean < high
