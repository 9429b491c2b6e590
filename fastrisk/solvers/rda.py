"""Regularized dual averaging (Xiao, JMLR 2010; docs/math.md §6) and its baselines.

RDA (Algorithm 1) keeps the sum of all past (mini-batch) subgradients
``S = sum_t g_t`` and takes
``w_{t+1} = argmin_w <S/t, w> + Psi(w) + (beta_t / t) h(w)``, which here is, per
coordinate and in closed form (Xiao 2010, eqs. (10), (30), section 2.2),

    w_{t+1,j} = -shrink(S_j, lambda t + gamma rho sqrt(t)) / (sigma t + gamma sqrt(t)),

``shrink(s, c) = sgn(s) max(|s| - c, 0)``, with the objective's regularizer
``alpha * Omega(w)`` read as ``Psi(w) = lambda ||w||_1 + (sigma/2) ||w||^2``:

=================  ==========================  ==============================
problem.penalty    lambda                      sigma
=================  ==========================  ==============================
"l1"               alpha                       0       (l1-RDA, Algorithm 2)
"elasticnet"       alpha * l1_ratio            alpha * (1 - l1_ratio) (mixed)
"l2"               0                           alpha   (l2^2-RDA)
=================  ==========================  ==============================

Parameters of the method (all documented on ``solve_rda``):

* ``gamma`` -- beta_t = gamma sqrt(t), h(w) = 0.5||w||^2 (+ rho ||w||_1).  The
  paper's best choice is gamma* = G / D (Corollary 2).  Default for sigma = 0:
  gamma = G^2 / 2000 with G = L_loss max_i ||x_i|| (see ``_rda_gamma``: G / D
  with D estimated as 2000 / G, calibrated on two data sets, not a
  guarantee); for accelerated RDA G / D_hat (``_default_gamma``); for
  sigma > 0 the paper's beta_t = 0 (section 2.2), i.e. gamma = 0.
* ``beta`` -- for losses whose derivative is unbounded (squared, squared hinge,
  exponential, Poisson: LossSpec.lipschitz None), not chosen by the user:
  beta_t = gamma sqrt(t) + beta with beta = L = max_i c_i l''_i ||x_i||^2, so the
  denominator sigma t + beta_t of w_{t+1} is never below the curvature of a
  single term, whatever the scale of the data; with sigma > 0 it replaces the zero
  sequence by Xiao's positive constant sequence (section 3.2).  0 for Lipschitz
  losses (the paper's schedule) and for accelerated RDA (which has L).  See
  fastrisk/solvers/_steps.py; in a stream, the largest L over the chunks so far.
* ``rho`` -- enhanced l1-RDA (Algorithm 2): h_rho = 0.5||w||^2 + rho ||w||_1,
  threshold lambda + gamma rho / sqrt(t).  Default 0.  The paper's MNIST runs
  use gamma = 5000, gamma rho = 25.
* ``p_norm`` -- p-norm RDA (section 7.2), h = ||w||_p^2 / (2(p-1)), p in (1, 2].
* ``adaptive`` -- the diagonal proximal term of Duchi, Hazan & Singer (2011, section 5.1):
  beta_t h(w) becomes (1/(2 eta)) <w, diag(sqrt(G_t)) w> (plus beta / 2 ||w||^2), G_t,j the
  sum of the squares of the step gradients' coordinate j, so that

      w_{t+1,j} = -shrink(S_j, lambda t) / (sigma t + beta + sqrt(G_t,j) / eta):

  rare features (small G_j) take larger steps than frequent ones.  ``eta`` defaults to
  ADAPTIVE_ETA / rms_i ||x_i|| (``_adaptive_eta``).  Each coordinate's denominator
  changes only when a row touches it, so a step stays O(nnz(x_i)); there is no averaged
  iterate (the last one is returned) and no rho, p_norm or acceleration.
* ``accelerated`` -- Algorithm 3 with alpha_t = t/2, beta_t = gamma (t+1)^{3/2}/2
  (Corollary 7) for smooth losses; ``L`` the Lipschitz constant of the
  gradient of the average loss (default: loss curvature * max_i c_i ||x_i||^2).

Cost per step: every variant is O(nnz(x_i)) per example (lazy coordinates
and exact lazy averaging, see csrc/_rda.pyx), p-norm RDA when q = p / (p - 1)
is an integer (p = 1 + 1/n, e.g. 1.5 or 1.25).  That
includes accelerated RDA: its interpolations unroll to
``w_t = (1/A_t) sum_{tau <= t} alpha_tau v_tau`` and ``u_t = (1 - theta_t) w_{t-1}
+ theta_t v_{t-1}``, where v_tau is a per-coordinate closed form of the
weighted gradient sum, so w_t is a weighted lazy average like w_bar.  p-norm
RDA's link map divides by ||g_hat||_q^{q-2}, a norm whose threshold lambda t
moves at every step: for an integer q it is a polynomial in the threshold
over power sums of |S_j| that a step updates at its rows' coordinates, each
coordinate leaving the sums at the step its threshold is reached (known in
advance); for other p it is summed at every step over the nonzeros of the
iterate (a compact active set), O(nnz(x_i) + nnz(w_t)) per step.  The steps are
sequential: the kernels run on one thread (``problem.n_threads`` only
serves the objective evaluations).

The intercept (``fit_intercept=True``) is regularized like every other weight,
as in the rest of fastrisk (docs/math.md §1); Xiao (2010) leaves its bias free.

Baselines of section 6 (same framework, same lazy O(nnz) steps):
``solve_sgd_l1`` (SGD with the subgradient of lambda ||w||_1) and
``solve_truncated_gradient`` (TG of Langford et al., period K; K = 1 is FOBOS),
both with the paper's constant step ``eta = sqrt(2/T) / gamma`` by default
(T = total number of steps, Xiao 2010, eq. (19)).

Streaming: every solver here takes ``start=`` (the Result of the previous call,
or its ``extra["state"]``) and continues exactly where it stopped.  The defaults read
from the data (gamma from max_i ||x_i||, adaptive RDA's eta from the row norms, the
eta of sgd_l1 and TG from the number of steps T) are read from the first call's
chunk and kept in the state, and the offset beta is the largest L of the chunks so
far; so feeding chunks one after another (``shuffle=False``) gives the iterates of
one pass over their concatenation when those are given (gamma=, eta=) or do not
depend on the data (a Lipschitz loss with sigma > 0), and otherwise those of a pass
whose defaults come from the first chunk.  ``max_iter`` counts epochs over the given
Problem.
Each call (and each epoch) also costs O(d) once -- copying the state,
bringing every lazy coordinate up to date, forming w -- so streamed chunks
should hold many rows.

Stopping: ``max_iter`` epochs / ``time_limit``.  A certified bound on
J(w) - J* exists only when J is strongly convex (sigma > 0): by strong
convexity ``J(w) - J* <= dist(0, dJ(w))^2 / (2 sigma)``, computed from one
full oracle call (for penalty="l2" this is Lemma 5 of Teo et al. 2007, docs/math.md
§4).  For pure l1 there is no certificate: the bound is NaN and the solver stops on
its budget.
"""

