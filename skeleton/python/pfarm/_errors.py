"""pfarm's Python errors: how a task's exception travels as text through the engine and is raised again.

A task that raises fails the farm on every rank (the C++ engine's pfarm::worker_error, whose message is text).
encode_exception() writes that text on the rank where the task ran: a one-line summary, the traceback, and the
exception pickled (base64), each after a marker. task_exception() turns it back into the exception, of the same
type where it unpickles (else TaskError), with the remote traceback attached as its __cause__.
"""

import base64
import pickle
import traceback

_TRACEBACK = "\n--- pfarm remote traceback ---\n"
_PICKLED = "\n--- pfarm pickled exception ---\n"
# The engine carries at most 64 KiB of failure text: the traceback and the pickle are cut to fit, the pickle dropped
# when it would not fit whole (the exception is then a TaskError holding the summary and the traceback).
_MAX_SUMMARY = 2000
_MAX_TRACEBACK = 24000
_MAX_PICKLE = 32000

# Rank 0 stopped reading an imap_unordered iterator: the farm stops, and the other ranks return quietly.
ITERATOR_CLOSED = "pfarm: the results' iterator was closed on rank 0"


class TaskError(RuntimeError):
    """A task raised an exception that could not be pickled on its rank or unpickled here.

    `task` is the task's index, `rank` the rank it ran on, `remote_traceback` the traceback text there."""

    def __init__(self, message, task=None, rank=None, remote_traceback=""):
        super().__init__(message)
        self.task = task
        self.rank = rank
        self.remote_traceback = remote_traceback


class FarmError(RuntimeError):
    """The farm failed for a reason other than a task's exception or a bad option (an MPI error, a journal or
    trace that cannot be written, rank 0 failing to unpickle a result): raised on every rank."""


class RemoteTraceback(Exception):
    """The traceback of a task's exception on the rank where it ran (the re-raised exception's __cause__)."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text

    def __str__(self):
        return self.text


class IteratorClosed(Exception):
    """Raised inside rank 0's result sink when the caller closed an imap_unordered iterator."""


def encode_exception(exc):
    """The text a failed task's exception travels as (called by the compiled module, on the task's rank)."""
    if isinstance(exc, IteratorClosed):
        return ITERATOR_CLOSED
    summary = f"{type(exc).__name__}: {exc}"[:_MAX_SUMMARY]
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if len(text) > _MAX_TRACEBACK:
        text = "...\n" + text[-_MAX_TRACEBACK:]
    try:
        blob = base64.b64encode(pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)).decode("ascii")
    except Exception:  # an exception holding something unpicklable: TaskError on rank 0
        blob = ""
    if len(blob) > _MAX_PICKLE:
        blob = ""
    return summary + _TRACEBACK + text + _PICKLED + blob


def task_exception(task, rank, message):
    """The exception a failed task raised, rebuilt from the engine's message (see encode_exception)."""
    summary, _, rest = message.partition(_TRACEBACK)
    remote, _, blob = rest.partition(_PICKLED)
    exc = None
    if blob:
        try:
            exc = pickle.loads(base64.b64decode(blob))
        except Exception:
            exc = None
        if not isinstance(exc, BaseException):
            exc = None
    if exc is None:
        exc = TaskError(f"task {task} failed on rank {rank}: {summary}", task, rank, remote)
    else:
        try:
            exc.remote_traceback = remote
        except AttributeError:
            pass
    exc.__cause__ = RemoteTraceback(remote) if remote else None
    if hasattr(exc, "add_note"):
        exc.add_note(f"(raised by task {task} on rank {rank}; its traceback there is the cause above)")
    return exc
