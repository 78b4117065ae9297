#!/usr/bin/env python3
"""pfarm-run's grouped output under load: COMMANDS commands on the ranks each print LINES lines of about 110 bytes
at once (as fast as the shell writes them). With the default grouping every line must arrive whole, each command's
lines together and in order, and every command's output exactly once; with --line-buffer -j 2 (lines passed on as
they come, two commands at once per rank) every line must arrive whole, exactly once, each command's in order (the
commands' lines interleave: counted and printed); with -u (the commands write through mpiexec's forwarding, as before
grouping) the torn and interleaved lines are counted and printed, not checked.

usage: grouped_output.py PFARM_RUN MPIEXEC [MPIEXEC_ARGS...] -- [POSTFLAGS...]   (COMMANDS, LINES: environment)
"""
import os
import re
import subprocess
import sys
import time

argv = sys.argv[1:]
pfarm_run = argv[0]
sep = argv.index("--")
launcher, post = argv[1:sep], argv[sep + 1:]
commands, lines = int(os.environ.get("COMMANDS", "300")), int(os.environ.get("LINES", "200"))
pad = "x" * 100
script = f'for i in $(seq {lines}); do echo "{{}}:$i:{pad}"; done'
line_re = re.compile(r"^(\d+):(\d+):" + pad + "$")


def run(extra):
    start = time.time()
    p = subprocess.run(launcher + [pfarm_run] + post + ["--progress", "quiet"] + extra + [script, ":::"] +
                       [str(c) for c in range(commands)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, env=dict(os.environ, SHELL="/bin/sh"))
    return p, time.time() - start


def analyse(out):
    torn, runs, previous = 0, [], None
    for line in out.splitlines():
        m = line_re.match(line)
        if not m:
            torn += 1
            previous = None
            continue
        c, i = int(m.group(1)), int(m.group(2))
        if previous is None or previous[0] != c or previous[1] + 1 != i:
            runs.append([c, i, i])
        else:
            runs[-1][2] = i
        previous = (c, i)
    return torn, runs


p, took = run([])
if p.returncode != 0:
    print(f"FAIL: pfarm-run exited {p.returncode}: {p.stderr.decode(errors='replace')}", file=sys.stderr)
    sys.exit(1)
out = p.stdout.decode(errors="replace")
torn, runs = analyse(out)
whole = sorted((c, a, b) for c, a, b in runs)
total = commands * lines
print(f"grouped: {len(out.splitlines())} lines ({len(out)} bytes) from {commands} commands in {took:.1f} s: "
      f"{torn} torn, {len(runs)} runs of consecutive lines (one per command when none interleaves)")
if torn or whole != [(c, 1, lines) for c in range(commands)]:
    print("FAIL: grouped output has torn or interleaved lines, or misses some", file=sys.stderr)
    sys.exit(1)

p, took = run(["--line-buffer", "-j", "2"])
if p.returncode != 0:
    print(f"FAIL: pfarm-run --line-buffer exited {p.returncode}: {p.stderr.decode(errors='replace')}", file=sys.stderr)
    sys.exit(1)
out = p.stdout.decode(errors="replace")
torn, runs = analyse(out)
seen = {}  # per command: its line numbers in the order they came
for line in out.splitlines():
    m = line_re.match(line)
    if m:
        seen.setdefault(int(m.group(1)), []).append(int(m.group(2)))
print(f"line-buffered (-j 2): {len(out.splitlines())} lines from {commands} commands in {took:.1f} s: {torn} torn, "
      f"{len(runs)} runs of consecutive lines (the commands' lines interleave)")
if torn or sorted(seen) != list(range(commands)) or any(v != list(range(1, lines + 1)) for v in seen.values()):
    print("FAIL: line-buffered output has torn lines, or a command's lines missing, twice or out of order", file=sys.stderr)
    sys.exit(1)

p, took = run(["-u"])
out = p.stdout.decode(errors="replace")
torn, runs = analyse(out)
print(f"ungrouped (-u): {len(out.splitlines())} lines of {total} from {commands} commands in {took:.1f} s: {torn} torn, "
      f"{len(runs)} runs of consecutive lines (measured, not checked)")
