#!/usr/bin/env python3
"""Load and hygiene: peak resident memory of the MPI farm and of the simulator under many requests.

The MPI farm: pfarm-bench-load (benchmarks/load.cpp) under mpiexec, an index range of N tasks with technique ss (a
chunk of one task per request: N requests), each task writing 8 bytes; the farmer's peak resident set (VmHWM)
against its resident set once the caller's outputs are allocated, so "farm growth" is what the farm itself added.
Beside it the same N with `static` (one chunk per worker: almost no requests) and with 1- and 64-byte outputs: if
the farmer's memory grows with the outputs it holds and not with the requests, the ss and static growths are
alike and the peak moves with the output bytes.

The simulator: pfarm-sim --technique ss --tasks N --task-times 1,1,1 (N requests), its peak resident set from
wait4(2), beside static.

  python3 benchmarks/load/run_load.py [--build build/release] [--ranks 3]        # 10 k to 1 M (MPI), 100 k to 10 M (sim)
  python3 benchmarks/load/run_load.py --small ...                               # the ctest smoke test: 10 k, 300 k

Prints one table per part and, with --json FILE, writes every run's figures. Exits non-zero when a run fails, or
when at the largest size the requests cost the farmer or the simulator more than 1 MB plus 2 bytes per request
beyond what static costs (SLACK_MB, BYTES_PER_REQUEST).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

SIZES = {
    "full": {"mpi": [10_000, 100_000, 1_000_000], "sim": [100_000, 1_000_000, 10_000_000]},
    "small": {"mpi": [10_000, 300_000], "sim": [100_000, 1_000_000]},
}
# The check (memory grows with the outputs held, not with the requests): at the largest size, what ss adds
# beyond static (one chunk per worker) must stay under 1 MB (allocator and page noise) plus 2 bytes per request.
# (The report keeps chunk sizes as runs, chunk_sizes.hpp: a list of every chunk would be 16 bytes per request.)
SLACK_MB, BYTES_PER_REQUEST = 1.0, 2.0


def within(extra_mb, requests):
    return extra_mb <= SLACK_MB + BYTES_PER_REQUEST * requests / 2**20


def mpi_run(args, tasks, technique="ss", output_bytes=8):
    cmd = [args.mpiexec, "-n", str(args.ranks), "--oversubscribe", args.bench, "--tasks", str(tasks),
           "--technique", technique, "--output-bytes", str(output_bytes)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sim_run(args, tasks, technique="ss"):
    cmd = [args.sim, "--technique", technique, "--tasks", str(tasks), "--task-times", "1,1,1"]  # the summary: no
    # JSON document of every chunk in memory
    start = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak resident set
        seconds = time.monotonic() - start
        out.seek(0), err.seek(0)
        text, errors = out.read(), err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {os.waitstatus_to_exitcode(status)}\n{text}{errors}")
    return {"tasks": tasks, "technique": technique, "peak_rss_mb": usage.ru_maxrss / 1024.0, "seconds": seconds}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(REPO, "build", "release"))
    p.add_argument("--bench", help="pfarm-bench-load (default: BUILD/bin/pfarm-bench-load)")
    p.add_argument("--sim", help="pfarm-sim (default: BUILD/bin/pfarm-sim)")
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("--ranks", type=int, default=3)
    p.add_argument("--small", action="store_true", help="the ctest smoke test's sizes")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--json", help="write every run's figures here")
    args = p.parse_args()
    args.bench = args.bench or os.path.join(args.build, "bin", "pfarm-bench-load")
    args.sim = args.sim or os.path.join(args.build, "bin", "pfarm-sim")
    sizes = SIZES["small" if args.small else "full"]
    results = {"mpi": [], "sim": []}

    print(f"MPI farm: pfarm-bench-load on {args.ranks} ranks (farmer's peak resident set; growth = peak - resident "
          "with the outputs allocated)")
    print(f"{'tasks':>10} {'technique':>9} {'out B':>5} {'requests':>9} {'outputs MB':>10} {'peak MB':>8} "
          f"{'growth MB':>9} {'B/request':>9} {'req/s':>9}")
    runs = [(n, "ss", 8) for n in sizes["mpi"]]
    largest = sizes["mpi"][-1]
    runs += [(largest, "static", 8), (largest, "ss", 1), (largest, "ss", 64)]
    for tasks, technique, out_bytes in runs:
        r = mpi_run(args, tasks, technique, out_bytes)
        f = r["farmer"]
        results["mpi"].append(r)
        many = r["chunks"] >= 1000  # per request figures mean nothing for a handful of requests
        per = f"{f['bytes_per_request']:>9.1f}" if many else f"{'-':>9}"
        rate = f"{r['requests_per_s']:>9,.0f}" if many else f"{'-':>9}"
        print(f"{tasks:>10,} {technique:>9} {out_bytes:>5} {r['chunks']:>9,} {r['outputs_mb']:>10.1f} "
              f"{f['peak_rss_mb']:>8.1f} {f['farm_growth_mb']:>9.1f} {per} {rate}", flush=True)
    by = {(r["tasks"], r["technique"], r["output_bytes"]): r for r in results["mpi"]}
    ss, static = by[(largest, "ss", 8)], by[(largest, "static", 8)]
    per_request = (ss["farmer"]["farm_growth_mb"] - static["farmer"]["farm_growth_mb"]) * 2**20 / (ss["chunks"] - static["chunks"])
    print(f"farmer at {largest:,} tasks: ss ({ss['chunks']:,} requests) grows {ss['farmer']['farm_growth_mb']:.1f} MB, "
          f"static ({static['chunks']} requests) {static['farmer']['farm_growth_mb']:.1f} MB: "
          f"{per_request:.1f} bytes per request beyond the outputs")
    results["mpi_bytes_per_request"] = per_request
    failed = []
    if not within(ss["farmer"]["farm_growth_mb"] - static["farmer"]["farm_growth_mb"], ss["chunks"]):
        failed.append(f"the MPI farmer grew {per_request:.1f} bytes per request beyond static")
    workers = results["mpi"][-1]["workers"]
    if workers:
        print("workers' peak MB at the largest size: " + ", ".join(f"rank {w['rank']} {w['peak_rss_mb']:.1f}" for w in workers))

    print("\nsimulator: pfarm-sim --task-times 1,1,1 (peak resident set of the process)")
    print(f"{'tasks':>10} {'technique':>9} {'peak MB':>8} {'seconds':>8}")
    sim_runs = [(n, "ss") for n in sizes["sim"]] + [(sizes["sim"][-1], "static")]
    for tasks, technique in sim_runs:
        r = sim_run(args, tasks, technique)
        results["sim"].append(r)
        print(f"{tasks:>10,} {technique:>9} {r['peak_rss_mb']:>8.1f} {r['seconds']:>8.2f}", flush=True)

    sim_by = {(r["tasks"], r["technique"]): r for r in results["sim"]}
    top = sizes["sim"][-1]
    sim_per_request = (sim_by[(top, "ss")]["peak_rss_mb"] - sim_by[(top, "static")]["peak_rss_mb"]) * 2**20 / top
    print(f"simulator at {top:,} tasks: ss {sim_by[(top, 'ss')]['peak_rss_mb']:.1f} MB, static "
          f"{sim_by[(top, 'static')]['peak_rss_mb']:.1f} MB: {sim_per_request:.1f} bytes per request beyond the "
          "per-task costs (8 bytes a task, both)")
    results["sim_bytes_per_request"] = sim_per_request
    if not within(sim_by[(top, "ss")]["peak_rss_mb"] - sim_by[(top, "static")]["peak_rss_mb"], top):
        failed.append(f"the simulator grew {sim_per_request:.1f} bytes per request beyond static")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    for f in failed:
        print(f"FAILED: {f} (allowed: {SLACK_MB} MB + {BYTES_PER_REQUEST} bytes per request)", file=sys.stderr)
    if not failed:
        print(f"check: within {SLACK_MB} MB + {BYTES_PER_REQUEST} bytes per request beyond static, both")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"run_load.py: {e}", file=sys.stderr)
        sys.exit(1)
