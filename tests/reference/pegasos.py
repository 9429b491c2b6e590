"""Plain NumPy, step-by-step versions of the Pegasos family (docs/math.md §5; Do, Le & Foo 2009 Alg. 1-3).

An explicit dense weight vector, no scaling tricks, no laziness: the kernel
tests run these on the same rows in the same order and compare iterates.
``dloss(f, y) -> l'(f, y)`` is the loss derivative (the tests pass the
NumPy references of fastrisk.losses).
"""

import numpy as np


def pegasos_steps(X, y, order, *, lam, rule, radius, G=1.0, R=1.0, batch_size=1, dloss,
                  c=None, avg_start=None, eps=0.0, delta=0.1, phase_length=None, offset=0.0):
    """Iterates of projected subgradient descent over ``order``.

    rule: "pegasos" (tau = 0), "proximal" (Do, Le & Foo 2009 Alg. 2) or "adaptive"
    (gradient of f + tau/2 ||w||^2).  Returns (w, average of the iterates after
    step avg_start or None, list of iterates, final R).  ``eps > 0`` runs the
    optimistic R doubling of Alg. 3; ``phase_length(R)`` gives T.  ``offset`` is the L
    of eta_t = 1/(lam t + L) for losses with an unbounded derivative.
    """
    X = np.asarray(X, dtype=np.float64)
    m, d = X.shape
    c = np.ones(m) if c is None else c
    w = np.zeros(d)
    t, tau_sum, total = 0, 0.0, 0
    acc, n_acc = np.zeros(d), 0
    iterates = []
    T_phase = phase_length(R) if eps > 0 else None
    for pos in range(0, len(order), batch_size):
        batch = order[pos:pos + batch_size]
        grad_loss = np.zeros(d)
        for i in batch:
            grad_loss += c[i] * dloss(X[i] @ w, y[i]) * X[i]
        grad_loss /= len(batch)
        t += 1
        total += 1
        tau = 0.0
        if rule != "pegasos":
            b = lam * t + tau_sum
            tau = (-b + np.sqrt(b * b + G * G / (R * R))) / 2.0
            tau_sum += tau
        eta = 1.0 / (lam * t + offset + tau_sum)
        g = lam * w + grad_loss
        if rule == "adaptive":
            g = g + tau * w
        w = w - eta * g
        norm = np.linalg.norm(w)
        if norm > radius:
            w = w * (radius / norm)
            norm = radius
        iterates.append(w.copy())
        if avg_start is not None and total > avg_start:
            acc += w
            n_acc += 1
        if eps > 0:
            if norm >= R - np.sqrt(2.0 * eps / lam):
                R *= np.sqrt(2.0)
                t = 0  # new phase: lambda_{1:t} restarts, tau_{1:t} is kept
                T_phase = phase_length(R)
            elif t >= T_phase:
                break
    return w, (acc / n_acc if n_acc else None), iterates, R
