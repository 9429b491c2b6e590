"""``solver="auto"``: the solver to use for a problem, from measurements.

The rule (first match wins; estimators show the choice in ``solver_``):

1. vector losses (softmax, multiclass_hinge): ``msdca`` (multiclass SDCA)
   with a penalty that has an l2 term ("l2", "elasticnet" with l1_ratio < 1: its
   record) on data (X, y); otherwise, for the softmax loss with an l1 term ("l1"),
   ``mcd`` (multinomial proximal Newton, certified); otherwise ``lbfgs`` when the
   loss is smooth and the penalty differentiable ("l2", "lp"), else ``bmrm``.
   msdca's over-relaxed epochs are ahead of L-BFGS and of the peers on few features
   (MNIST) as on many (20 Newsgroups), at alpha 1e-4 and 1e-6
   (benchmarks/compare_multiclass.py); with the l1 penalty alone BMRM, the one
   certified solver before mcd, makes no progress on 20 Newsgroups (its LP over
   2 k d variables; compare_multiclass_l1.md in benchmarks/RESULTS.md, with saga);
2. a scalar loss with a second derivative (logistic, squared hinge, smoothed hinge,
   squared, Huber, Poisson, ...), penalty "l2", and Newton's working vectors
   (about NEWTON_VECTORS of length n_weights) within half the bytes of X: ``sdca``
   when the loss has an SDCA dual step (squared and smoothed hinge and Huber with a box it
   can shrink, logistic, exponential and Poisson with their inexact steps, squared) and
   ``alpha * n_samples >= SDCA_ALPHA_M`` (SDCA needs about
   1 + 1/(alpha m gamma) epochs, Shalev-Shwartz & Zhang 2013, Theorem 1, with 1/gamma
   the bound on the loss's second derivative; for the exponential and Poisson losses,
   which have none, only with more features than samples, see below),
   or, below SDCA_ALPHA_M, when that dual step is a closed form on a box of a
   binary loss (squared and smoothed hinge): then the probe below decides between
   plain SDCA, SDCA in its accelerated outer loop (O(sqrt(1/(alpha m))) outer
   iterations instead of 1/(alpha m) epochs) and Newton; else ``newton``;
3. a smooth loss with a differentiable penalty on data with fewer features than
   samples: ``lbfgs``;
4. a penalty with an l1 term (l1, elastic net with l1_ratio > 0) and a smooth loss on
   data (X, y): ``cd``
   (proximal Newton with coordinate-descent inner solves and a duality gap;
   benchmarks/compare_l1.py compares it with LIBLINEAR, saga, snapml, skglm and
   cyanure);
5. a loss with an SDCA dual step and a strongly convex penalty ("l2", or
   "elasticnet" with l1_ratio < 1): ``sdca``; for a binary loss with a registered
   Moreau envelope (the hinge), penalty "l2", alpha m below SMOOTHING_ALPHA_M and at
   most 1/SMOOTHING_ROWS as many features as samples, through the probe below, which
   hands a slow SDCA run (rate above SMOOTHING_RATE) to ``smoothing``;
   then, for an l1 term and a non-smooth loss with a registered Moreau envelope (the
   hinge), ``smoothing`` (cd on the smoothed loss, certified for the original one;
   benchmarks/compare_l1.py's hinge rows: BMRM's LP, the other certified solver that
   takes it, ends on its budget there far from the optimum);
6. penalty "lp" with a smooth Lipschitz loss: ``pgs`` (its steps assume bounded
   loss derivatives, and its certificate, the Fenchel bound at the oracle's
   gradient, goes to 0 only where the loss is differentiable: at a kink of the
   hinge the oracle's subgradient is not the one of the optimality conditions);
7. smooth losses with a differentiable penalty (no l1 term): ``lbfgs``;
8. everything else (an l1 term, non-smooth losses without a dual step, ...):
   ``bmrm``, which handles every loss and penalty with a certificate.

A problem with a risk oracle and no loss (``Problem.from_oracle`` without
``loss=``: the losses of fastrisk.multivariate through ``make_problem``, a
``FunctionOracle``) says nothing of its risk's smoothness, so rules 1-7 do not
apply and it gets rule 8's ``bmrm``: it needs only the oracle (its record's
``oracle_only``) and certifies its answer for non-smooth risks (ROC area,
F-beta, ranking, scaled soft margin) as for smooth ones.

Rule 2 comes from benchmarks/compare_binary.py (time to a certified 1e-3, no
intercept; a9a, w8a, ijcnn1, Reuters money-fx, phishing, mushrooms at alpha 1e-4
and 1e-6, with SDCA and Newton timed side by side; the figures are in
benchmarks/RESULTS.md).  Logistic: at alpha 1e-4 (alpha m between 0.8 and 5) SDCA
is first on every set; at 1e-6 (alpha m between 0.008 and 0.05) Newton is first
or tied.  Between them (alpha 1e-5) SDCA wins on all but a9a, so no threshold on
alpha m separates every set, and SDCA_ALPHA_M is the one of the squared hinge.
On 2 threads (Newton's oracle threaded, SDCA's epochs not) SDCA stays first at
alpha 1e-4.  Squared hinge: SDCA at alpha 1e-4; at 1e-6 no quantity known before
solving separates the separable mushrooms, where plain SDCA is first and Newton
takes many damped steps while J(w) -> 0, from the sets where Newton is first
(w8a, Reuters): alpha m, d and the density are alike.  Hence the probe.

The probe (rule 2, a closed-form dual step on a box, alpha m < SDCA_ALPHA_M;
deterministic for a given ``random_state``; fastrisk/solvers/_catalyst.py's
PROBE_EPOCHS, PROBE_RATE, PROBE_ACTIVE, PROBE_BAND): plain SDCA runs
PROBE_EPOCHS epochs; its estimated duality gaps g(t) (the kernels' running
sums, no extra pass) give the observed linear rate
rho = (g(P) / g(P - 2))^(1/2) over the last two epochs.  SDCA's gap contracts
at worst by 1 - alpha m gamma / (R^2 + alpha m gamma) per epoch
(Shalev-Shwartz & Zhang 2013, Theorem 1); on separable data with shrinking it
does far better than that bound, and Newton far worse.  Where alpha m / R^2 is
in PROBE_BAND (fewer features than rows) ``sdca`` runs alone: its own
``accelerated="auto"`` probes within the run and continues plain when
rho <= PROBE_RATE, else in its accelerated outer loop when at least PROBE_ACTIVE
of the rows are active (see _catalyst.py).  Below that band the probe is a short
``sdca`` run, then with rho <= PROBE_RATE SDCA continues from its dual
variables, and otherwise Newton from the probe's w (``start=``), whose first
steps that start saves (Newton after the probe takes fewer iterations than from
w = 0).  On the squared hinge at alpha 1e-6 the probe measures a fast rate on
mushrooms (plain SDCA continues) and slow ones on Reuters and w8a (Newton takes
over); a9a, ijcnn1 and phishing fall in the band and run accelerated, where
Newton is ahead on a9a only and SDCA first or tied on the others: the band keeps
SDCA.  Logistic keeps Newton below SDCA_ALPHA_M: its SDCA epochs (an inexact
1-D Newton step per row) cost several of Newton's matrix passes each.
IMDB bigrams stays with SDCA (rule 5): Newton's working vectors there exceed the
bound of rule 2 (benchmarks/memory_binary.py measures both solvers' memory).

The hinge's probe (rule 5): plain SDCA's epochs to a gap eps grow as 1/(alpha m eps) for
the hinge (Shalev-Shwartz & Zhang 2013, Theorem 2), while the Newton steps of
``smoothing``'s stages do not grow with 1/alpha; its column copy and passes pay on data
with few features. The rule comes from sdca alone (its accelerated="auto") timed against
smoothing to a certified 1e-3 on a9a, w8a, ijcnn1, phishing, mushrooms and Reuters at
alpha 1e-6 to 1e-7, with and without an intercept: below SMOOTHING_ALPHA_M smoothing is
first, by up to two orders of magnitude, on the sets with few features and overlapping
classes, and above it plain SDCA is first or tied without an intercept; SDCA stays first
on separable data (mushrooms) and on sparse text (Reuters), where its shrinking does far
better than its bound, and the observed rate of its first PROBE_EPOCHS plain epochs
tells those apart: well below SMOOTHING_RATE there, about 1 on the other sets.

Regression and counts (squared, Huber with delta 1 and Poisson losses; abalone and
housing with their targets, Reuters, a9a, w8a and ijcnn1 with the labels as targets; alpha
1e-4 and 1e-6; time to a certified 1e-3 on 1 thread; ``benchmarks/compare_binary.py
--losses squared,huber,poisson``): below SDCA_ALPHA_M Newton is first among fastrisk's
solvers or within 1.4x of the first (ijcnn1, Huber: accelerated SDCA), and up to 12x
ahead of L-BFGS (Reuters, squared, alpha 1e-6: 0.10 s against SDCA's 0.48 s and
L-BFGS's 0.37 s); above it SDCA is within 2x of Newton (ahead on ijcnn1 and Reuters,
behind on a9a and w8a, where the squared loss's Newton is one conjugate-gradient solve)
and 1.5-5x ahead of L-BFGS.  Huber's box gets no probe: at small alpha m its plain SDCA
is as slow as the squared loss's.  Poisson: Newton 5-7x ahead of L-BFGS.

Exponential and Poisson losses (inexact dual steps, curvature unbounded; Poisson with
counts drawn from a log-linear model of the real features of a9a, w8a, ijcnn1, abalone,
phishing, mushrooms and Reuters, the exponential loss with their labels; alpha m from
0.04 to 50; benchmarks/exp_losses_auto.py, the exp_losses_auto.md section of
benchmarks/RESULTS.md): on data with fewer features than samples Newton is first on most
sets and alphas and never far behind SDCA, while SDCA trails Newton on a9a, w8a and
abalone at every alpha m and by far at small alpha m, so rule 2 takes Newton there
whatever alpha m.  On Reuters (more features than samples) SDCA is first at alpha m 7.8
and 0.78 and Newton at 0.08, as for the other losses: SDCA_ALPHA_M applies.  Where Newton's
vectors do not fit (rule 5) SDCA is several times ahead of Newton and L-BFGS (IMDB
bigrams with the star ratings as Poisson counts: the compare_counts_imdb.md section).

The other rules come from benchmarks/compare_peers.py (the "solver='auto'"
section of benchmarks/RESULTS.md): SDCA is the fastest fastrisk solver for hinge
and logistic with l2 when there are more features than samples; L-BFGS for
smooth losses with fewer features than samples; for an l1 term the solvers with a
certificate are the batch ones.  Hinge keeps SDCA: L-BFGS sometimes gets there
first, but for a nonsmooth loss it has no certificate to honour ``tol``.

Budget: without ``max_iter``, "auto" runs until ``tol`` is certified, for at most
AUTO_TIME_LIMIT seconds (``default_budget``): an epoch count that suits one data set
stops another short of ``tol``.  A proximal Newton solver (``cd``, ``mcd``) gets the
iteration count of its record instead (``auto_max_iter``): its steps near an optimum it
can certify are few, and where they are many the certificate cannot follow (an l1 weight
so small that the optimum's weights are huge, on separable data: J decreases towards 0
step after step while the rescaled dual point certifies nothing of it).

A candidate is skipped when its registry record (``SOLVER_INFO``) does not
accept the problem, e.g. on a Dask problem, which has only its risk oracle.
"""

