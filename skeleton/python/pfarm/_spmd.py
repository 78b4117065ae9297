"""The SPMD calls: every rank calls pfarm.map or pfarm.imap_unordered with the same function; rank 0 gets the
results. Rank 0's tasks and options are the ones used (broadcast first, so a bad argument on rank 0 raises on every
rank instead of leaving the others waiting); each rank calls its own `fn`, so closures and lambdas work."""

import pickle
import queue
import threading

from mpi4py import MPI

from . import _errors
from . import _farm
from . import _pfarm

# imap_unordered: results pass from the farm's thread to the caller in batches (at once when the caller waits, else
# once 1,024 have come), at most _QUEUED batches at a time (the farm waits while the caller has not taken them).
_QUEUED = 8


def _agree(comm, tasks, options, out=None, out_dtype=None, out_shape=None, threaded=False):
    """Collective: rank 0's description of the farm on every rank, or rank 0's error raised on every rank."""
    rank = comm.Get_rank()
    shared, schedule = _farm.split_options(options)
    local = None
    message = None
    if rank == 0:
        try:
            _pfarm.check_options(options)
            if threaded and MPI.Query_thread() < MPI.THREAD_SERIALIZED:
                raise RuntimeError("imap_unordered needs MPI initialised with at least MPI_THREAD_SERIALIZED "
                                   "(mpi4py's default, mpi4py.rc.thread_level = 'multiple')")
            kind, count, payload, local = _farm.describe_tasks(tasks, shared.get("replicated_input", False))
            spec = _farm.out_spec(out, out_dtype, out_shape, count)
            message = pickle.dumps((None, kind, count, payload, spec, shared), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            try:
                message = pickle.dumps((e,), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                message = pickle.dumps((RuntimeError(f"{type(e).__name__}: {e}"),))
    message = pickle.loads(comm.bcast(message, root=0))
    if message[0] is not None:
        raise message[0]
    _, kind, count, payload, spec, shared = message
    replicated = kind == "rows" and shared.get("replicated_input", False)
    if replicated:  # every rank reads its own copy: it must have rank 0's shape and dtype
        if rank != 0:
            import numpy as np
            local = np.ascontiguousarray(tasks) if isinstance(tasks, np.ndarray) else None
        differs = local is None or local.shape != (count,) + payload[1] or local.dtype != payload[0]
        if comm.allreduce(1 if differs else 0, op=MPI.MAX):
            raise ValueError("tasks: with replicated_input=True every rank passes an array of rank 0's shape and dtype")
    elif "replicated_input" in shared:
        shared.pop("replicated_input")  # only indices travel anyway (see _farm)
    if schedule is not None and rank == 0:
        shared["schedule"] = schedule
    return kind, count, payload, local, spec, shared


def map(fn, tasks, *, comm=None, report=False, out=None, out_dtype=None, out_shape=None, **options):
    """Farms fn over tasks, collectively on every rank of `comm` (default COMM_WORLD).

    Rank 0 gets the list of results in task order (or the array `out`, with out=/out_dtype=/out_shape=), every other
    rank None; with report=True, (results, pfarm.Report). `tasks` (read on rank 0): any sequence, a range (no list is
    built), or a NumPy array (a task per row). `options`: the farm's options by their C++ names (pfarm.OPTIONS).
    A task that raises: its exception, raised on every rank."""
    comm = _farm.communicator(comm)
    rank = comm.Get_rank()
    kind, count, payload, local, spec, options = _agree(comm, tasks, options, out, out_dtype, out_shape)
    results = None
    if rank == 0:
        if spec is not None:
            if out is None:
                import numpy as np
                out = np.empty((count,) + spec[1], dtype=spec[0])
            results = out
        else:
            results = [None] * count
    if count == 0:
        rep = _pfarm.Report()
    else:
        rep = _farm.run(comm, count, options, fn, kind, payload, local, spec, out=out if spec is not None else None,
                        results=results if spec is None else None)
    return (results, rep) if report else results


class Results:
    """imap_unordered's iterator: (index, result) pairs on rank 0 as they arrive; empty on the other ranks.
    `reports` holds a pfarm.Report per window farmed so far (see imap_unordered), `report` the last one."""

    def __init__(self, pairs=None):
        self._pairs = pairs if pairs is not None else iter(())
        self.reports = []

    @property
    def report(self):
        return self.reports[-1] if self.reports else None

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._pairs)

    def close(self):
        """Stops the farm on every rank (the other ranks' calls return) and drops the results not read yet."""
        close = getattr(self._pairs, "close", None)
        if close is not None:
            close()


def imap_unordered(fn, tasks, *, comm=None, window=65536, **options):
    """Farms fn over tasks, collectively; rank 0 gets an iterator of (index, result) in the order results arrive,
    the other ranks an empty one once the farm is over.

    Rank 0 holds only what the caller has not read yet: the tasks are farmed in windows of `window` tasks, one farm
    each (a chunk's results travel whole, and a technique's first chunks grow with the tasks it is given), with one
    pfarm.Schedule across the windows, so that a technique that calibrates does so once; results pass to the caller
    in batches (about 1,024 results, fewer when the caller is waiting), at most 8 batches waiting, and the farm
    waits while they wait. A task that raises:
    rank 0 raises its exception when the iterator reaches it (after the results that arrived before), the other
    ranks at once. Closing the iterator early (close(), or dropping it) stops the farm on every rank."""
    comm = _farm.communicator(comm)
    rank = comm.Get_rank()
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise ValueError(f"window: is {window!r}; expected an integer >= 1")
    if options.get("journal"):
        raise ValueError("journal: imap_unordered farms its tasks in windows, one farm each, which one journal "
                         "cannot resume; use pfarm.map")
    kind, count, payload, local, spec, options = _agree(comm, tasks, options, threaded=True)
    if "schedule" not in options and options.get("farmer", "flat") != "hierarchical":
        options["schedule"] = _pfarm.Schedule()  # rank 0's is the one read
    windows = [(first, min(window, count - first)) for first in range(0, count, window)]
    results = Results()
    if count == 0:
        results.reports.append(_pfarm.Report())
        return results
    if rank != 0:
        try:
            for first, size in windows:
                results.reports.append(_farm.run(comm, size, options, fn, kind, payload, local, None, offset=first))
                if not comm.bcast(None, root=0):  # rank 0: go on with the next window?
                    break
        except _errors.FarmError as e:
            if _errors.ITERATOR_CLOSED not in str(e):
                raise
        return results

    batches = queue.Queue(_QUEUED)
    closed = threading.Event()
    end = object()

    # Closing early stops the farm by failing it from rank 0's sink: every rank stops at once, in every mode.
    pending = []  # pieces (first, [result, ...]) not handed over yet: one batch when the caller waits or at 1,024
    held = [0]

    def flush():
        batch = list(pending)
        pending.clear()
        held[0] = 0
        while True:
            if closed.is_set():
                raise _errors.IteratorClosed()
            try:
                batches.put(batch, timeout=0.1)
                return
            except queue.Full:
                pass

    def sink(first, objs):
        pending.append((first, objs))
        held[0] += len(objs)
        if held[0] >= 1024 or batches.empty():
            flush()

    def farm():
        outcome = None
        try:
            for first, size in windows:
                results.reports.append(_farm.run(comm, size, options, fn, kind, payload, local, None, sink=sink,
                                                 offset=first))
                if pending:
                    try:
                        flush()
                    except _errors.IteratorClosed:  # closed meanwhile: the others learn it below
                        pass
                if not comm.bcast(not closed.is_set(), root=0):
                    break
        except BaseException as e:  # handed to the caller's thread
            outcome = e
        while not closed.is_set():
            try:
                batches.put([(end, outcome)], timeout=0.1)
                return
            except queue.Full:
                pass

    thread = threading.Thread(target=farm, name="pfarm-imap", daemon=True)
    thread.start()

    def pairs():
        try:
            while True:
                for first, objs in batches.get():
                    if first is end:
                        if objs is not None:
                            raise objs
                        return
                    for i, obj in enumerate(objs):
                        yield first + i, obj
        finally:
            if thread.is_alive():
                closed.set()
                while thread.is_alive():  # let a sink waiting on a full queue see `closed`
                    try:
                        batches.get(timeout=0.05)
                    except queue.Empty:
                        pass
            thread.join()

    results._pairs = pairs()
    return results
