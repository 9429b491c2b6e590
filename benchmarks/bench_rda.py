"""RDA vs its baselines (SGD-l1, truncated gradient) and scikit-learn's
``SGDClassifier(penalty="l1")``: time per epoch, nonzeros, test error.

l1-regularized logistic regression (Xiao 2010's experiment) on Reuters
money-fx (train/test files) and IMDB unigram+bigram tf-idf (20000 rows to
train, 5000 held out), with an intercept, default gamma / step sizes.

* As a pytest-benchmark suite (CI runs it with --benchmark-disable, i.e. one
  epoch per method as a smoke test): ``pytest benchmarks/bench_rda.py``.
* As a script, the comparison table (from the repository root):
  ``PYTHONPATH=. python benchmarks/bench_rda.py
  [reuters] [imdb]``.  Timings are taken back to back in one process,
  repeated and interleaved, best of 3 (the machine is shared); "epoch" is the marginal
  cost of an epoch, (best time of 3 epochs - best time of 1 epoch) / 2, which leaves out
  the one-off costs (allocating the O(d) state, forming the outputs); "1 ep"
  is a whole 1-epoch call; nnz and test error are those after 3 epochs.
  Also p-norm RDA (p = 1.5, O(nnz(x_i)) per step) on Reuters.  The "/rda"
  column is each epoch time over l1-RDA's.
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

import fastrisk as fr
from fastrisk.solvers.rda import solve_rda, solve_sgd_l1, solve_truncated_gradient

LAMBDAS = {"reuters": (1e-4, 1e-5), "imdb": (1e-5, 1e-6)}


def load(name, imdb=None):
    """(X_train, y_train, X_test, y_test) with labels -1/+1; ``imdb``: the (X, y) to split
    for "imdb" (default: the full IMDB problem)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from conftest import load_imdb_bigrams, load_libsvm

    if name == "reuters":
        Xtr, ytr = load_libsvm("reuters")
        Xte, yte = load_libsvm("reuters", "test")
    else:
        X, y = imdb if imdb is not None else load_imdb_bigrams()
        perm = np.random.default_rng(0).permutation(X.shape[0])
        n_train = X.shape[0] * 4 // 5
        Xtr, ytr = X[perm[:n_train]], y[perm[:n_train]]
        Xte, yte = X[perm[n_train:]], y[perm[n_train:]]
    return Xtr, np.where(ytr > 0, 1.0, -1.0), Xte, np.where(yte > 0, 1.0, -1.0)


def methods(prob, lam, with_pnorm):
    """name -> fit(epochs) returning (coef, intercept)."""
    def ours(solve, **kw):
        def fit(epochs):
            res = solve(prob, max_iter=epochs, random_state=0, check_every=0, **kw)
            return res.coef_, res.intercept_
        return fit

    def sklearn(epochs):
        clf = SGDClassifier(loss="log_loss", penalty="l1", alpha=lam, max_iter=epochs, tol=None,
                            random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(prob.data.X, prob.y)
        return clf.coef_.ravel(), float(clf.intercept_[0])

    out = {"rda": ours(solve_rda), "sgd_l1": ours(solve_sgd_l1),
           "tg K=1": ours(solve_truncated_gradient, K=1),
           "tg K=10": ours(solve_truncated_gradient, K=10), "sklearn": sklearn}
    if with_pnorm:
        out["pnorm p=1.5"] = ours(solve_rda, p_norm=1.5)
    return out


def problem(Xtr, ytr, lam):
    return fr.Problem(Xtr, ytr, loss="logistic", penalty="l1", alpha=lam, fit_intercept=True,
                      n_threads=1)


# ---------------------------------------------------------------------------
# pytest-benchmark: one epoch per method

@pytest.fixture(scope="module", params=["reuters", "imdb"])
def dataset(request):
    imdb = request.getfixturevalue("imdb_bigrams") if request.param == "imdb" else None
    return request.param, load(request.param, imdb)


@pytest.mark.parametrize("method", ["rda", "sgd_l1", "tg K=1", "sklearn"])
def test_one_epoch(benchmark, dataset, method):
    name, (Xtr, ytr, Xte, yte) = dataset
    lam = LAMBDAS[name][0]
    fit = methods(problem(Xtr, ytr, lam), lam, False)[method]
    coef, b = benchmark.pedantic(fit, args=(1,), rounds=3, iterations=1)
    error = np.mean(np.sign(Xte @ coef + b) != yte)
    benchmark.extra_info.update(nnz=int(np.count_nonzero(coef)), test_error=float(error))
    assert error < 0.5


# ---------------------------------------------------------------------------
# the comparison table

def table(name, repeats=3):
    Xtr, ytr, Xte, yte = load(name)
    print(f"\n{name}: train {Xtr.shape}, nnz {Xtr.nnz}; test {Xte.shape}")
    print(f"{'lambda':>7} {'method':>12} {'1 ep s':>8} {'epoch s':>8} {'/sklearn':>8} {'/rda':>6} "
          f"{'nnz':>8} {'nnz>1e-5':>8} {'test err':>8}")
    for lam in LAMBDAS[name]:
        fits = methods(problem(Xtr, ytr, lam), lam, name == "reuters")
        one, three, coefs = {m: [] for m in fits}, {m: [] for m in fits}, {}
        for _ in range(repeats):
            for m, fit in fits.items():          # interleaved: same load for everyone
                t = time.perf_counter()
                fit(1)
                t1 = time.perf_counter()
                coefs[m] = fit(3)
                one[m].append(t1 - t)
                three[m].append(time.perf_counter() - t1)
        epoch = {m: (min(three[m]) - min(one[m])) / 2 for m in fits}
        for m in fits:
            coef, b = coefs[m]
            err = np.mean(np.sign(Xte @ coef + b) != yte)
            print(f"{lam:7.0e} {m:>12} {min(one[m]):8.3f} {epoch[m]:8.3f} "
                  f"{epoch[m] / epoch['sklearn']:8.2f} {epoch[m] / epoch['rda']:6.2f} "
                  f"{np.count_nonzero(coef):8d} {int((np.abs(coef) > 1e-5).sum()):8d} "
                  f"{err:8.4f}")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["reuters", "imdb"]:
        table(name)