import time

from fastrisk.regularizers import has_l1_term, is_l2, norm_exponent
from fastrisk.solvers import SOLVERS, takes
from fastrisk.solvers._catalyst import PROBE_BAND, PROBE_EPOCHS, PROBE_RATE, pays, radius_sq
from fastrisk.solvers._epochs import observed_rate

# extra memory of solve_newton in vectors of n_weights float64 (benchmarks/memory_binary.py)
NEWTON_VECTORS = 18
# alpha * n_samples from which SDCA beats Newton on smooth binary losses with a dual step
SDCA_ALPHA_M = 0.1
# The default budget of solver="auto" when max_iter is not given: an iteration count that
# does not stop a run short of tol (SDCA on a hinge loss with a small alpha needs
# O(1 / (alpha tol)) epochs, thousands on the data sets in benchmarks/), guarded by time.
AUTO_MAX_ITER = 1_000_000
AUTO_TIME_LIMIT = 3600.0
# rule 5's probe (the hinge with l2): alpha * n_samples below which it runs, the least
# ratio of samples to features, and the observed rate above which smoothing takes over
SMOOTHING_ALPHA_M = 0.01
SMOOTHING_ROWS = 10
SMOOTHING_RATE = 0.9
# options the probe passes to both sdca and the solver it hands over to; with any other
# option the chosen solver runs alone
PROBE_OPTIONS = frozenset({"tol", "abs_tol", "max_iter", "time_limit", "callback", "verbose",
                           "random_state", "start"})


