"""pfarm.map and pfarm.imap_unordered (SPMD): results in task order, the kinds of tasks (range, list, NumPy rows),
the NumPy fast path, the report, edge sizes, options by keyword and their errors, a journal that resumes, a trace,
and a task's exception raised on every rank with its type, message and remote traceback."""

import resource

import numpy as np
import pytest

import pfarm
from tasks import Unpicklable


def test_range_results_in_task_order(comm, rank):
    results = pfarm.map(lambda i: i * i, range(3, 2003, 2))
    if rank == 0:
        assert results == [i * i for i in range(3, 2003, 2)]
    else:
        assert results is None


def test_any_sequence_and_any_picklable_result(comm, rank):
    tasks = [("a", 1), ("b", 2), {"c": 3}, None, 4.5] * 40
    results = pfarm.map(lambda t: {"task": t, "kind": type(t).__name__}, tasks, technique="gss")
    if rank == 0:
        assert results == [{"task": t, "kind": type(t).__name__} for t in tasks]


def test_tuple_and_generator_tasks(comm, rank):
    assert pfarm.map(str, (1, 2, 3)) == (["1", "2", "3"] if rank == 0 else None)
    assert pfarm.map(str, (x for x in range(4))) == (["0", "1", "2", "3"] if rank == 0 else None)


def test_numpy_rows_and_fast_path(comm, rank):
    a = np.arange(300.0).reshape(100, 3)
    sums = pfarm.map(lambda row: row.sum(), a, out_dtype=np.float64)
    doubled = pfarm.map(lambda row: row * 2, a, out_dtype="f8", out_shape=(3,), technique="fss")
    out = np.zeros((100, 2), dtype=np.int32) if rank == 0 else None
    given = pfarm.map(lambda row: [row[0], row[2]], a, out=out)
    scalars = pfarm.map(lambda x: float(x) + 0.5, np.arange(50, dtype=np.int64))
    if rank == 0:
        assert isinstance(sums, np.ndarray) and sums.shape == (100,)
        np.testing.assert_array_equal(sums, a.sum(axis=1))
        np.testing.assert_array_equal(doubled, a * 2)
        assert given is out
        np.testing.assert_array_equal(out, a[:, [0, 2]].astype(np.int32))
        assert scalars == [x + 0.5 for x in range(50)]
    else:
        assert sums is None and doubled is None and given is None


def test_numpy_rows_replicated(comm, rank):
    a = np.arange(40, dtype=np.int16).reshape(20, 2)  # every rank holds the same array
    results = pfarm.map(lambda row: int(row[0]) * 10 + int(row[1]), a, replicated_input=True)
    if rank == 0:
        assert results == [int(r[0]) * 10 + int(r[1]) for r in a]


def test_fast_path_wrong_shape_raises_everywhere(comm, rank):
    with pytest.raises(ValueError, match="out_shape"):
        pfarm.map(lambda i: np.zeros(3), range(10), out_dtype=float, out_shape=(2,))


def test_report(comm, rank):
    results, report = pfarm.map(lambda i: i, range(5000), report=True, technique="multi")
    assert isinstance(report, pfarm.Report)
    assert report.ranks == comm.Get_size()
    if rank == 0:
        assert results == list(range(5000))
        assert report.tasks == 5000 and report.technique == "multi"
        assert sum(report.tasks_per_rank) == 5000
        assert sum(sum(c) for c in report.chunks_per_rank) == 5000
        assert report.makespan > 0
        assert report.imbalance == report.percent_imbalance >= 0
        if comm.Get_size() > 1:
            assert report.calibration is not None
            assert abs(sum(report.calibration.F) - 1) < 1e-9
            assert report.calibration.CV >= 0 and report.calibration.k >= 1


@pytest.mark.parametrize("count", [0, 1, 2, 3])
def test_few_tasks(comm, rank, count):
    """No task, one task, fewer tasks than ranks: all work."""
    results, report = pfarm.map(lambda i: -i, range(count), report=True)
    if rank == 0:
        assert results == [-i for i in range(count)]
    array = pfarm.map(lambda i: i, np.arange(count), out_dtype=np.int64)
    if rank == 0:
        assert array.tolist() == list(range(count))


@pytest.mark.parametrize("options", [
    dict(technique="ss"), dict(technique="gss", min_chunk=4), dict(technique="fss", factor=3.0),
    dict(technique="af"), dict(technique="awf-b", farmer_computes=True), dict(technique="css", chunk=7),
    dict(prefetch=True), dict(reclaim=True), dict(farmer_computes=True, prefetch=True),
    dict(technique="tss", progress="quiet"),
])
def test_options(comm, rank, options):
    results = pfarm.map(lambda i: i + 1, range(777), **options)
    if rank == 0:
        assert results == list(range(1, 778))


