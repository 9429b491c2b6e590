"""``solver="auto"``: the solver to use for a problem, from measurements.

The rule (first match wins; estimators show the choice in ``solver_``):

1. vector losses (softmax, multiclass_hinge): ``lbfgs`` for softmax with a
   differentiable penalty on data with fewer features than samples; else
   ``msdca`` (multiclass SDCA) with a strongly convex penalty on data (X, y);
   otherwise ``lbfgs`` when the loss is smooth and the penalty differentiable
   ("l2", "lp"), else ``bmrm``.  Measured by benchmarks/compare_multiclass.py
   (1 thread, time to 1e-3 / 1e-4 relative suboptimality as a ratio to the
   best peer, scikit-learn lbfgs/saga/newton-cg, cyanure, LIBLINEAR
   Crammer-Singer): 20 Newsgroups (130108 features > 11314 rows) softmax
   alpha 1e-4, msdca 0.22 / 0.36 and lbfgs 4.0 / 4.4; alpha 1e-6, msdca
   0.61 / 0.86, lbfgs not there within the budget; multiclass hinge alpha
   1e-4, msdca 1.39 / 1.39, bmrm not there.  MNIST (780 features < 10000
   rows) softmax alpha 1e-4: lbfgs 1.42 / 1.48, msdca 2.61 / 3.15;
2. a binary loss with a second derivative (logistic, squared hinge, smoothed
   hinge, ...), penalty "l2", and Newton's working vectors (about
   NEWTON_VECTORS of length n_weights) within half the bytes of X: ``sdca``
   when SDCA's dual is a box it can shrink (squared and smoothed hinge) and
   ``alpha * n_samples >= SDCA_ALPHA_M`` (SDCA needs about
   1 + 1/(alpha m gamma) epochs, Shalev-Shwartz & Zhang 2013, Theorem 1),
   else ``newton``;
3. a smooth loss with a differentiable penalty on data with fewer features than
   samples: ``lbfgs``;
4. a loss with an SDCA dual step and a strongly convex penalty ("l2", or
   "elasticnet" with l1_ratio < 1): ``sdca``;
5. penalty "lp" with a Lipschitz loss: ``pgs`` (its steps assume bounded
   loss derivatives);
6. smooth losses with a differentiable penalty: ``lbfgs``;
7. everything else (an l1 term, non-smooth losses without a dual step, ...):
   ``bmrm``, which handles every loss and penalty with a certificate.

Rule 2 (benchmarks/compare_binary.py, 1 thread, time to a certified 1e-3, no
intercept; a9a, w8a, ijcnn1, Reuters money-fx, phishing, mushrooms at alpha
1e-4 and 1e-6): for logistic, Newton was the fastest fastrisk solver on every
row measured (a9a 0.27 / 0.36 s at 1e-4 / 1e-6 against L-BFGS 0.59 / 1.10 and
SDCA 0.41 / 18.0; Reuters 0.28 / 0.86 against SDCA 0.35 / 5.8); for squared
hinge, SDCA at alpha 1e-4 (a9a 0.12 s against Newton 0.17, Reuters 0.036 against
0.11, phishing 0.051 against 0.13) and Newton at 1e-6 on the low-dimensional
sets (a9a 0.43 s against SDCA 9.0, phishing 0.22 against 0.87); at 1e-6 the rule's
Newton loses to SDCA on Reuters (0.54 s against 0.41) and mushrooms (0.64 s
against 0.12; separable, J* ~ 1e-5).
IMDB bigrams stays with SDCA (rule 4): Newton's extra memory is 1.3x the data there
(benchmarks/memory_binary.py), SDCA's 0.5x.

Measurements behind the other rules (benchmarks/RESULTS.md, "solver='auto'" section,
a9a, time to 1e-3 relative suboptimality, fastrisk solvers and the peers run
back to back in one process by benchmarks/compare_peers.py): SDCA is the
fastest fastrisk solver for hinge and logistic with l2 at alpha 1e-4
(Pegasos-type solvers and RDA do not reach 1e-3 within the budget); for the
l1 penalty, the solvers with a certificate are the batch ones.  Rule 2 (quiet
machine, commit 1010c18, time to 1e-3 as a ratio to the best peer): logistic l2
on a9a, w8a, ijcnn1 (n_features << n_samples), L-BFGS 1.25 / 0.81 / 0.66 at
alpha 1e-4 and 1.13 / 1.26 / 0.54 at 1e-6, against SDCA 1.76 / 2.25 / 1.77 at
1e-4; with more features than samples SDCA (Reuters at 1e-4: 1.96, L-BFGS
slower; IMDB bigrams: see RESULTS.md).  Hinge keeps SDCA: L-BFGS sometimes gets
there first, but for a nonsmooth loss it has no certificate to honour ``tol``.
"""

from fastrisk import _hessian, _sdca
from fastrisk.regularizers import L2, ElasticNet

# measured extra memory of solve_newton in vectors of n_weights float64 (IMDB bigrams)
NEWTON_VECTORS = 13
# alpha * n_samples from which SDCA beats Newton on box-dual smooth losses (squared hinge)
SDCA_ALPHA_M = 0.1


def _strongly_convex(problem):
    reg = problem.regularizer
    return isinstance(reg, L2) or (isinstance(reg, ElasticNet) and reg.l1_ratio < 1.0)


def _newton_fits(problem):
    """A loss with a second derivative and Newton's vectors within half the bytes of X."""
    spec, data = problem.loss.spec, problem.data
    if not (spec.smooth and _hessian.has_curvature(spec.kernel_id)):
        return False
    data_bytes = data.data.nbytes + (0 if data.dense else data.indices.nbytes + data.indptr.nbytes)
    return NEWTON_VECTORS * 8 * problem.n_weights <= 0.5 * data_bytes


def choose(problem):
    """Name of the solver the rule above picks for ``problem``."""
    spec = problem.loss.spec
    differentiable = problem.penalty in ("l2", "lp")
    if spec.vector:
        data = problem.data
        if spec.name in ("softmax", "multiclass_hinge") and data is not None \
                and _strongly_convex(problem) and not (
                    spec.smooth and differentiable and data.n_features < data.n_samples):
            return "msdca"
        return "lbfgs" if spec.smooth and differentiable else "bmrm"
    data = problem.data
    if spec.task == "binary" and problem.penalty == "l2" and data is not None \
            and _newton_fits(problem):
        if spec.dual_step and _sdca.has_dual_box(spec.kernel_id) \
                and problem.alpha * data.n_samples >= SDCA_ALPHA_M:
            return "sdca"
        return "newton"
    if spec.smooth and differentiable and data is not None \
            and data.n_features < data.n_samples:
        return "lbfgs"
    if spec.dual_step and _strongly_convex(problem):
        return "sdca"
    if problem.penalty == "lp" and spec.lipschitz is not None:
        return "pgs"
    if spec.smooth and differentiable:
        return "lbfgs"
    return "bmrm"
