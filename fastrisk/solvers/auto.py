"""``solver="auto"``: the solver to use for a problem, from measurements.

The rule (first match wins; estimators show the choice in ``solver_``):

1. vector losses (softmax, multiclass_hinge): ``lbfgs`` for softmax with a
   differentiable penalty on data with fewer features than samples; else
   ``msdca`` (multiclass SDCA) with a strongly convex penalty on data (X, y);
   otherwise ``lbfgs`` when the loss is smooth and the penalty differentiable
   ("l2", "lp"), else ``bmrm``.  Measured by benchmarks/compare_multiclass.py
   (every method rerun from scratch with a growing budget; time to 1e-3 / 1e-4
   relative suboptimality as a ratio to the best peer, scikit-learn
   lbfgs/saga/newton-cg, cyanure, LIBLINEAR Crammer-Singer; 1 thread unless
   said): 20 Newsgroups (130108 features > 11314 rows) softmax alpha 1e-4,
   msdca 0.21 / 0.26 (2 threads 0.23 / 0.27), lbfgs 3.8 / 3.8; alpha 1e-6,
   msdca 0.30 / 0.70 (2 threads 0.29 / 0.69), lbfgs not there within the
   budget; multiclass hinge alpha 1e-4, msdca 0.38 / 0.25 (2 threads
   0.25 / 0.65); alpha 1e-6 (six times the budget, 1 thread), msdca 0.75 at
   1e-3 against LIBLINEAR.  MNIST (780 features < 10000 rows) softmax alpha
   1e-4: lbfgs 1.44 / 1.60 (2 threads 0.82 / 0.86; cyanure the best peer),
   msdca 1.28 / 1.41 (2 threads 1.30 / 1.40): on 1 thread msdca is ahead by
   about 10%, on 2 threads lbfgs by 1.6x, as only lbfgs's oracle gains from
   a second thread;
2. a binary loss with a second derivative (logistic, squared hinge, smoothed
   hinge, ...), penalty "l2", and Newton's working vectors (about
   NEWTON_VECTORS of length n_weights) within half the bytes of X: ``sdca``
   when the loss has an SDCA dual step (squared and smoothed hinge with a box
   it can shrink, logistic with its inexact step) and
   ``alpha * n_samples >= SDCA_ALPHA_M`` (SDCA needs about
   1 + 1/(alpha m gamma) epochs, Shalev-Shwartz & Zhang 2013, Theorem 1),
   else ``newton``;
3. a smooth loss with a differentiable penalty on data with fewer features than
   samples: ``lbfgs``;
4. an l1 or elastic-net penalty with a smooth loss on data (X, y): ``cd``
   (proximal Newton with coordinate-descent inner solves and a duality gap;
   measured by benchmarks/compare_l1.py against LIBLINEAR, saga, snapml,
   skglm and cyanure; BMRM's LP stays for the non-smooth losses);
5. a loss with an SDCA dual step and a strongly convex penalty ("l2", or
   "elasticnet" with l1_ratio < 1): ``sdca``;
6. penalty "lp" with a Lipschitz loss: ``pgs`` (its steps assume bounded
   loss derivatives);
7. smooth losses with a differentiable penalty (no l1 term): ``lbfgs``;
8. everything else (an l1 term, non-smooth losses without a dual step, ...):
   ``bmrm``, which handles every loss and penalty with a certificate.

Rule 2 (benchmarks/compare_binary.py, 1 thread, time to a certified 1e-3, no
intercept; a9a, w8a, ijcnn1, Reuters money-fx, phishing, mushrooms at alpha
1e-4 and 1e-6; Newton with the quadratic-model CG stop, the preconditioner and the
step certificate; differences below about 2x are within run-to-run noise):
for logistic, SDCA with the inexact step (csrc/fr_sdca.h) against Newton, both
at tol 1e-3 side by side in one process (best of 3, seconds): alpha 1e-4
(alpha m 0.78 to 5.0) SDCA first everywhere, mushrooms 0.0055 / 0.016, phishing
0.0047 / 0.012, a9a 0.017 / 0.044, w8a 0.016 / 0.064, ijcnn1 0.014 / 0.032,
Reuters 0.0044 / 0.013; alpha 1e-6 (alpha m 0.008 to 0.05) Newton first but on
mushrooms (separable: SDCA 0.015 against 0.027): a9a 1.0 against 0.053, w8a
0.58 / 0.11, ijcnn1 0.15 / 0.054, phishing 0.081 / 0.032, Reuters 0.064 / 0.040;
between them, alpha 1e-5 (alpha m 0.08 to 0.5), SDCA wins on five of six (0.3 to
0.9x Newton) and loses on a9a (0.12 against 0.044, alpha m 0.33), so no threshold
on alpha m separates every row and SDCA_ALPHA_M is the one of squared hinge.
On 2 threads (Newton's oracle threaded, SDCA's epochs not) SDCA stays first at
alpha 1e-4: 0.28 to 0.58x Newton's time on the same six sets.
For squared hinge SDCA at alpha 1e-4 (Reuters 0.008 against Newton 0.034,
phishing 0.008 against 0.028, w8a 0.064 against 0.087) and Newton at 1e-6
(a9a 0.047 against SDCA 3.5, w8a 0.17 against 1.5, phishing 0.017 against
0.21), where SDCA_ALPHA_M separates the two; the rule's Newton loses to SDCA on
mushrooms at 1e-6 (0.19 s against 0.019; separable, J* ~ 1e-5) and ties it on
Reuters (0.20 against 0.19).
IMDB bigrams stays with SDCA (rule 4): Newton's extra memory is 1.8x the data there
(benchmarks/memory_binary.py), SDCA's 0.5x.

Measurements behind the other rules: benchmarks/RESULTS.md ("solver='auto'",
produced by benchmarks/compare_peers.py): SDCA is the fastest fastrisk solver
for hinge and logistic with l2 when there are more features than samples;
L-BFGS for smooth losses with fewer features than samples; for an l1 term the
solvers with a certificate are the batch ones.  Hinge keeps SDCA: L-BFGS
sometimes gets there first, but for a nonsmooth loss it has no certificate to
honour ``tol``.

Budget: without ``max_iter``, "auto" runs until ``tol`` is certified, for at most
AUTO_TIME_LIMIT seconds (``default_budget``): an epoch count that suits one data set
stops another short of ``tol``.

A candidate is skipped when its registry record (``SOLVER_INFO``) does not
accept the problem, e.g. on a Dask problem, which has only its risk oracle.
"""