def test_decentralised_takes_fixed_size_results(comm, rank):
    """The decentralised farm carries fixed-size results only: the NumPy fast path works, pickled results are a
    ValueError naming `farmer` (on every rank)."""
    out = pfarm.map(lambda i: i * 2, range(300), technique="gss", farmer="decentralised", out_dtype=np.int64)
    if rank == 0:
        assert out.tolist() == [i * 2 for i in range(300)]
    if comm.Get_size() > 1:
        with pytest.raises(ValueError, match="farmer"):
            pfarm.map(lambda i: i, range(30), technique="gss", farmer="decentralised")


@pytest.mark.parametrize("victims", ["random", "tree"])
def test_stealing_takes_fixed_size_results(comm, rank, victims):
    """The work-stealing farm (every rank computes) carries fixed-size results: every result in its place; a victim
    rule it does not know is a ValueError naming `victims`."""
    out = pfarm.map(lambda i: i * 5, range(300), technique="gss", farmer="stealing", victims=victims,
                    out_dtype=np.int64)
    if rank == 0:
        assert out.tolist() == [i * 5 for i in range(300)]
    with pytest.raises(ValueError, match="victims"):
        pfarm.map(lambda i: i, range(30), technique="gss", farmer="stealing", victims="ring", out_dtype=np.int64)


def test_hierarchical(comm, rank):
    if comm.Get_size() < 4:
        pytest.skip("the hierarchical farm needs a supermaster, a master and workers: 4 ranks")
    results, report = pfarm.map(lambda i: i * 3, range(500), farmer="hierarchical", masters=1, report=True,
                                record_trace=True)
    if rank == 0:
        assert results == [i * 3 for i in range(500)]
        # Rank 0 handed the master every task but its own worker's: as chunk sizes, and as records with a trace.
        assert report.master_ranks == [1] and len(report.master_chunks) == 1
        assert sum(report.master_chunks[0]) == 500 - report.tasks_per_rank[0]
        assert [c.count for c in report.master_trace] == report.master_chunks[0]
        assert all(c.rank == 1 and c.sent <= c.received for c in report.master_trace)


def test_schedule_learns_across_calls(comm, rank):
    schedule = pfarm.Schedule()
    for _ in range(2):
        results = pfarm.map(lambda i: i, range(300), schedule=schedule)
        if rank == 0:
            assert results == list(range(300))
    if rank == 0 and comm.Get_size() > 1:
        assert schedule.learned and schedule.learned_calls == 1 and schedule.calibrated_calls == 1


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(foo=1), TypeError, "foo"),
    (dict(prefetch="yes"), TypeError, "prefetch"),
    (dict(min_chunk=0), ValueError, "min_chunk"),
    (dict(min_chunk=2.5), TypeError, "min_chunk"),
    (dict(technique="nope"), ValueError, "technique"),
    (dict(farmer="ring"), ValueError, "farmer"),
    (dict(progress="loud"), ValueError, "progress"),
    (dict(stragglers=0.5), ValueError, "stragglers"),
    (dict(calibration="psychic"), ValueError, "calibration"),
    (dict(weights="1,2"), TypeError, "weights"),
    (dict(technique="css"), ValueError, "chunk"),
    (dict(on_task_error="retry=1"), ValueError, "on_task_error"),
    (dict(on_task_error="skip"), ValueError, "on_task_error"),
    (dict(on_task_error=3), TypeError, "on_task_error"),
])
def test_bad_options_name_the_keyword(comm, rank, kwargs, error, name):
    with pytest.raises(error, match=name):
        pfarm.map(lambda i: i, range(20), **kwargs)


def test_bad_tasks_and_out(comm, rank):
    with pytest.raises(TypeError, match="tasks"):
        pfarm.map(lambda i: i, 5)
    with pytest.raises(ValueError, match="out"):
        pfarm.map(lambda i: i, range(4), out=np.zeros(3) if rank == 0 else None)
    with pytest.raises(TypeError, match="comm"):
        pfarm.map(lambda i: i, range(4), comm="world")


def failing(i):
    if i == 37:
        raise KeyError(f"no key {i}")
    return i


def test_task_exception_on_every_rank(comm, rank):
    with pytest.raises(KeyError, match="no key 37") as caught:
        pfarm.map(failing, range(100), technique="ss")
    cause = caught.value.__cause__
    assert isinstance(cause, pfarm.RemoteTraceback)
    assert "failing" in str(cause) and "KeyError" in str(cause)
    assert any("task 37" in note for note in caught.value.__notes__)
    # the farm is over on every rank: the next one works
    assert pfarm.map(lambda i: i, range(10)) == (list(range(10)) if rank == 0 else None)


def test_unpicklable_exception_is_a_task_error(comm, rank):
    def raise_unpicklable(i):
        if i == 5:
            raise Unpicklable("holds a lock")
        return i
    with pytest.raises(pfarm.TaskError, match="holds a lock") as caught:
        pfarm.map(raise_unpicklable, range(10))
    assert caught.value.task == 5 and "Unpicklable" in caught.value.remote_traceback


def test_farmer_computes_exception(comm, rank):
    with pytest.raises(ZeroDivisionError):
        pfarm.map(lambda i: 1 / (i - 123), range(400), farmer_computes=True, technique="ss")