def _newton_fits(problem):
    """A loss with a second derivative and Newton's vectors within half the bytes of X."""
    spec, data = problem.loss.spec, problem.data
    if not (spec.smooth and not spec.vector):
        return False
    data_bytes = data.data.nbytes + (0 if data.dense else data.indices.nbytes + data.indptr.nbytes)
    return NEWTON_VECTORS * 8 * problem.n_weights <= 0.5 * data_bytes


def _accelerated_sdca(problem):
    """Whether SDCA's accelerated loop applies here (alpha m / R^2 in PROBE_BAND, fewer
    features than rows)."""
    return pays(problem, radius_sq(problem.data.row_sqnorms(), problem.sample_weight),
                PROBE_BAND)


def _preferences(problem):
    """Solver names in the order of the rule above (the first that takes the problem wins)."""
    spec, reg, data = getattr(problem.loss, "spec", None), problem.regularizer, problem.data
    if spec is None:  # a user-defined risk (Problem.from_oracle without a loss): rule 8
        return ["bmrm"]
    if spec.vector:
        # msdca needs rows and a penalty with an l2 term (its record): else the next one
        return ["msdca"] + (["mcd"] if spec.smooth and has_l1_term(reg) else []) + (
            ["lbfgs", "bmrm"] if spec.smooth and reg.differentiable else ["bmrm"])
    order = []
    if is_l2(reg) and data is not None and _newton_fits(problem):
        band = problem.alpha * data.n_samples >= SDCA_ALPHA_M and (
            spec.curvature is not None or data.n_features > data.n_samples)
        if spec.dual_step and (band or (spec.dual_box and spec.task == "binary")):  # or probe
            order.append("sdca")
        order.append("newton")
    if spec.smooth and reg.differentiable and data is not None \
            and data.n_features < data.n_samples:
        order.append("lbfgs")
    if spec.smooth and has_l1_term(reg):
        order.append("cd")
    if spec.dual_step and reg.strongly_convex:
        order.append("sdca")
    if spec.moreau is not None and has_l1_term(reg):
        order.append("smoothing")
    if spec.smooth and reg.l1_l2() is None and norm_exponent(reg) is not None \
            and spec.lipschitz is not None:
        order.append("pgs")
    if spec.smooth and reg.differentiable:
        order.append("lbfgs")
    return order + ["bmrm"]


