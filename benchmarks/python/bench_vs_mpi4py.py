"""pfarm from Python beside mpi4py.futures, in one run (docs/python.md "Figures"): the per-task cost of an empty
function, the makespan of a fine-grained sweep whose task times vary 100:1 (the costly tasks in one block), and
rank 0's peak memory under imap_unordered at 10^5 and 10^6 tasks. Prints each figure and the ratios the targets
name; --json writes them.

    mpiexec -n 2 /usr/bin/python3 benchmarks/python/bench_vs_mpi4py.py     (PYTHONPATH=build/release/python)

Each figure is the median of --repeat runs, the runs of every configuration interleaved (on a shared machine the
load changes between runs). Tasks spin on time.perf_counter() (CPU-bound, as a computation is). mpi4py.futures runs as MPICommExecutor on the
same ranks: rank 0 its manager, the others its workers. pfarm runs with its Python defaults (every rank computes,
reclaim on, technique multi) unless --technique is given.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

from mpi4py import MPI
from mpi4py.futures import MPICommExecutor

import pfarm

COMM = MPI.COMM_WORLD
RANK = COMM.Get_rank()

# The sweep's task costs (seconds), set by main() on every rank before any farm: a module global, so that the
# function travels to mpi4py's workers by reference and reads the same table there.
COSTS = []


def empty(_):
    return None


def identity(i):
    return i


def spin(i):
    end = time.perf_counter() + COSTS[i]
    while time.perf_counter() < end:
        pass
    return None


def timed(run):
    """Seconds from a barrier before `run` to a barrier after it (the farm done on every rank)."""
    COMM.Barrier()
    start = time.perf_counter()
    run()
    COMM.Barrier()
    return COMM.bcast(time.perf_counter() - start, root=0)


def mpi4py_map(fn, count, chunksize):
    with MPICommExecutor(COMM) as ex:
        if ex is not None:
            for _ in ex.map(fn, range(count), chunksize=chunksize):
                pass


def pfarm_executor_map(fn, count, options):
    with pfarm.Executor(COMM, **options) as ex:
        if ex is not None:
            for _ in ex.map(fn, range(count)):
                pass


def medians(repeat, runs):
    """{name: median of repeat calls of runs[name]()}, the calls of every name interleaved."""
    seen = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            seen[name].append(run())
    return {name: statistics.median(values) for name, values in seen.items()}


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def imap_memory(counts, options):
    """Rank 0's peak RSS after draining imap_unordered over each count, in order (the peak only grows)."""
    peaks = {}
    for count in counts:
        total = 0
        start = time.perf_counter()
        for _, value in pfarm.imap_unordered(identity, range(count), **options):
            total += value
        seconds = time.perf_counter() - start
        if RANK == 0 and total != count * (count - 1) // 2:
            raise SystemExit(f"imap_unordered over {count} tasks summed {total}")
        peaks[count] = COMM.bcast((peak_mib(), seconds), root=0)
    return peaks