import math

import numpy as np

from fastrisk import _rda
from fastrisk.regularizers import is_l1, soft_threshold
from fastrisk.solvers._certificates import strong_convexity_bound
from fastrisk.solvers._checks import (StartMismatch, check_bool, check_number, check_size,
                                      finite_iterate, start_state)
from fastrisk.solvers._epochs import check_kernel_status, epoch_orders, run_epochs
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers._steps import stream_offset
from fastrisk.stopping import check_budget

OVERFLOW_ADVICE = "a loss value overflowed (inf/NaN): lower the step size or gamma"
ADAPTIVE_ETA = 3.0  # adaptive RDA's eta times the root mean square of the row norms


# ---------------------------------------------------------------------------
# validation and shared pieces

def _psi(problem):
    """(lambda, sigma) of Psi = lambda ||w||_1 + sigma/2 ||w||^2 = alpha * Omega."""
    l1, l2 = problem.regularizer.l1_l2()
    return problem.alpha * l1, problem.alpha * l2


def _data_default(name, value, positive=False):
    """A step parameter's default read from the data, or a ValueError saying so when it is
    not finite (or, ``positive``, not > 0): e.g. an R_emp(0) or a subgradient at 0 near the
    ends of the double range.  (Rows whose squared norms overflow are refused by
    ``Dataset.row_sqnorms`` before.)"""
    if not math.isfinite(value) or (positive and not value > 0.0):
        raise ValueError(f"the default {name}, from the norms of X's rows and R_emp(0), is "
                         f"{value}: scale X down or pass {name}")
    return value


