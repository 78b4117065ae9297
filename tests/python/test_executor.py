"""pfarm.Executor against mpi4py.futures.MPICommExecutor: the same tests run on both where their semantics match
(results in order, exceptions, empty input, timeout, submit, several calls per with), then pfarm's own (the report,
chunksize as the smallest chunk, unordered, options, shutdown)."""

import concurrent.futures
import time

import pytest
from mpi4py import MPI
from mpi4py.futures import MPICommExecutor

import pfarm
import tasks

EXECUTORS = [pfarm.Executor, MPICommExecutor]


@pytest.fixture(params=EXECUTORS, ids=["pfarm", "mpi4py"])
def executor(request):
    return request.param


def test_map_in_order(executor):
    with executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        assert list(ex.map(tasks.square, range(500))) == [i * i for i in range(500)]
        assert list(ex.map(tasks.add, range(10), range(100, 110))) == [i + 100 + i for i in range(10)]


def test_map_is_lazy_iterator(executor):
    with executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        it = ex.map(tasks.square, range(5))
        assert iter(it) is it and next(it) == 0
        assert list(it) == [1, 4, 9, 16]


def test_empty_input(executor):
    with executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        assert list(ex.map(tasks.square, [])) == []
        assert list(ex.map(tasks.add, [], [])) == []


def test_exception_reached_in_order(executor):
    with executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        got = []
        with pytest.raises(ValueError, match="task 3 is bad"):
            for value in ex.map(tasks.fail_at, range(8)):
                got.append(value)
        assert got == [0, 1, 2]
        # the executor still works afterwards
        assert list(ex.map(tasks.square, range(3))) == [0, 1, 4]


def test_submit(executor):
    with executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        future = ex.submit(tasks.add, 2, b=40)
        assert isinstance(future, concurrent.futures.Future)
        assert future.result(timeout=60) == 42
        futures = [ex.submit(tasks.square, i) for i in range(20)]
        assert [f.result() for f in futures] == [i * i for i in range(20)]
        bad = ex.submit(tasks.fail_at, 3)
        good = ex.submit(tasks.fail_at, 4)
        with pytest.raises(ValueError, match="task 3 is bad"):
            bad.result()
        assert isinstance(bad.exception(), ValueError)
        assert good.result() == 4


def test_as_completed(executor):
    with executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        futures = {ex.submit(tasks.square, i): i for i in range(30)}
        done = {futures[f]: f.result() for f in concurrent.futures.as_completed(futures, timeout=60)}
        assert done == {i: i * i for i in range(30)}


def test_timeout(executor):
    with executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        it = ex.map(tasks.sleep_then, [1, 2], [1.0, 1.0], timeout=0.2)
        with pytest.raises(concurrent.futures.TimeoutError):
            next(it)
        future = ex.submit(tasks.sleep_then, 5, 1.0)
        with pytest.raises(concurrent.futures.TimeoutError):
            future.result(timeout=0.1)
        assert future.result(timeout=60) == 5


def test_several_withs(executor):
    for round_ in range(3):
        with executor(MPI.COMM_WORLD) as ex:
            if ex is not None:
                assert list(ex.map(tasks.add, range(5), [round_] * 5)) == [i + round_ for i in range(5)]


def test_submit_after_shutdown(executor):
    with executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        ex.shutdown(wait=True)
        with pytest.raises(RuntimeError):
            ex.submit(tasks.square, 2)


# --- pfarm's own -------------------------------------------------------------------------------------------------

def test_report_and_options():
    with pfarm.Executor(MPI.COMM_WORLD, technique="gss", prefetch=True) as ex:
        if ex is None:
            return
        assert list(ex.map(tasks.square, range(1000))) == [i * i for i in range(1000)]
        report = ex.last_report
        assert report.technique == "gss" and report.tasks == 1000
        assert sum(report.tasks_per_rank) == 1000


def test_chunksize_is_the_smallest_chunk():
    """chunksize is min_chunk: every chunk but the last (cut to what remains) has at least 16 tasks (reclaim off:
    a reclaim cuts a chunk)."""
    with pfarm.Executor(MPI.COMM_WORLD, technique="gss", reclaim=False) as ex:
        if ex is None:
            return
        assert list(ex.map(tasks.square, range(300), chunksize=16)) == [i * i for i in range(300)]
        chunks = sorted(c for per_rank in ex.last_report.chunks_per_rank for c in per_rank)
        assert sum(chunks) == 300
        assert all(c >= 16 for c in chunks[1:]), chunks
        with pytest.raises(ValueError, match="chunksize"):
            ex.map(tasks.square, range(3), chunksize=0)


def test_unordered_and_work_on_every_rank():
    with pfarm.Executor(MPI.COMM_WORLD, technique="ss", farmer_computes=True) as ex:
        if ex is None:
            return
        got = list(ex.map(tasks.sleep_then, range(40), [0.002] * 40, unordered=True))
        assert sorted(got) == list(range(40))
        ranks = set(ex.map(tasks.rank_of, range(8 * MPI.COMM_WORLD.Get_size())))
        assert ranks <= set(range(MPI.COMM_WORLD.Get_size())) and ranks


def test_unpicklable_function_fails_its_future_only():
    with pfarm.Executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        bad = ex.submit(lambda x: x, 1)
        good = ex.submit(tasks.square, 3)
        with pytest.raises(Exception):
            bad.result()
        assert good.result() == 9


def test_bad_options():
    with pytest.raises(TypeError, match="bogus"):
        pfarm.Executor(MPI.COMM_WORLD, bogus=1)
    with pytest.raises(ValueError, match="root"):
        pfarm.Executor(MPI.COMM_WORLD, root=1)
    with pfarm.Executor(MPI.COMM_WORLD, technique="nope") as ex:  # the engine's verdict, in the future
        if ex is not None:
            with pytest.raises(ValueError, match="technique"):
                ex.submit(tasks.square, 2).result()
            assert list(ex.map(tasks.square, [])) == []


def test_cancel_futures_on_shutdown():
    with pfarm.Executor(MPI.COMM_WORLD) as ex:
        if ex is None:
            return
        first = ex.submit(tasks.sleep_then, 1, 0.5)
        later = [ex.submit(tasks.square, i) for i in range(5)]
        time.sleep(0.1)
        ex.shutdown(wait=True, cancel_futures=True)
        assert first.result() == 1
        assert all(f.cancelled() or f.result() == i * i for i, f in enumerate(later))
