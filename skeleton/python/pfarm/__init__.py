"""pfarm from Python: adaptive task farming over MPI (mpi4py), docs/python.md.

- pfarm.map(fn, tasks, **options): SPMD, every rank calls it; rank 0 gets the results in task order.
- pfarm.imap_unordered(fn, tasks, **options): SPMD; rank 0 iterates (index, result) as results arrive.
- pfarm.Executor(comm, **options): a drop-in for mpi4py.futures.MPICommExecutor (map, submit).
Options are the C++ farm_options' fields by their names (pfarm.OPTIONS): technique="multi" and its parameters
(min_chunk, factor, ...), farmer_computes, prefetch, reclaim, stragglers, farmer, masters, journal, trace, progress...
"""

from ._pfarm import Calibration, Chunk, Report, Schedule
from ._errors import FarmError, RemoteTraceback, TaskError
from ._farm import OPTIONS
from ._spmd import Results, imap_unordered, map
from ._executor import Executor

__all__ = ["map", "imap_unordered", "Executor", "Report", "Calibration", "Chunk", "Schedule", "Results",
           "TaskError", "FarmError", "RemoteTraceback", "OPTIONS"]