def _default_gamma(problem, lam):
    """gamma = G / D_hat (Corollary 2's gamma* = G/D with estimates).

    G = L_loss * max_i ||x_i|| bounds the stochastic subgradients (L_loss = 1 for
    losses without a Lipschitz constant).  A priori D^2 = ||w*||^2/2 <= D_1^2
    with D_1 = R_emp(0) / (lambda sqrt 2), because lambda ||w*||_1 <= J(0); that
    bound is far too loose for small lambda, and D = 1 ignores the data, so
    D_hat = sqrt(D_1) (their geometric mean; 1 when lambda = 0).  A heuristic
    (its calibration: benchmarks/bench_rda.py); tune gamma as the paper does.
    """
    lip = problem.loss.lipschitz or 1.0
    # all-zero rows: the subgradients vanish and every gamma > 0 gives the same run
    G = lip * (math.sqrt(float(problem.data.row_sqnorms().max())) or 1.0)
    risk0 = problem.risk(np.zeros(problem.n_weights))
    D1 = risk0 / (lam * math.sqrt(2.0)) if lam > 0 and risk0 > 0 else 1.0
    return G / math.sqrt(D1)


def _rda_gamma(problem):
    """Default gamma of plain, enhanced and p-norm l1-RDA: G^2 / 2000.

    gamma* = G / D (Corollary 2) needs D^2 >= h(w*) = ||w*||^2 / 2, unknown in
    advance.  Two constraints fix the form: scaling the data X -> cX (with
    lambda -> c lambda) scales w* by 1/c and G by c, so gamma must scale as
    c^2 for the iterates to scale as 1/c -- G / D is such a c^2 quantity, so is
    G^2, and ``_default_gamma``'s G sqrt(lambda ...) is not (c^1.5); and the best
    gamma of a sweep does not follow lambda.  The constant 2000 is calibrated on data
    sets whose G^2 differ by orders of magnitude (MNIST raw pixels, where Xiao (2010,
    section 6) uses gamma = 5000, and IMDB bigrams; benchmarks/bench_rda.py); the
    averaged iterate w_bar prefers a larger gamma than w_T.  A calibrated rule, not a
    guarantee: tune gamma as the paper does.
    """
    lip = problem.loss.lipschitz or 1.0
    gamma = lip * lip * float(problem.data.row_sqnorms().max()) / 2000.0
    # every row 0 (or so small that gamma underflows): the loss's gradients do not move
    # w, and any gamma > 0 serves
    return gamma if gamma > 0.0 else 1.0


def _adaptive_eta(problem):
    """Default eta of adaptive RDA: ADAPTIVE_ETA / (root mean square of the ||x_i||).

    The regret bound of Duchi, Hazan & Singer (2011, Corollary 1 with delta = 0) is
    smallest at eta = ||w*||_inf, unknown in advance.  The form follows from scaling:
    X -> cX with lambda -> c lambda scales S and sqrt(G) by c and w* by 1/c, so eta must
    scale as 1/c; scaling the loss and lambda together leaves w* and every iterate as they
    are, so eta does not depend on the loss's scale.  The constant is calibrated on one
    pass of l1-logistic at alpha 1e-4 over seven data sets (a9a, w8a, ijcnn1, Reuters,
    phishing, mushrooms, IMDB bigrams; benchmarks/rda_eta.py): a calibrated rule, not a
    guarantee.
    """
    rms = math.sqrt(float(problem.data.row_sqnorms().mean()))
    return ADAPTIVE_ETA / rms if rms > 0.0 else 1.0


