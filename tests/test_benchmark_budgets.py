"""The tightening budgets of the side-by-side benchmarks (benchmarks/compare_peers.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from compare_peers import REFINE, TOLS, iteration_grid, tighten, time_to  # noqa: E402


def test_grids_hold_the_coarse_budgets_at_multiples_of_refine():
    assert TOLS[::REFINE] == [10.0 ** -k for k in range(1, 10)]
    assert iteration_grid(2, 14)[::REFINE] == [2 ** k for k in range(2, 15)]


def test_tighten_times_the_first_fine_budget_that_reaches_each_target():
    """J = 100 / (1 + i) after i seconds: the first budget with J <= target is
    ceil(100 / target - 1), found by the fine steps after the coarse sequence, each
    budget run at most once and none beyond the first coarse one reaching every target."""
    calls = []

    def fit(i):
        calls.append(i)
        return float(i), 100.0 / (1 + i)

    targets = [100.0 / 14.5, 100.0 / 7.2]  # reached from budgets 14 and 7 on
    points = tighten(fit, 40, targets)
    assert time_to(points, targets[0]) == 14.0
    assert time_to(points, targets[1]) == 7.0
    assert len(calls) == len(set(calls)) and max(calls) == 16


def test_tighten_stops_the_coarse_sequence_on_request():
    points = tighten(lambda i: (float(i), 1.0), 40, [0.5], lambda pts: len(pts) == 3)
    assert points == [(0.0, 1.0), (4.0, 1.0), (8.0, 1.0)]
