"""The data set shipped inside the package: a9a (Adult), LIBSVM version.

Source: C.-C. Chang and C.-J. Lin, LIBSVM data sets; from J. C. Platt,
"Fast training of support vector machines using sequential minimal
optimization", 1998, on the UCI Adult data (R. Kohavi and B. Becker).
"""

from importlib.resources import files

from fastrisk.svmlight import load_svmlight

A9A_FEATURES = 123


def load_a9a():
    """Return (X_train, y_train, X_test, y_test): 32561 and 16281 rows, 123 features, labels -1/+1."""
    root = files("fastrisk.datasets")
    X_train, y_train = load_svmlight(root / "a9a.bz2", n_features=A9A_FEATURES)
    X_test, y_test = load_svmlight(root / "a9a.t.bz2", n_features=A9A_FEATURES)
    return X_train, y_train, X_test, y_test
