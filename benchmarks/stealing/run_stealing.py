#!/usr/bin/env python3
"""Work-stealing study, by simulation (pfarm-sim --farmer stealing; the MPI farm has no stealing mode).

Two experiments, printed as Markdown tables (docs/measurements/2026-12-03-work-stealing-sim.md has the figures):

  scale    8,192 workers, 200,000 tasks of mean cost 1 ms, the Mandelbrot profile and a uniform loop, on the scaling
           study's platform (benchmarks/scaling/run_scaling.py: 0.82 us per answer at every server, 0.625 us one way;
           atomics 0.17 us each at a window, 0.086 us one way, pfarm-sim's defaults): work stealing with random and
           tree victims against the decentralised farm and 16 masters. The target: random stealing within 10% of the
           fluid bound on the Mandelbrot profile. Then random stealing with 2 and 5 times the tasks at the same total
           work (the task time divided alike): how much of the gap is the tail of whole columns.
  seed002  the shape of seed 002's section 6 (Chronopoulos et al., "Scalable loop self-scheduling schemes for
           heterogeneous clusters"): p = 32 slaves, p/2 of virtual power 4, p/4 of 2, p/4 of 1 (task times 1, 2 and
           4 units), a Mandelbrot window of 4000 x 2000 to 10000 x 5000 (one task a column, a column's mean cost
           proportional to its rows: 2.5 us a row on a power-4 slave), dedicated and non-dedicated (a load forked
           at t = 0 on half of the slaves, the even ranks, halving their speed). DTSS (flat farmer, dtss with the
           powers as --weights; the run queues come from the simulated monitors), HDTSS (2 masters, dtss at both
           levels, seed 002's two extra computers), TreeS (stealing, tree victims, ss claims) and random stealing.
           TreeS's tree is laid out by power, as seed 002 section 4.1 says the topology is: the binary tree's
           internal ranks (0..15: the helped ones) are the slow slaves and its leaves (16..31: the helpers) the
           fast ones; `--order fast-first` lays it out the other way. The platform is assumed, not measured: a 2005
           LAN, 100 us one way and 20 us per answer at every server and per atomic at a window.

Everything is deterministic (random victims: --victim-seed 1, the default).

  python3 benchmarks/stealing/run_stealing.py [--sim build/release/bin/pfarm-sim] [--only scale|seed002]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# the scaling study's platform (benchmarks/scaling/run_scaling.py)
SCALE_WORKERS = 8192
SCALE_TASKS = 200_000
SCALE_PLATFORM = {"task_times": [1e-3] * SCALE_WORKERS, "overhead": 1 / 1.22e6, "latency": 0.625e-6,
                  "master_overhead": 1 / 1.22e6, "supermaster_overhead": 1 / 1.22e6, "master_latency": 0.625e-6}

# seed 002 section 6
SEED_SLAVES = 32
SEED_ROWS = [2000, 3000, 4000, 5000]  # windows 4000 x 2000 .. 10000 x 5000: columns = 2 x rows
SEED_ROW_COST = 2.5e-6                # seconds a row on a slave of power 4
SEED_LATENCY = 1e-4
SEED_SERVICE = 2e-5


def run(sim, platform, args):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(platform, f)
        path = f.name
    try:
        cmd = [sim, "--platform", path, "--json"] + args
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
        return json.loads(proc.stdout)
    finally:
        os.unlink(path)


def scale(sim):
    modes = [
        ("stealing, random victims, ss", ["--technique", "ss", "--farmer", "stealing"]),
        ("stealing, random victims, gss", ["--technique", "gss", "--farmer", "stealing"]),
        ("stealing, tree victims (TreeS), ss", ["--technique", "ss", "--farmer", "stealing", "--victims", "tree"]),
        ("decentralised, ss", ["--technique", "ss", "--farmer", "decentralised"]),
        ("16 masters, ss", ["--technique", "ss", "--farmer", "hierarchical", "--masters", "16"]),
        ("16 masters, af", ["--technique", "af", "--farmer", "hierarchical", "--masters", "16"]),
    ]
    print(f"### {SCALE_WORKERS} workers, {SCALE_TASKS} tasks of mean cost 1 ms\n")
    print("| loop | farm | makespan (ms) | bound (ms) | ratio | chunks | steals | steal attempts | lost swaps | "
          "termination messages |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for shape in ["mandelbrot", "uniform"]:
        for name, args in modes:
            d = run(sim, SCALE_PLATFORM, ["--tasks", str(SCALE_TASKS), "--shape", shape] + args)
            stealing = "steals" in d
            cell = lambda key: str(d[key]) if stealing else "-"
            print(f"| {shape} | {name} | {d['makespan'] * 1e3:.2f} | {d['lower_bound'] * 1e3:.2f} | {d['ratio']:.3f} | "
                  f"{d['chunks']} | {cell('steals')} | {cell('steal_attempts')} | "
                  f"{d['lost_swaps'] if stealing else '-'} | {cell('termination_messages')} |", flush=True)
    print()
    # the tail: with about 24 tasks a worker, the last tasks stolen are whole Mandelbrot columns
    print(f"### Random stealing (ss), Mandelbrot, {SCALE_WORKERS} workers, more tasks of the same total work\n")
    print("| tasks | tasks per worker | ratio | steals | steal attempts |")
    print("| --- | --- | --- | --- | --- |")
    for tasks in [SCALE_TASKS, 2 * SCALE_TASKS, 5 * SCALE_TASKS]:
        platform = dict(SCALE_PLATFORM, task_times=[1e-3 * SCALE_TASKS / tasks] * SCALE_WORKERS)
        d = run(sim, platform, ["--tasks", str(tasks), "--shape", "mandelbrot", "--technique", "ss", "--farmer", "stealing"])
        print(f"| {tasks} | {tasks / SCALE_WORKERS:.1f} | {d['ratio']:.3f} | {d['steals']} | {d['steal_attempts']} |",
              flush=True)
    print()


def seed002(sim, order):
    p = SEED_SLAVES
    if order == "by-power":  # slow ranks inside the tree, fast ones at its leaves
        powers = [1] * (p // 4) + [2] * (p // 4) + [4] * (p // 2)
    else:
        powers = [4] * (p // 2) + [2] * (p // 4) + [1] * (p // 4)
    weights = ",".join(str(v) for v in powers)
    modes = [
        ("DTSS", ["--technique", "dtss", "--weights", weights]),
        ("HDTSS (2 masters)", ["--technique", "dtss", "--weights", weights, "--farmer", "hierarchical", "--masters", "2"]),
        ("TreeS", ["--technique", "ss", "--farmer", "stealing", "--victims", "tree"]),
        ("random stealing", ["--technique", "ss", "--farmer", "stealing"]),
    ]
    print(f"### Seed 002 section 6: {p} slaves (powers 4 x {p // 2}, 2 x {p // 4}, 1 x {p // 4}; order {order})\n")
    print("| window | runs | " + " | ".join(f"{name} (s, ratio)" for name, _ in modes) + " | TreeS / DTSS | TreeS / HDTSS |")
    print("| --- | --- | " + " | ".join("---" for _ in modes) + " | --- | --- |")
    for rows in SEED_ROWS:
        columns = 2 * rows
        for dedicated in [True, False]:
            platform = {"task_times": [SEED_ROW_COST * rows * 4 / v for v in powers], "overhead": SEED_SERVICE,
                        "latency": SEED_LATENCY, "master_overhead": SEED_SERVICE, "supermaster_overhead": SEED_SERVICE,
                        "master_latency": SEED_LATENCY, "atomic_overhead": SEED_SERVICE, "atomic_latency": SEED_LATENCY}
            if not dedicated:
                platform["load_changes"] = [{"worker": j, "time": 0.0, "factor": 2.0} for j in range(0, p, 2)]
            results = [run(sim, platform, ["--tasks", str(columns), "--shape", "mandelbrot"] + args) for _, args in modes]
            cells = " | ".join(f"{d['makespan']:.3f} ({d['ratio']:.3f})" for d in results)
            dtss, hdtss, trees = results[0]["makespan"], results[1]["makespan"], results[2]["makespan"]
            print(f"| {columns} x {rows} | {'dedicated' if dedicated else 'non-dedicated'} | {cells} | "
                  f"{trees / dtss:.2f} | {trees / hdtss:.2f} |", flush=True)
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sim", default=os.path.join(REPO, "build", "release", "bin", "pfarm-sim"))
    parser.add_argument("--only", choices=["scale", "seed002"])
    parser.add_argument("--order", choices=["by-power", "fast-first"], default="by-power",
                        help="seed002: where the fast slaves sit in the tree (default: at its leaves)")
    args = parser.parse_args()
    if not os.path.exists(args.sim):
        sys.exit(f"run_stealing.py: no pfarm-sim at {args.sim} (build it, or pass --sim)")
    if args.only in (None, "seed002"):
        seed002(args.sim, args.order)
    if args.only in (None, "scale"):
        scale(args.sim)


if __name__ == "__main__":
    main()
