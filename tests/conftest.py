"""Fixtures shared by several test modules."""

import pytest


@pytest.fixture(scope="module")
def client():
    """A client of a 2-worker LocalCluster with worker processes, one cluster per test module."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as c:
        yield c
