"""pfarm.Executor: a drop-in for mpi4py.futures.MPICommExecutor whose chunks a pfarm technique sizes.

Every rank enters ``with pfarm.Executor(comm, **options) as ex:``. Rank 0 gets the executor; the other ranks serve
inside __enter__ until rank 0 leaves the ``with``, then get None. On rank 0 one thread (the dispatcher) runs the
farms: it takes every call queued since the last farm (maps and submits alike, with one chunksize), broadcasts them
to the other ranks on a duplicate of `comm` as one pickled command (the functions by reference, as mpi4py.futures
sends them, and their arguments), and runs one farm over all their tasks; results reach the futures and map
iterators chunk by chunk. Leaving the ``with`` broadcasts a stop command. docs/python.md "The executor".
"""

import bisect
import collections
import concurrent.futures
import pickle
import threading
import time

from mpi4py import MPI

from . import _errors
from . import _farm
from . import _pfarm


class _Future:
    """Where a submitted call's result goes."""

    def __init__(self, future):
        self.future = future
        self.cancelled = False

    def start(self):
        return self.future.set_running_or_notify_cancel()

    def set(self, slot, value):
        self.future.set_result(value)

    def fail(self, slot, exc):
        self.future.set_exception(exc)


class _MapState:
    """Where a map's results go, read by its iterator in order or as they arrive."""

    def __init__(self, count):
        self.results = [None] * count
        self.done = bytearray(count)
        self.errors = {}
        self.arrived = collections.deque()
        self.cond = threading.Condition()
        self.cancelled = False

    def start(self):
        return not self.cancelled

    def set(self, slot, value):
        self.set_many([slot], [value])

    def set_many(self, slots, values):
        """Results of several calls at once (one lock, one wake-up of the reader per chunk's batch)."""
        with self.cond:
            for slot, value in zip(slots, values):
                self.results[slot] = value
                self.done[slot] = 1
            self.arrived.extend(slots)
            self.cond.notify_all()

    def fail(self, slot, exc):
        with self.cond:
            self.errors[slot] = exc
            self.done[slot] = 1
            self.arrived.append(slot)
            self.cond.notify_all()

    def iterate(self, timeout, ordered):
        """The results, taking under the lock every one that is ready, then yielding them outside it."""
        end = None if timeout is None else time.monotonic() + timeout
        count = len(self.results)
        k = 0
        try:
            while k < count:
                with self.cond:
                    while not (self.done[k] if ordered else self.arrived):
                        left = None if end is None else end - time.monotonic()
                        if left is not None and left <= 0:
                            raise concurrent.futures.TimeoutError()
                        self.cond.wait(left)
                    ready = []
                    if ordered:
                        j = k
                        while j < count and self.done[j]:
                            ready.append((self.results[j], self.errors.pop(j, None)))
                            self.results[j] = None
                            j += 1
                    else:
                        while self.arrived:
                            slot = self.arrived.popleft()
                            ready.append((self.results[slot], self.errors.pop(slot, None)))
                            self.results[slot] = None
                for value, exc in ready:
                    k += 1
                    if exc is not None:
                        raise exc
                    yield value
        finally:
            self.cancelled = True  # calls not dispatched yet are dropped


class _Job:
    """Calls of one function: each (owner, slot, args); a farm runs a list of jobs as one list of tasks."""

    def __init__(self, fn, kwargs, calls, chunksize, started=False):
        self.fn, self.kwargs, self.calls, self.chunksize = fn, kwargs, calls, chunksize
        self.started = started  # its futures are running already (calls queued again after a failed farm)


class _Tasks:
    """Task i of a farm: the call at position i of the batch's jobs (every rank builds it from the command)."""

    def __init__(self, jobs):
        self.jobs = jobs  # (fn, kwargs, [args, ...])
        self.offsets = []
        total = 0
        for job in jobs:
            self.offsets.append(total)
            total += len(job[2])
        self.count = total

    def __call__(self, i):
        j = bisect.bisect_right(self.offsets, i) - 1
        fn, kwargs, args = self.jobs[j]
        return fn(*args[i - self.offsets[j]], **kwargs) if kwargs else fn(*args[i - self.offsets[j]])


class _Unloadable:
    """A job that does not unpickle on this rank (its function's module is not importable here): each of its tasks
    raises that error, which fails the farm and reaches the call's future."""

    def __init__(self, exc):
        self.exc = exc

    def __call__(self, *args, **kwargs):
        raise self.exc


