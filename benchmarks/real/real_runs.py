#!/usr/bin/env python3
"""Real runs of the calcium sweep and Mandelbrot under MPI, beside the simulator's prediction (docs/benchmarks.md,
section 3). For each app it:
  1. runs the app on one rank (sequential): T1, the work;
  2. runs it once with technique ss and a trace: every task's measured compute time, replayed by pfarm-sim
     (scaled so that the costs add up to T1);
  3. runs every technique on N ranks with the emulated slowdowns given (rank 0 farms), and pfarm-sim on the
     same costs and slowdowns, and reports measured and predicted makespan, imbalance and parallel efficiency
     T1 / (makespan x sum of the workers' speeds 1/f).
Usage: real_runs.py --bin build/release --ranks 3 --slowdown 1,3 [--launcher "mpiexec --oversubscribe"]
                    [--size small|large] [--apps calcium,mandelbrot] [--markdown out.md] [--json out.json]
Standard library only."""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

TECHNIQUES = ["ss", "gss", "fss", "awf", "deal", "dealdyn-sm", "multi"]

SIZES = {
    "small": {
        "calcium": "--channels 5000 --steps 2000 --peak-duration 0.012 --voltage-step 2.5 --summary-only",
        "mandelbrot": "--width 800 --height 800 --verify none",
    },
    "large": {
        "calcium": "--experiments 240 --channels 10000 --steps 4000 --peak-duration 0.024 --voltage-step 2.5 --summary-only",
        "mandelbrot": "--width 2000 --height 2000 --verify none",
    },
}


def run_json(command, env=None):
    """Runs a command, returns the JSON object it printed on stdout (the last one)."""
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.time() - started
    if done.returncode != 0:
        sys.exit(f"real_runs: {' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    text = done.stdout
    start = text.find("{")
    if start < 0:
        sys.exit(f"real_runs: no JSON from {' '.join(command)}:\n{text}\n{done.stderr}")
    return json.loads(text[start:]), wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True, help="build directory (holds bin/)")
    parser.add_argument("--ranks", type=int, required=True, help="ranks of the farm (rank 0 farms)")
    parser.add_argument("--slowdown", default="", help="emulated slowdown of ranks 1..N-1 (default: none)")
    parser.add_argument("--launcher", default="mpiexec --oversubscribe", help="MPI launcher and its flags")
    parser.add_argument("--size", choices=SIZES, default="small")
    parser.add_argument("--apps", default="calcium,mandelbrot")
    parser.add_argument("--techniques", default=",".join(TECHNIQUES))
    parser.add_argument("--farm-options", default="",
                        help="farm flags given to every app run and to pfarm-sim, e.g. \"--reclaim\" or \"--prefetch --reclaim\"")
    parser.add_argument("--markdown", help="write the table as Markdown here")
    parser.add_argument("--json", help="write every number as JSON here")
    args = parser.parse_args()

    workers = args.ranks - 1
    factors = [float(f) for f in args.slowdown.split(",")] if args.slowdown else [1.0] * workers
    if len(factors) != workers:
        sys.exit(f"real_runs: --slowdown has {len(factors)} factors for {workers} worker ranks")
    slowdown = ",".join(["1"] + [f"{f:g}" for f in factors])
    speed = sum(1.0 / f for f in factors)
    launcher = shlex.split(args.launcher)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    sim = os.path.join(args.bin, "bin", "pfarm-sim")
    rows, record = [], {"ranks": args.ranks, "slowdown": factors, "size": args.size, "apps": {}}
    tmp = tempfile.mkdtemp(prefix="pfarm-real-")

    for app in args.apps.split(","):
        binary = os.path.join(args.bin, "bin", f"pfarm-{app}")
        base = [binary] + shlex.split(SIZES[args.size][app]) + ["--json", "--quiet"]
        if app == "calcium":
            base += ["--output", os.path.join(tmp, "calcium")]
        sequential, _ = run_json(launcher + ["-n", "1"] + base, env)
        t1 = sequential["makespan"]
        costs = os.path.join(tmp, f"{app}-costs.csv")
        run_json(launcher + ["-n", "2"] + base + ["--technique", "ss", "--trace", costs], env)
        # The replayed costs keep the ss run's profile but are scaled to the sequential run's total, so that one
        # noisy run does not shift every prediction.
        with open(costs) as trace:
            lines = [l.split(",") for l in trace if l[0].isdigit()]
        scale = t1 / sum(float(f[5]) - float(f[4]) for f in lines)
        task_times = ",".join(f"{f * scale:g}" for f in factors)
        record["apps"][app] = {"sequential_s": t1, "tasks": sequential["tasks"], "techniques": {}}
        for technique in args.techniques.split(","):
            measured, wall = run_json(
                launcher + ["-n", str(args.ranks)] + base + ["--technique", technique, "--slowdown", slowdown]
                + shlex.split(args.farm_options), env)
            predicted, _ = run_json([sim, "--technique", technique, "--costs", costs,
                                     "--task-times", task_times, "--json"] + shlex.split(args.farm_options))
            efficiency = t1 / (measured["makespan"] * speed)
            record["apps"][app]["techniques"][technique] = {
                "makespan_s": measured["makespan"], "wall_s": wall, "percent_imbalance": measured["percent_imbalance"],
                "tasks_per_rank": measured["tasks_per_rank"], "predicted_makespan_s": predicted["makespan"],
                "predicted_imbalance": predicted["percent_imbalance"], "lower_bound_s": predicted["lower_bound"],
                "efficiency": efficiency}
            rows.append((app, technique, measured["makespan"], predicted["makespan"], predicted["lower_bound"],
                         measured["percent_imbalance"], predicted["percent_imbalance"], efficiency))
            print(f"{app:10s} {technique:11s} measured {measured['makespan']:8.3f} s  predicted "
                  f"{predicted['makespan']:8.3f} s  bound {predicted['lower_bound']:8.3f} s  imbalance "
                  f"{measured['percent_imbalance']:5.1f} % (sim {predicted['percent_imbalance']:5.1f} %)  "
                  f"efficiency {efficiency:5.2f}", flush=True)

    table = ["| app | technique | measured makespan (s) | predicted (s) | measured / predicted | fluid bound (s) | "
             "imbalance % (measured) | imbalance % (simulated) | efficiency |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for app, technique, m, p, b, im, ip, e in rows:
        table.append(f"| {app} | {technique} | {m:.3f} | {p:.3f} | {m / p:.2f} | {b:.3f} | {im:.1f} | {ip:.1f} | {e:.2f} |")
    header = (f"{args.ranks} ranks (rank 0 farms), worker slowdowns {factors}, size {args.size}"
              f"{', farm options ' + args.farm_options if args.farm_options else ''}; "
              f"sequential: " + ", ".join(f"{a} {v['sequential_s']:.3f} s" for a, v in record["apps"].items()))
    print("\n" + header + "\n\n" + "\n".join(table))
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(header + "\n\n" + "\n".join(table) + "\n")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(record, out, indent=1)


if __name__ == "__main__":
    main()
