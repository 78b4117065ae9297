#!/usr/bin/env python3
"""Prefetch against no prefetch, every technique, on one Mandelbrot run (docs/performance.md "Targets": with
--prefetch at most 5% slower than without).

For each technique of the registry (read from `pfarm-chunks --help`, never a list kept here), runs
`pfarm-mandelbrot --width 1500 --height 1500 --max-iterations 2000 --farmer-computes` on 2 ranks N times without
and N times with `--prefetch`, the two modes in turn (pair i is run back to back, so a slow spell of a shared
machine falls on both), and writes the makespans to a JSON file and a markdown table to stdout: the median of
each mode, their ratio (the target: at most 1.05), and the median of the pairs' ratios.

    python3 benchmarks/real/prefetch_mandelbrot.py [--pairs 9] [--build build/release]
        [--out docs/measurements/prefetch-mandelbrot-2ranks.json] [--only tss,gss] [--args="--weights 1,1"]

The JSON also keeps each run's calibration fitness vector (F, from one edge column per rank, a few microseconds:
the techniques that weight by it run a different schedule each time). `--args` adds options to every run, both
modes: `--weights 1,1` gives the weighted techniques the two ranks' true equal powers, so that both modes run one
schedule and the ratio shows what prefetch alone costs.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

# Parameters a technique cannot run without on this loop (the app refuses it otherwise): awf-d, awf-e and fsc need
# the scheduling overhead h per chunk, in task-time units, fsc the tasks' standard deviation too (in the same units;
# the Mandelbrot columns' is of the order of their mean); css needs its chunk size.
EXTRA = {"awf-d": ["--overhead-h", "0.01"], "awf-e": ["--overhead-h", "0.01"], "css": ["--chunk", "8"],
         "fsc": ["--overhead-h", "0.01", "--sigma", "1"]}


def techniques(build):
    """The registry's techniques, aliases left out (wf is dfss: the same runs)."""
    text = subprocess.run([os.path.join(build, "bin/pfarm-chunks"), "--help"], capture_output=True,
                          text=True, check=False).stdout
    listing = text.split("Techniques:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^  (\S+)\s+(\S.*)$", listing, re.M) if not m.group(2).startswith("alias of ")]


def makespan(build, technique, prefetch, extra_args):
    """One run: (makespan in seconds, the calibration's fitness vector or None when the run calibrated nothing)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = ["mpiexec", "-n", "2", os.path.join(build, "bin/pfarm-mandelbrot"), "--width", "1500",
               "--height", "1500", "--max-iterations", "2000", "--technique", technique, "--farmer-computes",
               "--quiet", "--json", "--output", os.devnull] + EXTRA.get(technique, []) + extra_args + (["--prefetch"] if prefetch else [])
    run = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if run.returncode != 0:
        sys.exit(f"prefetch_mandelbrot: {technique}{' --prefetch' if prefetch else ''} failed ({run.returncode}): "
                 f"{run.stderr.strip()[-400:]}")
    report = json.loads(run.stdout)
    return report["makespan"], (report.get("calibration") or {}).get("fitness")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=9, help="runs of each mode per technique (default 9)")
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--out", default="docs/measurements/prefetch-mandelbrot-2ranks.json")
    parser.add_argument("--only", default="", help="comma-separated techniques (default: all)")
    parser.add_argument("--args", default="", help="options added to every run of both modes (e.g. \"--weights 1,1\")")
    args = parser.parse_args()
    if args.pairs < 1:
        sys.exit("prefetch_mandelbrot: --pairs: is %d; expected >= 1" % args.pairs)
    names = techniques(args.build)
    if args.only:
        wanted = args.only.split(",")
        unknown = [t for t in wanted if t not in names]
        if unknown:
            sys.exit("prefetch_mandelbrot: --only: unknown technique(s) " + ", ".join(unknown))
        names = wanted
    extra_args = args.args.split()
    results, fitness = {}, {}
    for t in names:
        plain, ahead, f_plain, f_ahead = [], [], [], []
        for _ in range(args.pairs):
            for runs, fits, prefetch in ((plain, f_plain, False), (ahead, f_ahead, True)):
                m, f = makespan(args.build, t, prefetch, extra_args)
                runs.append(m)
                fits.append(f)
        results[t] = {"plain": plain, "--prefetch": ahead}
        fitness[t] = {"plain": f_plain, "--prefetch": f_ahead}
        print(f"{t}: {statistics.median(ahead) / statistics.median(plain):.3f}", file=sys.stderr, flush=True)
        with open(args.out, "w") as f:  # after each technique: a run cut short keeps what it measured
            json.dump({"command": "pfarm-mandelbrot --width 1500 --height 1500 --max-iterations 2000 --farmer-computes, "
                                  "mpiexec -n 2, pairs run back to back", "pairs": args.pairs, "extra": EXTRA,
                       "args": args.args, "makespans": results, "fitness": fitness}, f, indent=1)
    print("| technique | without prefetch, median (s) | with prefetch, median (s) | ratio of medians | median of pair ratios |")
    print("| --- | --- | --- | --- | --- |")
    over = []
    for t, r in results.items():
        a, b = statistics.median(r["plain"]), statistics.median(r["--prefetch"])
        pairs = statistics.median(y / x for x, y in zip(r["plain"], r["--prefetch"]))
        if b / a > 1.05:
            over.append(t)
        print(f"| {t} | {a:.3f} | {b:.3f} | **{b / a:.3f}** | {pairs:.3f} |")
    print(f"\nwithin 5%: {len(results) - len(over)} of {len(results)}" + (f"; over: {', '.join(over)}" if over else ""))


if __name__ == "__main__":
    main()