def sweep_costs(count, block, cheap, ratio):
    costly = count // 10
    first = {"start": 0, "middle": (count - costly) // 2, "end": count - costly}[block]
    return [cheap * ratio if first <= i < first + costly else cheap for i in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100000, help="empty-function tasks (pfarm, mpi4py chunksize 16)")
    parser.add_argument("--cs1-tasks", type=int, default=10000,
                        help="empty-function tasks for mpi4py at chunksize=1 (about 0.3 ms each)")
    parser.add_argument("--sweep-tasks", type=int, default=20000, help="tasks of the 100:1 sweep")
    parser.add_argument("--cheap", type=float, default=1e-5, help="a cheap sweep task's seconds (costly: 100x)")
    parser.add_argument("--block", choices=["start", "middle", "end"], default="middle",
                        help="where the costly tenth of the sweep's tasks lies")
    parser.add_argument("--imap-counts", default="100000,1000000", help="task counts for the memory figure")
    parser.add_argument("--technique", help="pfarm's technique (default: pfarm's default)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each timing, interleaved; the median is kept")
    parser.add_argument("--json", help="write the figures here (rank 0)")
    args = parser.parse_args()
    options = {"technique": args.technique} if args.technique else {}
    figures = {"ranks": COMM.Get_size(), "options": options, "load_before": os.getloadavg()}

    def say(text):
        if RANK == 0:
            print(text, flush=True)

    say(f"pfarm vs mpi4py.futures on {COMM.Get_size()} ranks, load average {figures['load_before'][0]:.2f}")

    # Memory first, while rank 0's peak is still that of the interpreter and the imports.
    counts = [int(c) for c in args.imap_counts.split(",")]
    figures["imap_peak_mib"] = {}
    for count, (peak, seconds) in imap_memory(counts, options).items():
        figures["imap_peak_mib"][count] = peak
        say(f"imap_unordered  {count:>8} tasks: rank 0 peak RSS {peak:7.1f} MiB ({seconds:.2f} s)")
    peaks = [figures["imap_peak_mib"][c] for c in counts]
    say(f"  peak growth from {counts[0]} to {counts[-1]} tasks: {peaks[-1] - peaks[0]:.1f} MiB")

    # Per-task cost of an empty function.
    n = args.tasks
    cost = medians(args.repeat, {
        "pfarm.map": lambda: timed(lambda: pfarm.map(empty, range(n), **options)) / n,
        "pfarm.Executor.map": lambda: timed(lambda: pfarm_executor_map(empty, n, options)) / n,
        "mpi4py chunksize=1": lambda: timed(lambda: mpi4py_map(empty, args.cs1_tasks, 1)) / args.cs1_tasks,
        "mpi4py chunksize=16": lambda: timed(lambda: mpi4py_map(empty, n, 16)) / n,
    })
    figures["per_task_us"] = {k: v * 1e6 for k, v in cost.items()}
    say(f"empty function ({n} tasks; mpi4py chunksize=1: {args.cs1_tasks}), per task, median of {args.repeat}:")
    for name, seconds in cost.items():
        say(f"  {name:<22} {seconds * 1e6:9.2f} us")
    for ours in ("pfarm.map", "pfarm.Executor.map"):
        r1 = cost[ours] / cost["mpi4py chunksize=1"]
        r16 = cost[ours] / cost["mpi4py chunksize=16"]
        figures[f"ratio {ours} / mpi4py cs1"] = r1
        figures[f"ratio {ours} / mpi4py cs16"] = r16
        say(f"  {ours}: {r1:.4f} of chunksize=1 (target <= 0.02), {r16:.3f} of chunksize=16 (target <= 0.25)")

    # The 100:1 sweep.
    global COSTS
    COSTS = sweep_costs(args.sweep_tasks, args.block, args.cheap, 100)
    work = sum(COSTS)
    workers = COMM.Get_size() - 1  # mpi4py's: every rank but the manager
    runs = {
        "pfarm.map": lambda: timed(lambda: pfarm.map(spin, range(args.sweep_tasks), **options)),
        "pfarm.Executor.map": lambda: timed(lambda: pfarm_executor_map(spin, args.sweep_tasks, options)),
    }
    for chunksize in (1, 4, 16, 64):
        runs[f"mpi4py chunksize={chunksize}"] = lambda c=chunksize: timed(lambda: mpi4py_map(spin, args.sweep_tasks, c))
    span = medians(args.repeat, runs)
    figures["sweep_seconds"] = span
    figures["sweep_work_seconds"] = work
    say(f"sweep: {args.sweep_tasks} tasks of {args.cheap * 1e6:.0f} us and {args.cheap * 100e6:.0f} us (the costly "
        f"tenth at the {args.block}), {work:.2f} s of work; makespan, median of {args.repeat}:")
    for name, seconds in span.items():
        say(f"  {name:<22} {seconds:8.3f} s")
    best = min((v, k) for k, v in span.items() if k.startswith("mpi4py"))
    for ours in ("pfarm.map", "pfarm.Executor.map"):
        rb = span[ours] / best[0]
        r1 = span[ours] / span["mpi4py chunksize=1"]
        figures[f"ratio sweep {ours} / mpi4py best"] = rb
        figures[f"ratio sweep {ours} / mpi4py cs1"] = r1
        say(f"  {ours}: {rb:.3f} of mpi4py's best ({best[1]}; target <= 0.8), {r1:.3f} of chunksize=1 "
            f"(target <= 0.25)")
    say(f"  (mpi4py has {workers} worker(s) here: work / workers = {work / max(workers, 1):.2f} s)")
    figures["load_after"] = os.getloadavg()
    say(f"load average after: {figures['load_after'][0]:.2f}")
    if args.json and RANK == 0:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