def _tasks_of(blobs):
    jobs = []
    for blob, count in blobs:
        try:
            jobs.append(pickle.loads(blob))
        except Exception as e:
            jobs.append((_Unloadable(e), {}, [()] * count))
    return _Tasks(jobs)


class Executor:
    """``with pfarm.Executor(comm=None, root=0, **options) as ex:``: ex is the executor on rank 0, None elsewhere
    (those ranks serve inside the ``with`` statement until rank 0 leaves it). `options`: the farm's options by their
    C++ names (pfarm.OPTIONS), used for every farm. ``ex.last_report`` is the pfarm.Report of the last farm."""

    def __init__(self, comm=None, root=0, **options):
        self._comm = _farm.communicator(comm)
        if root != 0:
            raise ValueError(f"root: is {root}; pfarm's farmer is rank 0, expected 0")
        _pfarm.check_options(options)
        self._options, self._schedule = _farm.split_options(options)
        self._options.pop("replicated_input", None)  # tasks travel in the command: only indices travel anyway
        self._last_report = None
        self._busy = False  # a batch taken and not finished yet
        self._pending = collections.deque()
        self._cond = threading.Condition()
        self._shutdown = False
        self._thread = None
        self._channel = None

    # --- every rank --------------------------------------------------------------------------------------------
    def __enter__(self):
        self._channel = self._comm.Dup()
        if self._channel.Get_rank() != 0:
            try:
                self._serve()
            finally:
                self._channel.Free()
            return None
        if MPI.Query_thread() < MPI.THREAD_SERIALIZED:
            self._channel.bcast(pickle.dumps(("stop",)), root=0)
            self._channel.Free()
            raise RuntimeError("pfarm.Executor needs MPI initialised with at least MPI_THREAD_SERIALIZED "
                               "(mpi4py's default, mpi4py.rc.thread_level = 'multiple')")
        self._thread = threading.Thread(target=self._dispatch, name="pfarm-executor", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self.shutdown(wait=True)
        return False

    def _serve(self):
        while True:
            command = pickle.loads(self._channel.bcast(None, root=0))
            if command[0] == "stop":
                return
            _, blobs, options = command
            tasks = _tasks_of(blobs)
            try:
                _farm.run(self._channel, tasks.count, options, tasks, None, None, None, None, index_only=True)
            except Exception:
                pass  # every rank's farm failed together; rank 0 hands the error to the futures

    # --- rank 0 -----------------------------------------------------------------------------------------------
    def submit(self, fn, /, *args, **kwargs):
        """Schedules fn(*args, **kwargs); returns a concurrent.futures.Future."""
        future = concurrent.futures.Future()
        self._queue(_Job(fn, kwargs, [(_Future(future), 0, args)], 1))
        return future

    def map(self, fn, *iterables, timeout=None, chunksize=1, unordered=False):
        """fn over the iterables' items (zip), as concurrent.futures' map: the items are read at once, the results
        come lazily, in order (or as they arrive with unordered=True), a result's exception raised when it is
        reached, TimeoutError when the next result is not there `timeout` seconds after the call. chunksize: the
        smallest chunk the technique hands out (min_chunk), 1 by default: the technique sizes chunks adaptively
        from the tasks' measured times, so it is a floor, not the chunk size."""
        if not isinstance(chunksize, int) or isinstance(chunksize, bool) or chunksize < 1:
            raise ValueError(f"chunksize: is {chunksize!r}; expected an integer >= 1")
        args = list(zip(*iterables))
        state = _MapState(len(args))
        if args:
            self._queue(_Job(fn, {}, [(state, k, a) for k, a in enumerate(args)], chunksize))
        return state.iterate(timeout, not unordered)

    def shutdown(self, wait=True, *, cancel_futures=False):
        """No new calls; with cancel_futures the queued ones are cancelled. The other ranks are released once the
        queued calls are done (at the latest when rank 0 leaves the ``with``)."""
        with self._cond:
            self._shutdown = True
            if cancel_futures:
                for job in self._pending:
                    for owner, _, _ in job.calls:
                        if isinstance(owner, _Future):
                            owner.future.cancel()
                        else:
                            owner.cancelled = True
            self._cond.notify_all()
        if wait and self._thread is not None:
            self._thread.join()
            self._thread = None
            self._channel.Free()

    @property
    def last_report(self):
        """The pfarm.Report of the last farm, once the calls made so far are done (it waits for them)."""
        with self._cond:
            while self._pending or self._busy:
                self._cond.wait()
            return self._last_report

    def _queue(self, job):
        with self._cond:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if self._thread is None:
                raise RuntimeError("pfarm.Executor: use it inside its with statement, on rank 0")
            self._pending.append(job)
            self._cond.notify_all()

    def _take(self):
        """The next batch: the queued jobs with the first one's chunksize, their calls not cancelled."""
        with self._cond:
            self._busy = False
            self._cond.notify_all()
            while not self._pending and not self._shutdown:
                self._cond.wait()
            if not self._pending:
                return None
            self._busy = True
            chunksize = self._pending[0].chunksize
            batch = []
            rest = collections.deque()
            while self._pending:
                job = self._pending.popleft()
                (batch if job.chunksize == chunksize else rest).append(job)
            self._pending = rest
        jobs = []
        for job in batch:
            calls = job.calls if job.started else [c for c in job.calls if c[0].start()]
            if calls:
                jobs.append(_Job(job.fn, job.kwargs, calls, job.chunksize, True))
        return jobs

    def _dispatch(self):
        try:
            while True:
                jobs = self._take()
                if jobs is None:
                    break
                if jobs:
                    self._farm(jobs)
        except BaseException as e:  # a bug here: every call waiting fails with it, no caller waits forever
            with self._cond:
                self._shutdown = True
                self._busy = False
                pending, self._pending = self._pending, collections.deque()
                self._cond.notify_all()
            for job in pending:
                for owner, slot, _ in job.calls:
                    if job.started or owner.start():
                        owner.fail(slot, e)
            raise
        finally:
            self._channel.bcast(pickle.dumps(("stop",)), root=0)

    def _farm(self, jobs):
        blobs, runnable = [], []
        for job in jobs:
            try:
                blob = pickle.dumps((job.fn, job.kwargs, [a for _, _, a in job.calls]), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:  # an unpicklable function or argument: those calls fail, the others run
                for owner, slot, _ in job.calls:
                    owner.fail(slot, e)
                continue
            blobs.append((blob, len(job.calls)))
            runnable.append(job)
        if not runnable:
            return
        routes = [(owner, slot) for job in runnable for owner, slot, _ in job.calls]
        delivered = bytearray(len(routes))
        options = dict(self._options)
        if runnable[0].chunksize > 1:
            options["min_chunk"] = max(options.get("min_chunk", 1), runnable[0].chunksize)
        self._channel.bcast(pickle.dumps(("farm", blobs, options), protocol=pickle.HIGHEST_PROTOCOL), root=0)
        if self._schedule is not None:
            options["schedule"] = self._schedule
        tasks = _tasks_of(blobs)

        def sink(first, objs):
            count = len(objs)
            delivered[first:first + count] = b"\x01" * count
            i = 0
            while i < count:  # a run of one map's calls goes in at once
                owner = routes[first + i][0]
                j = i + 1
                while j < count and routes[first + j][0] is owner:
                    j += 1
                if j - i > 1:
                    owner.set_many([routes[first + k][1] for k in range(i, j)], objs[i:j])
                else:
                    owner.set(routes[first + i][1], objs[i])
                i = j

        try:
            self._last_report = _farm.run(self._channel, len(routes), options, tasks, None, None, None, None,
                                         sink=sink, index_only=True, raw_task_errors=True)
        except _farm.TaskFailed as failure:
            owner, slot = routes[failure.task]
            delivered[failure.task] = 1
            owner.fail(slot, failure.exception)
            # The farm stopped: the calls whose results had not arrived run again, first.
            again = collections.defaultdict(list)
            for i, (job_index, call) in enumerate(_calls(runnable)):
                if not delivered[i]:
                    again[job_index].append(call)
            with self._cond:
                for job_index in sorted(again, reverse=True):
                    job = runnable[job_index]
                    self._pending.appendleft(_Job(job.fn, job.kwargs, again[job_index], job.chunksize, True))
        except BaseException as e:
            for i, (owner, slot) in enumerate(routes):
                if not delivered[i]:
                    owner.fail(slot, e)
            if not isinstance(e, Exception):
                raise


def _calls(jobs):
    for j, job in enumerate(jobs):
        for call in job.calls:
            yield j, call