def _kernel_args(problem):
    d = problem.data
    c = problem.sample_weight if problem.sample_weight is not None else np.empty(0)
    return (d.data, d.indices, d.indptr, d.dense, d.bias, problem.y, c)


def _continue_state(start, solver, config, fresh):
    """A fresh state, or a copy of the state of ``start`` after checking it continues the
    same run (the copy leaves the previous Result intact)."""
    state = start_state(start, solver, dict, copy=True)
    if state is None:
        return fresh()
    if state.get("solver") != solver:
        raise ValueError(f"start must be the Result of a previous {solver!r} run (or its "
                         f"extra['state']) to continue from")
    if state["config"] != config:
        raise StartMismatch(f"start: its state was made with different settings "
                            f"{state['config']} (this call: {config})")
    return state


class _Epochs:
    """Per-epoch step of the solvers of this module for the epoch driver
    (fastrisk/solvers/_epochs.py): ``step()`` runs one kernel epoch, ``output()`` forms
    the reported iterate, ``extra()`` the Result's extra entries."""

    def __init__(self, solver, problem, step, output, extra):
        self.solver, self.problem, self.step, self.output = solver, problem, step, output
        self._extra = extra
        self.l1, self.l2 = _psi(problem)

    def run_epoch(self):
        self.step()
        return False

    def weights(self):
        return self.output()

    def certify(self):
        w = finite_iterate(self.output(), self.solver, self.problem)
        return (w, *strong_convexity_bound(self.problem, w, self.l1, self.l2))

    def extra(self):
        return self._extra()


# ---------------------------------------------------------------------------
# RDA

def _rda_schedule(r, lam, sigma, gamma, rho, accelerated, L, beta):
    """theta_r, b_r, omega_r of the lazy form (csrc/_rda.pyx) for steps r, with
    beta_r = gamma sqrt(r) + beta (``beta``: the curvature offset, module docstring)."""
    r = r.astype(np.float64)
    if accelerated:
        alpha = r / 2.0                                   # (37)
        A = r * (r + 1.0) / 4.0
        beta = gamma * (r + 1.0) ** 1.5 / 2.0             # (38)
        theta = lam * A + rho * (L + beta)
        b = 1.0 / (sigma * A + L + beta)
        return theta, b, alpha, alpha, A
    sq = np.sqrt(r)
    theta = lam * r + gamma * rho * sq + rho * beta
    den = sigma * r + gamma * sq + beta
    b = np.divide(1.0, den, out=np.zeros_like(den), where=r > 0)   # w_1 = 0
    return theta, b, np.ones_like(r), np.empty(0), np.empty(0)


def _lazy_schedule(theta, b, omega):
    """Rows (theta_r, PB, PT) of csrc/_rda.pyx: the threshold and the prefix sums
    PB[i] = sum_{r < i} omega_r b_r, PT[i] = sum_{r < i} omega_r b_r theta_r."""
    out = np.empty((theta.shape[0] + 1, 3))
    out[:-1, 0], out[-1, 0] = theta, np.inf
    out[0, 1:] = 0.0
    np.cumsum(omega * b, out=out[1:, 1])
    np.cumsum(omega * b * theta, out=out[1:, 2])
    return out


def _rda_final(S, t, lam, sigma, gamma, rho, beta):
    """w_{t+1} = z_t(S) (Xiao 2010, eqs. (10), (30), section 2.2), beta_t = gamma sqrt(t)
    + beta."""
    if t == 0:
        return np.zeros_like(S)
    th = lam * t + gamma * rho * math.sqrt(t) + rho * beta
    if th == math.inf:  # lambda t beyond the doubles (alpha near 1e308): every S_j shrinks to 0
        return np.zeros_like(S)
    b = 1.0 / (sigma * t + gamma * math.sqrt(t) + beta)
    return soft_threshold(-S, th) * b


