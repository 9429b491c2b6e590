"""fastrisk: regularized risk minimization for linear models with a C/Cython core.

Minimizes ``J(w) = alpha * Omega(w) + (1/m) sum_i c_i loss(<w, x_i>, y_i)``.
"""

__version__ = "0.1.0"

import os as _os

# Idle OpenMP threads sleep instead of spinning, unless the user chose otherwise.  Read by
# the OpenMP runtime when the first kernel module loads it, so it must be set here.  Spinning
# threads compete with the working ones when the cores are shared; sleeping costs one
# wake-up per parallel region.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from fastrisk.config import show_config
from fastrisk.cv import LinearClassifierCV, LinearRegressorCV
from fastrisk.data import Dataset
from fastrisk.estimators import LinearClassifier, LinearRegressor, estimator_from_model
from fastrisk.losses import LOSSES, Loss
from fastrisk.model import LinearModel, load
from fastrisk.oracle import LocalOracle, RiskOracle
from fastrisk.problem import Problem
from fastrisk.regpath import Path, alpha_max, path
from fastrisk.regularizers import PENALTIES, make_regularizer
from fastrisk.solvers import SOLVERS, solve
from fastrisk.stopping import History, Result
from fastrisk.svmlight import dump_svmlight, load_svmlight

__all__ = [
    "LOSSES",
    "PENALTIES",
    "SOLVERS",
    "Dataset",
    "History",
    "LinearClassifier",
    "LinearClassifierCV",
    "LinearModel",
    "LinearRegressor",
    "LinearRegressorCV",
    "LocalOracle",
    "Path",
    "Loss",
    "Problem",
    "Result",
    "RiskOracle",
    "__version__",
    "alpha_max",
    "dump_svmlight",
    "estimator_from_model",
    "load",
    "load_svmlight",
    "make_regularizer",
    "path",
    "show_config",
    "solve",
]
