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
5. smooth losses with a differentiable penalty: ``lbfgs``;
6. (before 3) an l1 or elastic-net penalty with a smooth loss: ``cd``;
7. everything else (an l1 term, non-smooth losses without a dual step, ...):
   ``bmrm``, which handles every loss and penalty with a certificate.

Measurements behind it (benchmarks/RESULTS.md, "solver='auto'" section,
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

from fastrisk.regularizers import L2, ElasticNet


def _strongly_convex(problem):
    reg = problem.regularizer
    return isinstance(reg, L2) or (isinstance(reg, ElasticNet) and reg.l1_ratio < 1.0)


def choose(problem):
    """Name of the solver the rule above picks for ``problem``."""
    spec = problem.loss.spec
    differentiable = problem.penalty in ("l2", "lp")
    if spec.vector:
        return "lbfgs" if spec.smooth and differentiable else "bmrm"
    data = problem.data
    if spec.smooth and differentiable and data is not None \
            and data.n_features < data.n_samples:
        return "lbfgs"
    if spec.smooth and problem.penalty in ("l1", "elasticnet") and data is not None:
        return "cd"  # proximal Newton-CD with a duality gap (benchmarks/compare_l1.py)
    if spec.dual_step and _strongly_convex(problem):
        return "sdca"
    if problem.penalty == "lp" and spec.lipschitz is not None:
        return "pgs"
    if spec.smooth and differentiable:
        return "lbfgs"
    return "bmrm"
