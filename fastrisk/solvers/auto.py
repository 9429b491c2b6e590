"""``solver="auto"``: the solver to use for a problem.

Provisional rule until benchmarks/ measurements replace it: BMRM handles
every loss and penalty.
"""


def choose(problem):
    return "bmrm"