from fastrisk.solvers import SOLVERS

# measured extra memory of solve_newton in vectors of n_weights float64 (IMDB bigrams)
NEWTON_VECTORS = 18
# alpha * n_samples from which SDCA beats Newton on smooth binary losses with a dual step
SDCA_ALPHA_M = 0.1
# The default budget of solver="auto" when max_iter is not given: an iteration count that
# does not stop a run short of tol (SDCA on a hinge loss with a small alpha needs
# O(1 / (alpha tol)) epochs, thousands on the data sets in benchmarks/), guarded by time.
AUTO_MAX_ITER = 1_000_000
AUTO_TIME_LIMIT = 3600.0


def _newton_fits(problem):
    """A loss with a second derivative and Newton's vectors within half the bytes of X."""
    spec, data = problem.loss.spec, problem.data
    if not (spec.smooth and not spec.vector):
        return False
    data_bytes = data.data.nbytes + (0 if data.dense else data.indices.nbytes + data.indptr.nbytes)
    return NEWTON_VECTORS * 8 * problem.n_weights <= 0.5 * data_bytes


def _preferences(problem):
    """Solver names in the order of the rule above (the first that takes the problem wins)."""
    spec, reg, data = problem.loss.spec, problem.regularizer, problem.data
    if spec.vector:
        order = []
        if not (spec.smooth and reg.differentiable and data is not None
                and data.n_features < data.n_samples):
            order.append("msdca")   # needs rows and a strongly convex penalty (its record)
        return order + (["lbfgs", "bmrm"] if spec.smooth and reg.differentiable else ["bmrm"])
    order = []
    if spec.task == "binary" and problem.penalty == "l2" and data is not None \
            and _newton_fits(problem):
        if spec.dual_step and problem.alpha * data.n_samples >= SDCA_ALPHA_M:
            order.append("sdca")
        order.append("newton")
    if spec.smooth and reg.differentiable and data is not None \
            and data.n_features < data.n_samples:
        order.append("lbfgs")
    if spec.smooth and problem.penalty in ("l1", "elasticnet"):
        order.append("cd")
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
