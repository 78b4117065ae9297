"""Ctrl-C on mpiexec stops a farm: starts `mpiexec ... python -c <a farm of 1,000 half-second tasks>` (the launcher
in argv), sends it SIGINT once the farm runs, and checks that it exits, non-zero, within 30 s, every rank gone.
Run by ctest as python.interrupt (tests/python/CMakeLists.txt)."""

import os
import signal
import subprocess
import sys
import time

FARM = """
import sys, time
import pfarm
from mpi4py import MPI
def slow(i):
    if i == 0 and MPI.COMM_WORLD.Get_rank() == 0:
        print("farming", flush=True)
    time.sleep(0.5)
    return i
pfarm.map(slow, range(1000), technique="ss")
print("finished", flush=True)
"""


def main():
    launcher = sys.argv[1:]
    proc = subprocess.Popen(launcher + [sys.executable, "-c", FARM], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    line = proc.stdout.readline()
    if "farming" not in line:
        proc.kill()
        raise SystemExit(f"the farm did not start: {line!r}")
    time.sleep(1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise SystemExit("mpiexec did not stop within 30 s of SIGINT")
    took = time.monotonic() - sent
    if proc.returncode == 0 or "finished" in out:
        raise SystemExit(f"the farm finished (exit {proc.returncode}) instead of stopping:\n{out}")
    print(f"mpiexec stopped {took:.2f} s after SIGINT, exit status {proc.returncode}")


if __name__ == "__main__":
    main()
