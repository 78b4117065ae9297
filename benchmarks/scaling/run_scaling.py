#!/usr/bin/env python3
"""Scaling study: the flat farmer, the hierarchical one, the decentralised farm and work stealing, by simulation
(pfarm-sim).

The experiment shape of Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on large-scale
clusters" (section VI): 256 to 8,192 workers, a flat farmer, 2, 4, 8, 16 masters and the decentralised farm
(no farmer: every worker claims its chunks with an atomic on a window host), and work stealing with random victims
(no farmer and no shared counter: every rank owns an equal range, claims from its front with `ss` or `gss` chunks and,
once empty, steals half of another rank's remainder; docs/hierarchical.md "Work stealing"), a Mandelbrot
profile and a uniform loop of 200,000 tasks (the paper's 200K columns). Writes

  <out>/scaling.csv     workload,technique,workers,farmer,masters,makespan,lower_bound,ratio,farmer_requests,
                        master_messages,host_atomics
  <out>/scaling.md      the tables, and the targets at the largest size
  <out>/img/scaling.png the curves (gnuplot, scaling.gp beside this file)

The platform is this project's own measurements (docs/performance.md, xeon16, 16 ranks): a farmer (and a master,
and the supermaster: the same code) serves a request in 1 / 1.22 M s = 0.82 us (its measured request rate with
every rank asking); a message takes half the raw MPI round trip, 1.25 us / 2 = 0.625 us, at both levels (the
project has no inter-node measurement). The decentralised farm's window host serves an atomic in 0.17 us, one at
a time, and an atomic takes 0.086 us one way (pfarm-sim's defaults: the raw MPI_Fetch_and_op loop of
pfarm-bench-overhead (d), 5.83 M claims/s over 2 ranks on the development machine, docs/skeleton.md "Claim rate",
read as the host's limit); work stealing's windows (every rank's own, and the termination counters) serve atomics at
the same rate and latency. Tasks cost 1 ms on average (at 1.2 M requests/s one farmer keeps about 1,000 such workers
busy). Everything is deterministic.

Sizes:  default  256 .. 8,192 workers, 200,000 tasks; writes docs/ (a few minutes on 2 cores)
        --tiny   16 and 32 workers, 4,000 tasks, flat, 2, 4 masters, decentralised and stealing: the ctest smoke
                 test;
                 needs --out
"""

import argparse
import concurrent.futures
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

TASK_TIME = 1e-3              # seconds per unit task (the shapes have mean cost 1)
SERVICE = 1.0 / 1.22e6        # farmer / master / supermaster service time per answer (docs/performance.md)
LATENCY = 1.25e-6 / 2.0       # one-way message latency: half the raw MPI round trip at 16 ranks
ATOMIC_SERVICE = 0.17e-6      # the window host's time per atomic, one at a time (pfarm-bench-overhead (d))
ATOMIC_LATENCY = 0.086e-6     # one way between a worker and the window host (the same measurement)
TECHNIQUE = "ss"              # one task per request: the farm where the flat farmer saturates
STEALING_TECHNIQUES = ["ss", "gss"]  # the owners' claims under work stealing (gss: ceil(R / p) of the own range R)
WORKLOADS = ["uniform", "mandelbrot"]
SIZES = {
    "default": {"workers": [256, 512, 1024, 2048, 4096, 8192], "masters": [2, 4, 8, 16], "tasks": 200_000},
    "tiny": {"workers": [16, 32], "masters": [2, 4], "tasks": 4_000},
}
HEADER = ["workload", "technique", "workers", "farmer", "masters", "makespan", "lower_bound", "ratio",
          "farmer_requests", "master_messages", "host_atomics"]


def modes(size):
    """The curves: (farmer, masters, technique), the flat farmer first, then the masters, the decentralised farm and
    work stealing (random victims) with each of its claim rules."""
    return ([("flat", 0, TECHNIQUE)] + [("hierarchical", m, TECHNIQUE) for m in size["masters"]]
            + [("decentralised", 0, TECHNIQUE)] + [("stealing", 0, t) for t in STEALING_TECHNIQUES])


def platform_file(folder, workers):
    path = os.path.join(folder, f"platform{workers}.json")
    with open(path, "w") as f:
        json.dump({"task_times": [TASK_TIME] * workers, "overhead": SERVICE, "latency": LATENCY,
                   "master_overhead": SERVICE, "supermaster_overhead": SERVICE, "master_latency": LATENCY,
                   "atomic_overhead": ATOMIC_SERVICE, "atomic_latency": ATOMIC_LATENCY}, f)
    return path


