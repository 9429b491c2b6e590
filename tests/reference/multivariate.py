"""Brute-force references for the multivariate losses: O(m^2) pair loops and enumeration.

Each function returns the loss value from its definition (a max over every
labeling / permutation / pair), independent of fastrisk.multivariate.
"""

import itertools

import numpy as np


def pairwise_hinge(f, y):
    """(1/P) sum over pairs y_i > y_j of max(0, 1 - (f_i - f_j)), by a double loop."""
    total, pairs = 0.0, 0
    for i in range(len(f)):
        for j in range(len(f)):
            if y[i] > y[j]:
                total += max(0.0, 1.0 - (f[i] - f[j]))
                pairs += 1
    return total / pairs


def auc(f, y):
    """Fraction of (positive, negative) pairs ranked correctly (ties count 1/2)."""
    pos, neg = f[y > 0], f[y <= 0]
    d = pos[:, None] - neg[None, :]
    return float(np.mean((d > 0) + 0.5 * (d == 0)))


def fbeta_score(y, y_pred, beta):
    """F_beta of a +-1 labeling (0 when there is no true positive)."""
    tp = np.sum((y > 0) & (y_pred > 0))
    fp = np.sum((y <= 0) & (y_pred > 0))
    fn = np.sum((y > 0) & (y_pred <= 0))
    if tp == 0:
        return 0.0
    return (1 + beta**2) * tp / ((1 + beta**2) * tp + beta**2 * fn + fp)


def fbeta_loss(f, y, beta, y_pred):
    """1 - F_beta(y, y') + (1/(2m)) sum (y'_i - y_i) f_i for one labeling y' (y in +-1)."""
    return 1.0 - fbeta_score(y, y_pred, beta) + np.dot(y_pred - y, f) / (2 * len(f))


def fbeta_max(f, y, beta):
    """max over all 2^m labelings of fbeta_loss."""
    return max(fbeta_loss(f, y, beta, np.array(s, dtype=float))
               for s in itertools.product([-1.0, 1.0], repeat=len(f)))


def ranking_query_loss(f, rel, measure, k, perm):
    """One query: sum_i c_i (f_{perm(i)} - f_{sigma(i)}) + 1 - <a, b_perm>/Z, by loops."""
    n = len(f)
    k = n if k is None else min(k, n)
    c = [1.0 / np.log2(i + 2) for i in range(n)]
    if measure == "ndcg":
        a = [1.0 / np.log2(i + 2) if i < k else 0.0 for i in range(n)]
        b = [2.0**r - 1 for r in rel]
    else:
        a = [1.0 / k if i < k else 0.0 for i in range(n)]
        b = [1.0 if r > 0 else 0.0 for r in rel]
    sigma = sorted(range(n), key=lambda j: (-rel[j], j))
    Z = sum(a[i] * b[sigma[i]] for i in range(n))
    score = sum(c[i] * (f[perm[i]] - f[sigma[i]]) for i in range(n))
    return score + 1.0 - sum(a[i] * b[perm[i]] for i in range(n)) / Z


def ranking_query_max(f, rel, measure, k):
    """max over all n! permutations of ranking_query_loss."""
    return max(ranking_query_loss(f, rel, measure, k, perm)
               for perm in itertools.permutations(range(len(f))))


def scaled_soft_margin(F, y, cost, beta):
    """Per row: max over y' of cost[y,y']^beta (F_y' - F_y + cost[y,y']), by loops."""
    out = []
    for i in range(F.shape[0]):
        out.append(max(cost[y[i], j] ** beta * (F[i, j] - F[i, y[i]] + cost[y[i], j])
                       if j != y[i] else 0.0 for j in range(F.shape[1])))
    return np.array(out)
