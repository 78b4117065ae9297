"""One farm from Python: rank 0 describes the tasks and every rank runs the compiled engine on that description.

Shared by the SPMD calls (pfarm.map, pfarm.imap_unordered) and the Executor. How tasks travel (docs/python.md
"How tasks travel"):
- a ``range``: as the range itself (three numbers); task i's argument is computed where it runs, no list is built;
- a NumPy array (not of dtype object): a task per row, each row's bytes travel with its chunk (only rank 0 holds the
  array; with ``replicated_input=True`` every rank reads its own copy and only indices travel);
- any other sequence (or iterable): pickled once on rank 0 and broadcast whole, then only indices travel. One
  pickle and one broadcast cost far less than a pickle per task and a message per chunk of pickles, at the price of
  every rank holding the task list.
Results travel pickled (protocol 5), a chunk's results in one message, or as raw bytes in one NumPy array when the
caller declares their dtype and shape (``out=``, ``out_dtype=``/``out_shape=``).
"""

import sys

from mpi4py import MPI

from . import _errors
from . import _pfarm

OPTIONS = tuple(_pfarm.option_names())


def communicator(comm):
    """`comm` as an mpi4py intracommunicator (default COMM_WORLD); TypeError naming `comm` otherwise."""
    if comm is None:
        return MPI.COMM_WORLD
    if not isinstance(comm, MPI.Intracomm):
        raise TypeError(f"comm: expected an mpi4py.MPI.Intracomm, got {type(comm).__name__}")
    if comm == MPI.COMM_NULL:
        raise ValueError("comm: is MPI.COMM_NULL")
    return comm


def _numpy():
    return sys.modules.get("numpy")


def describe_tasks(tasks, replicated_input):
    """Rank 0: (kind, count, payload, local) for `tasks`. kind is "range", "rows" (payload: (dtype, row shape);
    local: the contiguous array) or "items" (payload: the list)."""
    if isinstance(tasks, range):
        return "range", len(tasks), tasks, None
    np = _numpy()
    if np is not None and isinstance(tasks, np.ndarray) and tasks.dtype != object:
        if tasks.ndim == 0:
            raise ValueError("tasks: is a 0-dimensional array; expected an array with a task per row")
        rows = np.ascontiguousarray(tasks)
        return "rows", rows.shape[0], (rows.dtype, tuple(rows.shape[1:])), rows
    if isinstance(tasks, (str, bytes)):
        raise TypeError(f"tasks: expected a sequence of tasks, got {type(tasks).__name__}")
    try:
        items = tasks if isinstance(tasks, (list, tuple)) else list(tasks)
    except TypeError:
        raise TypeError(f"tasks: expected a sequence, a range or a NumPy array, got {type(tasks).__name__}") from None
    return "items", len(items), items, None


def out_spec(out, out_dtype, out_shape, count):
    """Rank 0: (dtype, shape) of each task's result array, or None (pickled results); checks `out`."""
    if out is None and out_dtype is None and out_shape is None:
        return None
    import numpy as np
    if out is not None:
        if out_dtype is not None or out_shape is not None:
            raise TypeError("out: give either out or out_dtype/out_shape, not both")
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out: expected a NumPy array, got {type(out).__name__}")
        if out.ndim < 1 or out.shape[0] != count:
            raise ValueError(f"out: has shape {out.shape}; expected ({count}, ...): one row per task")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out: must be a writeable C-contiguous array")
        if out.dtype.hasobject:
            raise ValueError("out: an array of objects; expected a numeric or structured dtype")
        return out.dtype, tuple(out.shape[1:])
    if out_dtype is None:
        raise TypeError("out_dtype: needed with out_shape")
    try:
        dtype = np.dtype(out_dtype)
    except TypeError as e:
        raise TypeError(f"out_dtype: {e}") from None
    if dtype.hasobject:
        raise ValueError("out_dtype: is object; expected a numeric or structured dtype")
    if out_shape is None:
        shape = ()
    elif isinstance(out_shape, int):
        shape = (out_shape,)
    else:
        shape = tuple(out_shape)
    if any(not isinstance(d, int) or d < 0 for d in shape):
        raise ValueError(f"out_shape: is {out_shape!r}; expected a tuple of sizes >= 0")
    return dtype, shape


class TaskFailed(Exception):
    """run(raw_task_errors=True): task `task` raised `exception` (rebuilt by task_exception)."""

    def __init__(self, task, exception):
        super().__init__(task, exception)
        self.task = task
        self.exception = exception


def run(comm, count, options, fn, kind, payload, local, spec, *, out=None, results=None, sink=None, star=False,
        index_only=False, raw_task_errors=False, offset=0):
    """Runs one farm collectively over the caller's tasks offset .. offset + count - 1. Raises the task's exception (task_exception; TaskFailed with its index under
    raw_task_errors), ValueError for a bad option (on every rank), FarmError otherwise."""
    kwargs = {}
    if kind == "rows":
        kwargs.update(rows=local, row_dtype=payload[0], row_shape=payload[1])
    elif not index_only:
        kwargs["items"] = payload
    if spec is not None:
        kwargs.update(out=out, out_dtype=spec[0], out_shape=spec[1])
    try:
        return _pfarm.farm(MPI._handleof(comm), count, offset, options, fn, star=star, results=results, sink=sink,
                           encode_error=_errors.encode_exception, **kwargs)
    except _pfarm.WorkerError as e:
        task, rank, message = e.args
        exc = _errors.task_exception(task, rank, message)
        if raw_task_errors:
            raise TaskFailed(task, exc) from None
        raise exc from exc.__cause__  # the remote traceback (from None would drop it)
    except _pfarm.FarmError as e:
        raise _errors.FarmError(str(e)) from None


def split_options(options):
    """(the options that travel to the other ranks, the schedule): a pfarm.Schedule is rank 0's alone."""
    shared = dict(options)
    schedule = shared.pop("schedule", None)
    return shared, schedule