def run_one(sim, platform, workload, workers, farmer, masters, technique, tasks):
    cmd = [sim, "--platform", platform, "--tasks", str(tasks), "--shape", workload, "--json",
           "--technique", technique, "--farmer", farmer]
    if masters:
        cmd += ["--masters", str(masters)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
    d = json.loads(proc.stdout)
    return {"workload": workload, "technique": technique, "workers": workers,
            "farmer": farmer, "masters": masters,
            "makespan": d["makespan"], "lower_bound": d["lower_bound"], "ratio": d["makespan"] / d["lower_bound"],
            "farmer_requests": d["farmer_requests"], "master_messages": d.get("master_messages", 0),
            "host_atomics": d.get("host_atomics", 0),
            "steals": d.get("steals", 0)}  # not in the CSV (its columns are the other farms'); in the Markdown


def check(rows, size):
    expected = len(WORKLOADS) * len(size["workers"]) * len(modes(size))
    if len(rows) != expected:
        raise SystemExit(f"run_scaling.py: {len(rows)} rows, expected {expected}")
    for r in rows:
        if not (r["ratio"] >= 1.0 - 1e-9):
            raise SystemExit(f"run_scaling.py: makespan below the fluid bound: {r}")
        if r["farmer"] == "decentralised" and r["host_atomics"] < size["tasks"]:  # ss: a claim per task at least
            raise SystemExit(f"run_scaling.py: fewer atomics than tasks: {r}")
        if r["farmer"] == "stealing" and (r["farmer_requests"] != 0 or r["master_messages"] != 0
                                          or (r["technique"] == "ss" and r["host_atomics"] < size["tasks"])):
            raise SystemExit(f"run_scaling.py: a farmer's messages, or fewer atomics than tasks, under stealing: {r}")


def label(mode):
    farmer, masters, technique = mode
    if farmer == "hierarchical":
        return f"{masters} masters"
    return f"stealing ({technique})" if farmer == "stealing" else farmer


def find(rows, workload, workers, mode):
    return next(r for r in rows if r["workload"] == workload and r["workers"] == workers
                and (r["farmer"], r["masters"], r["technique"]) == mode)


def count(r):
    """The bracketed figure of a cell: what the farm's busiest server did (or, under stealing, the steals)."""
    if r["farmer"] == "decentralised":
        return r["host_atomics"]
    return r["steals"] if r["farmer"] == "stealing" else r["farmer_requests"]


def markdown(rows, size, tasks):
    out = [f"Generated by `benchmarks/scaling/run_scaling.py` ({tasks:,} tasks of mean cost {TASK_TIME * 1e3:g} ms, "
           f"technique `{TECHNIQUE}`, service {SERVICE * 1e6:.2f} us per answer, latency "
           f"{LATENCY * 1e6:.3f} us one way at both levels; decentralised: {ATOMIC_SERVICE * 1e6:.2f} us per atomic "
           f"at the window host, {ATOMIC_LATENCY * 1e6:.3f} us one way; stealing: random victims, the owners "
           f"claiming `{'` or `'.join(STEALING_TECHNIQUES)}` chunks, atomics at the same cost at every window). "
           "Makespan over the fluid bound; in brackets the requests the flat farmer or the supermaster served, the "
           "atomics the window host served, or the successful steals.", ""]
    for w in WORKLOADS:
        out.append(f"### {w}")
        out.append("")
        out.append("| workers | " + " | ".join(label(m) for m in modes(size)) + " |")
        out.append("| --- |" + " --- |" * len(modes(size)))
        for p in size["workers"]:
            cells = []
            for m in modes(size):
                r = find(rows, w, p, m)
                cells.append(f"{r['ratio']:.3f} ({count(r):,})")
            out.append(f"| {p:,} | " + " | ".join(cells) + " |")
        out.append("")
    largest, most = size["workers"][-1], size["masters"][-1]
    out.append(f"### Targets at {largest:,} workers ({most} masters against the flat farmer; the decentralised farm "
               "and work stealing beside them)")
    out.append("")
    out.append("| workload | flat / bound | hierarchical / bound | flat / hierarchical | 4 times sooner? | "
               "within 10% of the bound? | decentralised / bound | flat / decentralised | "
               f"stealing ({TECHNIQUE}) / bound | stealing within 10% of the bound? |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for w in WORKLOADS:
        flat = find(rows, w, largest, ("flat", 0, TECHNIQUE))
        hier = find(rows, w, largest, ("hierarchical", most, TECHNIQUE))
        dec = find(rows, w, largest, ("decentralised", 0, TECHNIQUE))
        steal = find(rows, w, largest, ("stealing", 0, TECHNIQUE))
        speedup = flat["makespan"] / hier["makespan"]
        out.append(f"| {w} | {flat['ratio']:.3f} | {hier['ratio']:.3f} | {speedup:.2f} | "
                   f"{'yes' if speedup >= 4 else 'no'} | {'yes' if hier['ratio'] <= 1.10 else 'no'} | "
                   f"{dec['ratio']:.3f} | {flat['makespan'] / dec['makespan']:.2f} | "
                   f"{steal['ratio']:.3f} | {'yes' if steal['ratio'] <= 1.10 else 'no'} |")
    out.append("")
    return "\n".join(out)


def plot(rows, size, gp, out_png, tmp):
    for i, w in enumerate(WORKLOADS):
        with open(os.path.join(tmp, f"scaling{i}.dat"), "w") as f:
            for p in size["workers"]:
                cells = [str(p)]
                for m in modes(size):
                    cells.append(repr(find(rows, w, p, m)["makespan"]))
                cells.append(repr(find(rows, w, p, ("flat", 0, TECHNIQUE))["lower_bound"]))
                f.write(" ".join(cells) + "\n")
    titles = " ".join(f"{w}" for w in WORKLOADS)
    series = " ".join(label(m).replace(" ", "_") for m in modes(size))
    args = [gp, "-e", f"dir='{tmp}'; out='{out_png}'; titles='{titles}'; series='{series}'; n={len(modes(size))}",
            os.path.join(HERE, "scaling.gp")]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"gnuplot scaling.gp failed: {proc.stderr.strip()}")


def find_sim():
    if os.environ.get("PFARM_SIM"):
        return os.environ["PFARM_SIM"]
    for preset in ("release", "debug"):
        path = os.path.join(REPO, "build", preset, "bin", "pfarm-sim")
        if os.path.exists(path):
            return path
    raise SystemExit("run_scaling.py: pfarm-sim not found; build it or pass --sim")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="16 and 32 workers, 4,000 tasks (smoke test; needs --out)")
    ap.add_argument("--sim", help="pfarm-sim executable (default: $PFARM_SIM or a build folder of this checkout)")
    ap.add_argument("--out", help="output folder (default: docs/ of this checkout; --tiny must name another one)")
    ap.add_argument("--jobs", type=int, default=2, help="simulations run at once")
    ap.add_argument("--gnuplot", default="gnuplot", help="gnuplot executable")
    ap.add_argument("--no-plots", action="store_true", help="write the CSV and the Markdown only")
    args = ap.parse_args(argv)
    size = SIZES["tiny" if args.tiny else "default"]
    if args.tiny and not args.out:
        raise SystemExit("run_scaling.py: --tiny needs --out (it never writes docs/)")
    out = args.out or os.path.join(REPO, "docs")
    sim = args.sim or find_sim()
    os.makedirs(os.path.join(out, "img"), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # One platform file per worker count, written before any simulation reads it (the jobs run in parallel:
        # a file rewritten by one job while another reads it was read empty).
        platforms = {p: platform_file(tmp, p) for p in size["workers"]}
        jobs = [(w, p, m) for w in WORKLOADS for p in size["workers"] for m in modes(size)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda j: run_one(sim, platforms[j[1]], j[0], j[1], *j[2], size["tasks"]), jobs))
        check(rows, size)
        with open(os.path.join(out, "scaling.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=HEADER, lineterminator="\n", extrasaction="ignore")
            writer.writeheader()
            for r in rows:
                writer.writerow({**r, "makespan": f"{r['makespan']:.6g}", "lower_bound": f"{r['lower_bound']:.6g}",
                                 "ratio": f"{r['ratio']:.4f}"})
        with open(os.path.join(out, "scaling.md"), "w") as f:
            f.write(markdown(rows, size, size["tasks"]))
        if not args.no_plots:
            gp = shutil.which(args.gnuplot)
            if not gp:
                raise SystemExit(f"run_scaling.py: gnuplot ('{args.gnuplot}') not found; install it or pass --no-plots")
            plot(rows, size, gp, os.path.join(out, "img", "scaling.png"), tmp)
    print(f"run_scaling.py: {len(rows)} simulations; wrote {out}/scaling.csv, {out}/scaling.md"
          + ("" if args.no_plots else f", {out}/img/scaling.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
