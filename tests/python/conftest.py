"""pytest set-up of pfarm's Python tests: they run under mpiexec on 1, 2 and 4 ranks (tests/python/CMakeLists.txt),
every rank running the same tests in the same order, since each farm is collective. Assertions on results hold on
rank 0; every rank checks what it is given (None, or the error)."""

import pytest
from mpi4py import MPI


@pytest.fixture
def comm():
    return MPI.COMM_WORLD


@pytest.fixture
def rank():
    return MPI.COMM_WORLD.Get_rank()
