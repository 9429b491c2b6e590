"""Option validation shared by the solvers: one message format for every option.

Each helper returns the value converted to a Python type, or raises ValueError
naming the option, the allowed range and the value received.
"""

import copy as copy_module
import math
import numbers

import numpy as np


def check_int(value, name, low=None, high=None, *, allow_none=False):
    """An integer (not a bool) in [low, high] (None bounds are open), or None if allowed."""
    if allow_none and value is None:
        return None
    if not isinstance(value, (numbers.Integral, np.integer)) \
            or isinstance(value, (bool, np.bool_)) \
            or (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {'None or ' if allow_none else ''}an integer"
                         f"{_range(low, high, False, False)}, got {value!r}")
    return int(value)


# the largest count or size a kernel takes (as a 64-bit signed integer, which it may add to
# or double)
SIZE_MAX = 2 ** 62


def check_size(value, name, low=1, *, allow_none=False):
    """``check_int`` for a count or size that reaches a kernel: at most SIZE_MAX."""
    value = check_int(value, name, low, allow_none=allow_none)
    if value is not None and value > SIZE_MAX:
        raise ValueError(f"{name} must be an integer <= 2**62, got {value!r}")
    return value


def check_number(value, name, low=None, high=None, *, low_open=False, high_open=False):
    """A finite real number (not a bool) in the interval given by low/high and openness."""
    ok = isinstance(value, (numbers.Real, np.floating, np.integer)) \
        and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        raise ValueError(f"{name} must be a finite number"
                         f"{_range(low, high, low_open, high_open)}, got {value!r}")
    return float(value)


def check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def check_choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_rng(random_state, name="random_state"):
    """A numpy Generator from ``random_state``: None (fresh entropy), an integer >= 0 (the
    same integer, the same stream) or a numpy Generator (used as it is)."""
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if isinstance(random_state, (numbers.Integral, np.integer)) \
            and not isinstance(random_state, (bool, np.bool_)) and random_state >= 0:
        return np.random.default_rng(int(random_state))
    raise ValueError(f"{name} must be None, an integer >= 0 or a numpy Generator, "
                     f"got {random_state!r}")


def _range(low, high, low_open, high_open):
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return (" " + " and ".join(parts)) if parts else ""


def real_array(value):
    """``value`` as a float64 array, or None when it is not an array of real numbers (a
    cast would drop imaginary parts and parse strings)."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):
        return None  # ragged nesting
    return a.astype(np.float64) if a.dtype.kind in "biuf" else None


def start_weights(problem, start):
    """The initial w of ``start=``: zeros (None), a weight vector, or a Result (its ``w``)."""
    if start is None:
        return np.zeros(problem.n_weights)
    w = real_array(getattr(start, "w", start))
    w = None if w is None else w.ravel()
    if w is None or w.shape != (problem.n_weights,) or not np.isfinite(w).all():
        raise ValueError(f"start must be a Result or a finite real vector of length "
                         f"{problem.n_weights}")
    return w


class StartMismatch(ValueError):
    """A ``start=`` state that cannot continue this run: it was made on another problem
    shape or with other settings (alpha, batch size, step rule).  The estimators' warm_start
    starts cold on it; partial_fit reports it."""


def start_state(start, solver, state_type, *, copy=False):
    """The state to continue from: None, a Result of the same solver, or its state.
    ``copy``: a deep copy, for the run that advances it (the earlier Result, or the state
    passed, stays as it was); without it, the state itself, to read its settings."""
    if start is None:
        return None
    if isinstance(start, state_type):
        state = start
    else:
        state = getattr(start, "extra", {}).get("state")
        if getattr(start, "solver", None) != solver or not isinstance(state, state_type):
            raise ValueError(f"start must be the Result of a previous {solver!r} run (or its "
                             f"extra['state']) to continue from, got {type(start).__name__}")
    return copy_module.deepcopy(state) if copy else state


def finite_iterate(w, solver, problem):
    """``w``, or a FloatingPointError naming the solver when an iterate it made is not
    finite (else the oracle's 'w contains NaN or infinity' would read as the caller's
    mistake)."""
    if not np.isfinite(w).all():
        name = getattr(problem.loss, "name", "user-defined")
        raise FloatingPointError(f"{solver}: an iterate is not finite (the {name} risk); "
                                 "check the scale of X, sample_weight and alpha")
    return w