def _adaptive_final(S, G, t, lam, sigma, eta, beta):
    """w_{t+1} = z_t of adaptive RDA (Duchi, Hazan & Singer 2011, section 5.1, with
    Psi's l2 term and the curvature offset beta in the denominator); 0 where it is 0."""
    th = lam * t
    if th == math.inf:
        return np.zeros_like(S)
    den = sigma * t + beta + np.sqrt(G) / eta
    return np.divide(soft_threshold(-S, th), den, out=np.zeros_like(S), where=den > 0.0)


def _pnorm_final(S, t, lam, gamma, rho, p, beta):
    """w_{t+1} = theta^{-1}(g_hat_t) (Xiao 2010, section 7.2), beta_t = gamma sqrt(t) + beta."""
    if t == 0:
        return np.zeros_like(S)
    q = p / (p - 1.0)
    m = np.maximum(np.abs(S) - (lam * t + gamma * rho * math.sqrt(t) + rho * beta), 0.0)
    N = float(np.sum(m ** q))
    if N == 0.0:
        return np.zeros_like(S)
    scale = (p - 1.0) / (gamma * math.sqrt(t) + beta) / N ** ((q - 2.0) / q)
    return -np.sign(S) * scale * m ** (q - 1.0)


def _integral_q(p):
    """Whether q = p / (p - 1) is an integer in 2 .. 8 (p = 1 + 1/n), where the p-norm
    kernel keeps the norm as a polynomial in the threshold (O(nnz(x_i)) per step)."""
    q = p / (p - 1.0)
    return q == int(q) and 2 <= q <= 8


def _rda_settings(problem, *, gamma, rho, batch_size, p_norm, accelerated, L, adaptive, eta,
                  average, start):
    """Validated settings (gamma, rho, k, p_norm, L, eta) with the data-dependent defaults;
    a continued run keeps the first call's defaults."""
    lam, sigma = _psi(problem)
    rho = check_number(rho, "rho", 0.0)
    k = check_size(batch_size, "batch_size")
    previous = start_state(start, "rda", dict)
    if isinstance(previous, dict) and previous.get("solver") == "rda":
        gamma = previous["config"][3] if gamma is None else gamma
        L = previous["config"][8] if L is None else L
        eta = previous["config"][10] if eta is None and adaptive else eta
    if adaptive:
        if accelerated or p_norm is not None or rho > 0.0 or average:
            raise ValueError("adaptive RDA takes none of accelerated, p_norm, rho > 0 and "
                             "average (its iterate is the last one)")
        if gamma is not None:
            raise ValueError("adaptive RDA has eta instead of gamma")
        if eta is None:
            eta = _data_default("eta", _adaptive_eta(problem), positive=True)
        eta = check_number(eta, "eta", 0.0, low_open=True)
        return None, rho, k, None, None, eta
    if eta is not None:
        raise ValueError("eta is the step size of adaptive RDA (adaptive=True)")
    if gamma is None:
        gamma = _data_default("gamma", (_default_gamma(problem, lam) if accelerated
                                        else _rda_gamma(problem) if sigma == 0.0 else 0.0))
    gamma = check_number(gamma, "gamma", 0.0)
    if p_norm is not None:
        p_norm = check_number(p_norm, "p_norm", 1.0, 2.0, low_open=True)
        if sigma > 0.0 or accelerated:
            raise ValueError("p_norm RDA is defined for penalty='l1' without acceleration")
    if L is not None:  # checked also where it is unused (without acceleration): a mistake
        L = check_number(L, "L", 0.0)
    if accelerated:
        if not problem.loss.spec.smooth:
            raise ValueError(f"accelerated RDA needs a smooth loss, got {problem.loss.name!r}")
        if L is None:
            curv = problem.loss.curvature
            if curv is None:
                raise ValueError(f"give L for the {problem.loss.name!r} loss (its gradient has "
                                 "no global Lipschitz constant)")
            c = problem.sample_weight.max() if problem.sample_weight is not None else 1.0
            L = curv * c * float(problem.data.row_sqnorms().max())
        L = check_number(L, "L", 0.0)
        if L + gamma == 0.0:
            raise ValueError("accelerated RDA needs L + gamma > 0")
    elif sigma == 0.0 and gamma == 0.0:
        raise ValueError("gamma must be > 0 when Psi is not strongly convex "
                         "(Xiao 2010, eq. (13))")
    return gamma, rho, k, p_norm, L, None