def test_imap_unordered_every_result_once(comm, rank):
    it = pfarm.imap_unordered(lambda i: i * 2, range(20000), technique="gss")
    pairs = list(it)
    if rank == 0:
        assert sorted(pairs) == [(i, i * 2) for i in range(20000)]
        assert it.report.tasks == 20000
    else:
        assert pairs == []


def test_imap_unordered_numpy_and_list(comm, rank):
    rows = np.arange(10.0).reshape(5, 2)
    got = dict(pfarm.imap_unordered(lambda r: float(r.sum()), rows))
    named = dict(pfarm.imap_unordered(str.upper, ["a", "b", "c"]))
    if rank == 0:
        assert got == {i: float(rows[i].sum()) for i in range(5)}
        assert named == {0: "A", 1: "B", 2: "C"}


def test_imap_unordered_exception_after_results(comm, rank):
    seen = []
    with pytest.raises(KeyError, match="no key 37"):
        for i, value in pfarm.imap_unordered(failing, range(100), technique="ss"):
            seen.append(i)
    assert 37 not in seen


def test_imap_unordered_close_stops_every_rank(comm, rank):
    it = pfarm.imap_unordered(lambda i: i, range(10 ** 6), technique="ss")
    for n, _ in enumerate(it):
        if n == 100:
            break
    it.close()  # the other ranks' calls return (they return at once when they are workers)
    assert pfarm.map(lambda i: i, range(10)) == (list(range(10)) if rank == 0 else None)


def test_imap_unordered_close_hierarchical(comm, rank):
    """The hierarchical farm, rank 0 computing too (the default): closing stops the window running at once on every
    rank (its own worker finishes its chunk and is stopped like a master's), and no other window starts."""
    if comm.Get_size() < 4:
        pytest.skip("the hierarchical farm needs a supermaster, a master and workers: 4 ranks")
    it = pfarm.imap_unordered(lambda i: i, range(300000), farmer="hierarchical", masters=1, window=50000)
    for n, _ in enumerate(it):
        if n == 100:
            break
    it.close()
    assert len(it.reports) == 0
    assert pfarm.map(lambda i: i, range(10)) == (list(range(10)) if rank == 0 else None)


def test_imap_unordered_memory_does_not_grow_with_tasks(comm, rank):
    """Rank 0 keeps only what the caller keeps: its peak memory is the same for 10^5 and 10^6 tasks."""
    def drain(count):
        total = 0
        for _, value in pfarm.imap_unordered(lambda i: i, range(count), technique="gss"):
            total += value
        return total
    drain(10 ** 5)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    total = drain(10 ** 6)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    if rank == 0:
        assert total == sum(range(10 ** 6))
        assert grown_kib < 16 * 1024, f"rank 0's peak memory grew by {grown_kib} KiB from 10^5 to 10^6 tasks"


def shared_path(comm, name):
    """A file name in the working directory, rank 0's (this run's own: the process id in it), on every rank."""
    import os
    return comm.bcast(os.path.abspath(f"{name}-{comm.Get_size()}-{os.getpid()}"), root=0)


def test_journal_resumes(comm, rank):
    import os
    journal = shared_path(comm, "map.journal")
    first, report1 = pfarm.map(lambda i: {"v": i}, range(200), journal=journal, journal_key="k", report=True)
    again, report2 = pfarm.map(lambda i: {"v": i}, range(200), journal=journal, journal_key="k", report=True)
    with pytest.raises(ValueError, match="journal"):
        pfarm.map(lambda i: i, range(200), journal=journal, journal_key="another")
    if rank == 0:
        assert first == again == [{"v": i} for i in range(200)]
        assert report1.journaled == 0 and report2.journaled == 200
        os.remove(journal)


def test_trace(comm, rank):
    import os
    path = shared_path(comm, "map-trace") + ".csv"
    results, report = pfarm.map(lambda i: i, range(300), trace=path, report=True)
    if rank == 0:
        assert results == list(range(300))
        assert report.trace and sum(c.count for c in report.trace) >= 300
        assert os.path.getsize(path) > 0
        os.remove(path)


def test_retry_runs_a_flaky_task_again(comm, rank, tmp_path_factory):
    """on_task_error="retry": tasks failing on their first run anywhere (a marker file each) still give every result."""
    import os
    folder = comm.bcast(str(tmp_path_factory.mktemp("flaky")) if rank == 0 else None, root=0)

    def flaky(i):
        if i % 10 == 3:
            try:
                os.close(os.open(os.path.join(folder, str(i)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return i * 2
            raise RuntimeError(f"flaky {i}")
        return i * 2

    results, report = pfarm.map(flaky, range(100), report=True, on_task_error="retry")
    if rank == 0:
        assert results == [i * 2 for i in range(100)]
        assert report.task_errors == 10 and report.retried_tasks == 10


def test_retry_raises_the_last_error_once_attempts_are_spent(comm, rank):
    def bad_at_7(i):
        if i == 7:
            raise ValueError("task 7 is bad")
        return i

    with pytest.raises(ValueError, match="task 7 is bad"):
        pfarm.map(bad_at_7, range(20), on_task_error="retry=2")
