"""Sequence labeling with a max-margin Markov loss, solved by BMRM (Teo et al. 2007, section 3.3).

A user-defined risk oracle: BMRM, the proximal bundle method and L-BFGS
only need ``R_emp(w)`` and a subgradient, so a structured model plugs in by
writing ``__call__(w) -> (value, subgradient)`` and handing the object to
``fastrisk.Problem.from_oracle``.

Model: a chain over k states with emission weights W (k x d) and transition
weights T (k x k); ``<w, phi(x, y)> = sum_t <W_{y_t}, x_t> + sum_t T_{y_{t-1}, y_t}``.
Loss of one sequence (structured hinge, Taskar et al.; Teo et al. 2007,
section 3.3, with beta = 0):
``max_{y'} [Delta(y, y') + <w, phi(x, y') - phi(x, y)>]``, Delta = Hamming
distance / length, found by loss-augmented Viterbi; its subgradient is
``phi(x, y*) - phi(x, y)``.  R_emp is the mean over sequences.

Run: ``python examples/sequence_labeling.py`` (a few seconds).
"""

import numpy as np

import fastrisk as fr


class ChainHingeOracle:
    """R_emp(w) and a subgradient for the max-margin chain model above."""

    def __init__(self, sequences, labels, n_states):
        self.X = [np.asarray(x, dtype=np.float64) for x in sequences]
        self.Y = [np.asarray(y, dtype=np.intp) for y in labels]
        self.k, self.d = int(n_states), self.X[0].shape[1]
        self.n_samples = len(self.X)
        self.n_weights = self.k * self.d + self.k * self.k

    def unpack(self, w):
        kd = self.k * self.d
        return w[:kd].reshape(self.k, self.d), w[kd:].reshape(self.k, self.k)

    def phi(self, x, y):
        """Joint feature map: (sum_t x_t e_{y_t}^T, transition counts), flattened like w."""
        onehot = np.eye(self.k)[y]
        return np.concatenate([(onehot.T @ x).ravel(), (onehot[:-1].T @ onehot[1:]).ravel()])

    def decode(self, w, x, y=None):
        """Viterbi argmax of <w, phi(x, y')> (+ Hamming(y, y') when y is given)."""
        W, T = self.unpack(w)
        e = x @ W.T
        if y is not None:
            e = e + (np.arange(self.k)[None, :] != y[:, None]) / len(y)
        L = e.shape[0]
        score, back = e[0].copy(), np.zeros((L, self.k), dtype=np.intp)
        for t in range(1, L):
            cand = score[:, None] + T  # cand[r, s]: from state r to s
            back[t] = np.argmax(cand, axis=0)
            score = cand[back[t], np.arange(self.k)] + e[t]
        path = np.empty(L, dtype=np.intp)
        path[-1] = int(np.argmax(score))
        for t in range(L - 1, 0, -1):
            path[t - 1] = back[t, path[t]]
        return path

    def __call__(self, w):
        w = np.asarray(w, dtype=np.float64)
        value, grad = 0.0, np.zeros(self.n_weights)
        for x, y in zip(self.X, self.Y):
            y_star = self.decode(w, x, y)
            dphi = self.phi(x, y_star) - self.phi(x, y)
            value += np.mean(y_star != y) + w @ dphi
            grad += dphi
        return value / self.n_samples, grad / self.n_samples


def make_chains(n_sequences, length, means, rng, stay=0.85, noise=1.0):
    """Sticky Markov chains with Gaussian emissions around ``means[state]``."""
    k, d = means.shape
    X, Y = [], []
    for _ in range(n_sequences):
        y = np.empty(length, dtype=np.intp)
        y[0] = rng.integers(k)
        for t in range(1, length):
            y[t] = y[t - 1] if rng.random() < stay else rng.integers(k)
        X.append(means[y] + noise * rng.normal(size=(length, d)))
        Y.append(y)
    return X, Y


def token_accuracy(oracle, w, X, Y):
    return np.mean(np.concatenate([oracle.decode(w, x) == y for x, y in zip(X, Y)]))


def main(solver="bmrm", alpha=1e-2, tol=1e-3, n_train=60, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(3, 4))
    X, Y = make_chains(n_train, 15, means, rng)
    X_test, Y_test = make_chains(200, 15, means, rng)
    oracle = ChainHingeOracle(X, Y, n_states=3)
    problem = fr.Problem.from_oracle(oracle, penalty="l2", alpha=alpha)
    res = fr.solve(problem, solver=solver, tol=tol, max_iter=500)
    w_emission_only = res.w.copy()
    w_emission_only[oracle.k * oracle.d:] = 0.0  # no transitions: per-token argmax
    acc = token_accuracy(oracle, res.w, X_test, Y_test)
    acc_iid = token_accuracy(oracle, w_emission_only, X_test, Y_test)
    print(f"{solver}: {res.status} after {res.n_iter} iterations, J = {res.objective:.5f}, "
          f"gap <= {res.gap:.2g}")
    print(f"test token accuracy: chain model {acc:.3f}, same emissions without transitions "
          f"{acc_iid:.3f}")
    return res, acc, acc_iid


if __name__ == "__main__":
    main()
