"""``solver="auto"``: the solver to use for a problem, from measurements.

The rule (first match wins; estimators show the choice in ``solver_``):

1. vector losses (softmax, multiclass_hinge): ``lbfgs`` when the loss is
   smooth and the penalty differentiable ("l2", "lp"), else ``bmrm`` (the
   solvers for a weight matrix);
2. a smooth loss with a differentiable penalty on data with fewer features than
   samples: ``lbfgs``;
3. a loss with an SDCA dual step and a strongly convex penalty ("l2", or
   "elasticnet" with l1_ratio < 1): ``sdca``;
4. penalty "lp" with a Lipschitz loss: ``pgs`` (its steps assume bounded
   loss derivatives);
5. smooth losses with a differentiable penalty (no l1 term): ``lbfgs``;
6. everything else (an l1 term, non-smooth losses without a dual step, ...):
   ``bmrm``, which handles every loss and penalty with a certificate.

Budget: without ``max_iter``, "auto" runs until ``tol`` is certified, for at most
AUTO_TIME_LIMIT seconds (``default_budget``): an epoch count that suits one data set
stops another short of ``tol``.

A candidate is skipped when its registry record (``SOLVER_INFO``) does not
accept the problem, e.g. on a Dask problem, which has only its risk oracle.

The measurements behind the order are in benchmarks/RESULTS.md ("solver='auto'",
produced by benchmarks/compare_peers.py): SDCA is the fastest fastrisk solver
for hinge and logistic with l2 when there are more features than samples;
L-BFGS for smooth losses with fewer features than samples; for an l1 term
the solvers with a certificate are the batch ones.  Hinge keeps SDCA: L-BFGS
sometimes gets there first, but for a nonsmooth loss it has no certificate to
honour ``tol``.
"""

from fastrisk.solvers import SOLVERS

# The default budget of solver="auto" when max_iter is not given: an iteration count that
# does not stop a run short of tol (SDCA on a hinge loss with a small alpha needs
# O(1 / (alpha tol)) epochs, thousands on the data sets in benchmarks/), guarded by time.
AUTO_MAX_ITER = 1_000_000
AUTO_TIME_LIMIT = 3600.0


def _preferences(problem):
    """Solver names in the order of the rule above (the first that takes the problem wins)."""
    spec, reg, data = problem.loss.spec, problem.regularizer, problem.data
    if spec.vector:
        return ["lbfgs", "bmrm"] if spec.smooth and reg.differentiable else ["bmrm"]
    order = []
    if spec.smooth and reg.differentiable and data is not None \
            and data.n_features < data.n_samples:
        order.append("lbfgs")
    if spec.dual_step and reg.strongly_convex:
        order.append("sdca")
    if problem.penalty == "lp" and spec.lipschitz is not None:
        order.append("pgs")
    if spec.smooth and reg.differentiable:
        order.append("lbfgs")
    return order + ["bmrm"]


def choose(problem):
    """Name of the solver the rule above picks for ``problem``, among those whose registry
    record accepts it (a Dask problem has no rows: only the oracle-only solvers)."""
    for name in _preferences(problem):
        if name in SOLVERS and SOLVERS[name].why_not(problem) is None:
            return name
    raise ValueError(f"no solver takes {problem!r}")


def default_budget(options):
    """``options`` with auto's budget: without ``max_iter``, AUTO_MAX_ITER iterations and
    (unless given) a time limit of AUTO_TIME_LIMIT seconds; a given max_iter is kept as is."""
    if options.get("max_iter") is not None:
        return options
    options = dict(options, max_iter=AUTO_MAX_ITER)
    if options.get("time_limit") is None:
        options["time_limit"] = AUTO_TIME_LIMIT
    return options