def solve_rda(problem, *, tol=1e-4, abs_tol=0.0, max_iter=10, time_limit=None, callback=None,
              verbose=0, random_state=None, gamma=None, rho=0.0, batch_size=1, p_norm=None,
              accelerated=False, L=None, adaptive=False, eta=None, average=False, shuffle=True,
              check_every=1, start=None):
    """Regularized dual averaging (Xiao 2010, Algorithms 1-3; docs/math.md §6).

    Parameters
    ----------
    problem : Problem with penalty "l1", "elasticnet" or "l2" and a scalar loss.
    tol, abs_tol : stop when the certified bound (strongly convex J only) is at most
        max(tol * J, abs_tol).
    max_iter : number of epochs over ``problem``'s rows.
    gamma : beta_t = gamma sqrt(t) (+ beta for losses with an unbounded derivative;
        see the module docstring for both and the default).
    rho : sparsity-enhancing parameter of Algorithm 2 (>= 0).
    batch_size : k rows per step; the step's subgradient is their average.
    p_norm : None (h = 0.5||w||^2) or p in (1, 2] for p-norm RDA (penalty "l1";
        O(nnz(x_i)) per step for p = 1 + 1/n, n = 1 .. 7, else
        O(nnz(x_i) + nnz(w_t))).
    accelerated : Algorithm 3 (smooth losses; returns w_t, no averaging).
    L : Lipschitz constant of the average loss's gradient (accelerated only).
    adaptive : the diagonal h_t of Duchi, Hazan & Singer (2011) instead of
        gamma sqrt(t) h (module docstring); not with accelerated, p_norm, rho or average.
    eta : adaptive RDA's step size (default ``_adaptive_eta``).
    average : return w_bar_T (the iterate of the convergence theorems) as
        ``result.w`` instead of the last iterate w_{T+1} (the sparse one).
    shuffle : a fresh permutation per epoch (from random_state) or row order.
    check_every : evaluate J and the certificate (one full oracle pass) every k
        epochs and at the end; 0 only at the end.
    start : the Result of a previous rda call (or its extra["state"]) to continue.

    Returns a Result; ``extra`` holds ``w_bar`` (not for accelerated or adaptive),
    ``w_last``, ``n_steps`` (total), ``gamma``, ``L``, ``eta``, ``beta``, ``state``,
    ``loss_sum``.
    """
    SOLVER_INFO[0].check(problem)
    check_budget(tol, max_iter, time_limit)
    shuffle = check_bool(shuffle, "shuffle")
    accelerated = check_bool(accelerated, "accelerated")
    lam, sigma = _psi(problem)
    adaptive = check_bool(adaptive, "adaptive")
    average = check_bool(average, "average")
    gamma, rho, k, p_norm, L, eta = _rda_settings(
        problem, gamma=gamma, rho=rho, batch_size=batch_size, p_norm=p_norm,
        accelerated=accelerated, L=L, adaptive=adaptive, eta=eta, average=average,
        start=start)
    D = problem.n_weights
    config = (D, lam, sigma, gamma, rho, k, p_norm, accelerated, L, adaptive, eta)
    # coords[:, 0] = S (gradient sums), [:, 1] = acc (running sum of iterates),
    # [:, 2] = last (first step not yet in acc; after a call every coordinate is current);
    # adaptive: [:, 1] = G (sums of the squared step gradients), [:, 2] the pending
    # increment of S within a batch
    st = _continue_state(start, "rda", config, lambda: {
        "solver": "rda", "config": config, "t": 0, "coords": np.zeros((D, 3)), "beta": None})
    # beta_t = gamma sqrt(t) + beta: beta is the curvature offset for losses with an
    # unbounded derivative (fastrisk/solvers/_steps.py); accelerated RDA has L instead
    st["beta"] = 0.0 if accelerated else stream_offset(problem, st["beta"])
    beta = st["beta"]
    S, acc = st["coords"][:, 0], st["coords"][:, 1]
    args = _kernel_args(problem)
    loss_id, loss_param = problem.loss.spec.kernel_id, problem.loss.param
    orders = epoch_orders(problem.n_samples, shuffle, random_state, np.int64)
    n_steps = -(-problem.n_samples // k)
    loss_sum = [0.0]

    def step():
        order, t0 = next(orders), st["t"]
        if adaptive:
            total, status = _rda.adaptive_rda_epoch(*args, order, k, loss_id, loss_param,
                                                    st["coords"], t0, lam, sigma, eta, beta)
        elif p_norm is not None:
            S_c, acc_c = np.ascontiguousarray(S), np.ascontiguousarray(acc)
            kernel = (_rda.pnorm_rda_epoch_integral if _integral_q(p_norm)
                      else _rda.pnorm_rda_epoch)
            total, status = kernel(*args, order, k, loss_id, loss_param, S_c, acc_c, t0, lam,
                                   gamma, rho, p_norm, beta)
            S[:], acc[:] = S_c, acc_c
        else:
            r = np.arange(t0, t0 + n_steps + 2)
            theta, b, omega, alpha, A = _rda_schedule(r, lam, sigma, gamma, rho, accelerated, L,
                                                      beta)
            flush_end = t0 + n_steps if accelerated else t0 + n_steps - 1
            total, status = _rda.dual_averaging_epoch(
                *args, order, k, loss_id, loss_param, st["coords"], t0, flush_end,
                _lazy_schedule(theta, b, omega), b, alpha, A)
        check_kernel_status(status, "rda", problem, OVERFLOW_ADVICE)
        st["t"] = t0 + n_steps
        loss_sum[0] += total

    def output(avg=average and not accelerated):
        t = st["t"]
        if adaptive:
            return _adaptive_final(S, acc, t, lam, sigma, eta, beta)
        if accelerated:
            return acc / (t * (t + 1.0) / 4.0)
        if avg:
            return acc / t
        if p_norm is not None:
            return _pnorm_final(S, t, lam, gamma, rho, p_norm, beta)
        return _rda_final(S, t, lam, sigma, gamma, rho, beta)

    def extra():
        out = {"state": st, "n_steps": st["t"], "gamma": gamma, "L": L, "eta": eta,
               "beta": beta, "loss_sum": loss_sum[0], "w_last": output(False)}
        if not (accelerated or adaptive):
            out["w_bar"] = output(True)
        return out

    return run_epochs(problem, "rda", _Epochs("rda", problem, step, output, extra), tol=tol,
                      abs_tol=abs_tol, max_iter=max_iter, time_limit=time_limit,
                      callback=callback, verbose=verbose, check_every=check_every)


# ---------------------------------------------------------------------------
# Baselines: SGD with the l1 subgradient, truncated gradient (TG / FOBOS)

def _solve_truncation(problem, solver, truncate, *, tol, abs_tol, max_iter, time_limit,
                      callback, verbose, random_state, eta, gamma, K, batch_size, shuffle,
                      check_every, start):
    _INFO[solver].check(problem)
    check_budget(tol, max_iter, time_limit)
    shuffle = check_bool(shuffle, "shuffle")
    lam = problem.alpha
    k = check_size(batch_size, "batch_size")
    K = check_size(K, "K")
    n_steps = -(-problem.n_samples // k)
    if eta is None:
        previous = start_state(start, solver, dict)
        if previous is not None and "eta" in previous:
            eta = previous["eta"]
        else:
            g = (_default_gamma(problem, lam) if gamma is None
                 else check_number(gamma, "gamma", 0.0, low_open=True))
            eta = _data_default("eta", math.sqrt(2.0 / (max_iter * n_steps)) / g,  # eq. (19)
                                positive=True)
    eta = check_number(eta, "eta", 0.0, low_open=True)
    D = problem.n_weights
    config = (D, lam, eta, K, k, bool(truncate))
    # coords[:, 0] = w, [:, 1] = last step applied to that coordinate
    st = _continue_state(start, solver, config, lambda: {
        "solver": solver, "config": config, "eta": eta, "t": 0, "coords": np.zeros((D, 2))})
    args = _kernel_args(problem)
    orders = epoch_orders(problem.n_samples, shuffle, random_state, np.int64)
    loss_sum = [0.0]

    def step():
        total, status = _rda.truncated_gradient_epoch(
            *args, next(orders), k, problem.loss.spec.kernel_id, problem.loss.param,
            st["coords"], st["t"], eta, lam, K, truncate)
        check_kernel_status(status, solver, problem, OVERFLOW_ADVICE)
        st["t"] += n_steps
        loss_sum[0] += total

    def extra():
        return {"state": st, "n_steps": st["t"], "eta": eta, "loss_sum": loss_sum[0]}

    return run_epochs(problem, solver,
                      _Epochs(solver, problem, step, lambda: st["coords"][:, 0].copy(), extra),
                      tol=tol, abs_tol=abs_tol, max_iter=max_iter, time_limit=time_limit,
                      callback=callback, verbose=verbose, check_every=check_every)


def solve_sgd_l1(problem, *, tol=1e-4, abs_tol=0.0, max_iter=10, time_limit=None,
                 callback=None, verbose=0, random_state=None, eta=None, gamma=None,
                 batch_size=1, shuffle=True, check_every=1, start=None):
    """SGD with the l1 subgradient, w_{t+1} = w_t - eta (g_t + lambda sgn(w_t)) (Xiao 2010,
    section 6).

    penalty must be "l1" (lambda = alpha).  Constant step ``eta``; default
    ``sqrt(2/T)/gamma`` with T = max_iter * ceil(m / batch_size) and gamma as in
    solve_rda (Xiao 2010, eq. (19)).  O(nnz(x_i)) per step: idle coordinates get
    their subgradient steps in closed form just in time.  No certificate
    (bound NaN).  ``start`` continues a previous call (streaming).
    """
    return _solve_truncation(problem, "sgd_l1", False, tol=tol, abs_tol=abs_tol,
                             max_iter=max_iter, time_limit=time_limit, callback=callback,
                             verbose=verbose, random_state=random_state, eta=eta, gamma=gamma,
                             K=1, batch_size=batch_size, shuffle=shuffle,
                             check_every=check_every, start=start)


def solve_truncated_gradient(problem, *, tol=1e-4, abs_tol=0.0, max_iter=10, time_limit=None,
                             callback=None, verbose=0, random_state=None, K=1, eta=None,
                             gamma=None, batch_size=1, shuffle=True, check_every=1, start=None):
    """Truncated gradient (Langford et al. 2009; Xiao 2010, eq. (29), theta = inf): an SGD
    step w - eta g_t, and every K-th step the soft threshold eta lambda K.  K = 1 is
    FOBOS.  penalty "l1", constant ``eta`` (default as in solve_sgd_l1).
    O(nnz(x_i)) per step (lazy truncation with exact catch-up); no certificate.
    """
    return _solve_truncation(problem, "truncated_gradient", True, tol=tol, abs_tol=abs_tol,
                             max_iter=max_iter, time_limit=time_limit, callback=callback,
                             verbose=verbose, random_state=random_state, eta=eta, gamma=gamma,
                             K=K, batch_size=batch_size, shuffle=shuffle,
                             check_every=check_every, start=start)


def _scalar(spec):
    return not spec.vector


_COMMON = dict(accepts_loss=_scalar, loss_rule="scalar losses", streams=True, start="state",
               threads=False, epochs=True)
SOLVER_INFO = (
    SolverInfo("rda", solve_rda, accepts_penalty=lambda reg: reg.l1_l2() is not None,
               penalty_rule="penalties with an l1/l2 split (l1, elasticnet, l2)",
               certificate="dist(0, dJ(w))^2 / (2 sigma) (strongly convex penalties only)",
               **_COMMON),
    SolverInfo("sgd_l1", solve_sgd_l1, accepts_penalty=is_l1, penalty_rule="the l1 penalty",
               **_COMMON),
    SolverInfo("truncated_gradient", solve_truncated_gradient, accepts_penalty=is_l1,
               penalty_rule="the l1 penalty", **_COMMON),
)
_INFO = {info.name: info for info in SOLVER_INFO}