def choose(problem):
    """Name of the solver the rule above picks for ``problem``, among those whose registry
    record accepts it (a Dask problem has no rows: only the oracle-only solvers)."""
    for name in _preferences(problem):
        if takes(name, problem):
            return name
    raise ValueError(f"no solver takes {problem!r}")


def default_budget(options, name):
    """``options`` with auto's budget for solver ``name``: without ``max_iter``, its record's
    ``auto_max_iter`` or AUTO_MAX_ITER iterations, and (unless given) a time limit of
    AUTO_TIME_LIMIT seconds; a given max_iter is kept as is."""
    if options.get("max_iter") is not None:
        return options
    options = dict(options, max_iter=SOLVERS[name].auto_max_iter or AUTO_MAX_ITER)
    if options.get("time_limit") is None:
        options["time_limit"] = AUTO_TIME_LIMIT
    return options


def _probe(problem):
    """(the solver a slow SDCA probe hands over to, the observed rate above which it
    does), or None where no probe runs: rule 2's (a closed-form dual step on a box below
    SDCA_ALPHA_M, outside PROBE_BAND, where sdca's own probe decides within one run:
    ``newton``, PROBE_RATE) and rule 5's (the hinge: ``smoothing``, SMOOTHING_RATE)."""
    spec, data = problem.loss.spec, problem.data
    if not (spec.task == "binary" and spec.dual_box and is_l2(problem.regularizer)
            and data is not None):
        return None
    alpha_m = problem.alpha * data.n_samples
    if spec.smooth and alpha_m < SDCA_ALPHA_M and _newton_fits(problem) \
            and takes("newton", problem) and not _accelerated_sdca(problem):
        return "newton", PROBE_RATE
    if spec.moreau is not None and alpha_m < SMOOTHING_ALPHA_M \
            and data.n_features * SMOOTHING_ROWS <= data.n_samples \
            and takes("smoothing", problem):
        return "smoothing", SMOOTHING_RATE
    return None


