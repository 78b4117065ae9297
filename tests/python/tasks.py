"""Module-level task functions for the executor tests: they travel by pickle, by reference to this module."""

import os
import time


class Unpicklable(Exception):
    """An exception that holds a lock: it cannot be pickled on the rank where it is raised."""

    def __init__(self, message):
        super().__init__(message)
        import threading
        self.lock = threading.Lock()


def square(x):
    return x * x


def add(a, b=0):
    return a + b


def fail_at(x, bad=3):
    if x == bad:
        raise ValueError(f"task {x} is bad")
    return x


def sleep_then(x, seconds=0.0):
    time.sleep(seconds)
    return x


def rank_of(_):
    from mpi4py import MPI
    return MPI.COMM_WORLD.Get_rank()


def pid(_):
    return os.getpid()
