#!/usr/bin/env python3
"""Runs tests/cgroup/chunk_times.cpp under MPI inside a real CPU cgroup with a quota of 0.2 of a core, made here and
always removed: the chunk times a farm judges its workers by count at least their CPU time over the quota, whatever
the quota's slices let a short chunk run at (skeleton/mpi/src/quota_time.hpp).

Usage: chunk_times_test.py <chunk_times program> <mpiexec> [launcher arguments...]. Needs root (it makes a cgroup).
"""
import os
import subprocess
import sys

from cgroup_util import CgroupError, quota_cgroup, start_in

QUOTA_US, PERIOD_US = 20000, 100000


def fail(message):
    print(f"cgroup.chunk_times: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) < 3:
        fail("usage: chunk_times_test.py <chunk_times program> <mpiexec> [launcher arguments...]")
    program, launcher = sys.argv[1], sys.argv[2:]
    if os.geteuid() != 0:
        fail(f"needs root to make a cgroup (running as uid {os.geteuid()}); run it as root or leave out the "
             "label cgroup (ctest -LE cgroup)")
    try:
        with quota_cgroup(QUOTA_US, PERIOD_US, name="pfarm-chunk-times") as cgroup:
            p = start_in(cgroup, [*launcher, program, str(QUOTA_US / PERIOD_US)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
            try:
                out, _ = p.communicate(timeout=100)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
                fail(f"over 100 s; output:\n{out}")
            print(out, end="")
            if p.returncode != 0:
                fail(f"exit {p.returncode}")
    except CgroupError as e:
        fail(str(e))


if __name__ == "__main__":
    main()