def _remaining(options, probe, seconds):
    """The budget ``options`` minus what the probe used (epochs, seconds)."""
    options = dict(options)
    if options.get("max_iter") is not None:
        options["max_iter"] = max(1, options["max_iter"] - probe.n_iter)
    if options.get("time_limit") is not None:
        options["time_limit"] = max(options["time_limit"] - seconds, 1e-3)
    return options


def run(problem, name, options):
    """Solve ``problem`` as ``solver="auto"`` does: ``name`` (from :func:`choose`) with
    ``options``, through rule 2's or rule 5's probe where it applies (the Result of the
    solver that finished, with ``extra["probe"]``: the probe's epochs, observed rate and
    choice, "sdca" or the solver it handed over to)."""
    solve = SOLVERS[name].func
    plan = _probe(problem) if name == "sdca" and set(options) <= PROBE_OPTIONS else None
    if plan is None:
        return solve(problem, **options)
    other, slow = plan
    started = time.perf_counter()
    max_iter = options.get("max_iter")
    epochs = PROBE_EPOCHS if max_iter is None else min(PROBE_EPOCHS, max_iter)
    probe = solve(problem, **dict(options, max_iter=epochs, accelerated=False))
    rate = observed_rate(probe.extra["gap_estimates"])
    if probe.status != "max_iter" or (max_iter is not None and max_iter <= epochs):
        choice, result = "sdca", probe
    else:
        # the probe's seconds without its callback's (time_limit leaves them out)
        rest = _remaining(options, probe,
                          time.perf_counter() - started - probe.history.callback_seconds)
        if rate <= slow:
            choice = "sdca"
            # sdca's accelerated="auto": plain outside PROBE_BAND (rule 2), its own probe
            # inside it
            result = solve(problem, **dict(rest, start=probe))
        else:
            choice = other
            result = SOLVERS[other].func(problem, **dict(rest, start=probe.w))
    result.extra["probe"] = dict(epochs=probe.n_iter, rate=rate, choice=choice)
    return result
