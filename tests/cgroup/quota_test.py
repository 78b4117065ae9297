#!/usr/bin/env python3
"""Runs pfarm-probe inside a real CPU cgroup with a quota of 0.2 of a core, made here and always removed, and
checks what the cgroup monitor reads: the quota, the threads competing for it, and their throttling.

Usage: quota_test.py <pfarm-probe> <work dir>. Needs root (it makes a cgroup); cgroup v1 (the cpu controller's
hierarchy) or v2 (the unified one, with the cpu controller enabled at its top).

Two runs: the probe alone in the cgroup (availability 0.2: one runnable thread, the probe's own), then with a
busy loop in the same cgroup (two runnable threads share 0.2: availability 0.1, and the cgroup is throttled
in the periods between the probe's readings).
"""
import json
import os
import signal
import subprocess
import sys
import time

from cgroup_util import CgroupError, cpu_hierarchy, quota_cgroup, start_in

QUOTA_US, PERIOD_US = 20000, 100000
LIMIT = QUOTA_US / PERIOD_US


def fail(message):
    print(f"cgroup.quota: {message}", file=sys.stderr)
    sys.exit(1)


def probe(probe_path, cgroup, output):
    started = time.monotonic()
    p = start_in(cgroup, [probe_path, "--compact", "--samples", "3", "--interval-ms", "300", "--output", output],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=60)
    if p.returncode != 0:
        fail(f"pfarm-probe exited {p.returncode}: {err}{out}")
    with open(output) as f:
        rank = json.load(f)["ranks"][0]
    print(f"probe in the cgroup took {time.monotonic() - started:.2f} s; cgroup section: "
          f"{json.dumps(rank.get('cgroup'))}; sample: {json.dumps(rank['sample'])}")
    return rank


def check(condition, what, rank):
    if not condition:
        fail(f"{what}; cgroup section: {json.dumps(rank.get('cgroup'))}, "
             f"availability_from: {rank.get('availability_from')}, sample: {json.dumps(rank['sample'])}")


def check_common(rank, cgroup, version):
    c = rank.get("cgroup", {})
    check("error" not in c, "the cgroup monitor failed", rank)
    check(rank.get("availability_from") == "cgroup", "the sample's availability is not the cgroup monitor's", rank)
    check(c["version"] == version, f"version {c['version']}, expected {version}", rank)
    check(c["cgroup"].endswith("/" + os.path.basename(cgroup)), "not the cgroup made for the test", rank)
    check(abs(c["limit_cores"] - LIMIT) < 1e-12, f"limit_cores {c['limit_cores']}, expected {LIMIT}", rank)
    check(c["runnable"] >= 1, "no runnable thread counted (the reader itself runs)", rank)
    check(abs(c["quota_availability"] - min(1.0, LIMIT / c["runnable"])) < 1e-12, "quota_availability", rank)
    qa, la, b = c["quota_availability"], c["load_availability"], c["binding"]
    check(0 <= b <= 1, f"binding {b} outside [0, 1]", rank)
    check(abs(c["availability"] - (b * qa + (1 - b) * min(qa, la))) < 1e-12, "availability", rank)
    check(rank["sample"]["availability"] == c["availability"], "the sample's availability differs", rank)
    return c


def probe_both(probe_path, work, cgroup, version):
    """The probe alone in the cgroup, then beside a busy loop (killed at the end), each reading checked."""
    busy = None
    try:
        print(f"cgroup v{version}: {cgroup}, quota {QUOTA_US} us per {PERIOD_US} us")
        alone = probe(probe_path, cgroup, os.path.join(work, "alone.json"))
        c = check_common(alone, cgroup, version)
        # The probe's own thread is runnable while it reads; its MPI helper threads sleep.
        check(c["runnable"] == 1, f"alone: {c['runnable']} runnable threads, expected 1", alone)

        busy = start_in(cgroup, [sys.executable, "-c", "while True: pass"])
        time.sleep(0.3)
        loaded = probe(probe_path, cgroup, os.path.join(work, "busy.json"))
        c = check_common(loaded, cgroup, version)
        check(c["runnable"] >= 2, f"with a busy loop: {c['runnable']} runnable threads, expected 2", loaded)
        check(c["quota_availability"] <= LIMIT / 2 + 1e-12, "with a busy loop: quota_availability above 0.1",
              loaded)
        # A busy loop at 0.2 of a core is throttled in (nearly) every period: the quota, not the machine's load,
        # sets the share.
        check(c["binding"] > 0.5, f"with a busy loop: the quota was binding in only {c['binding']} of the periods",
              loaded)
        delta = c["throttling_delta"]
        check(delta is not None and delta["nr_periods"] > 0 and delta["nr_throttled"] > 0,
              "with a busy loop: no throttled period between the last two readings", loaded)
        print(f"cgroup.quota: alone availability {alone['sample']['availability']}, with a busy loop "
              f"{loaded['sample']['availability']} (throttled {delta['nr_throttled']} of {delta['nr_periods']} "
              f"periods in the last interval)")
    finally:
        if busy is not None:
            busy.send_signal(signal.SIGKILL)
            busy.wait()


def main():
    if len(sys.argv) != 3:
        fail("usage: quota_test.py <pfarm-probe> <work dir>")
    probe_path, work = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        fail(f"needs root to make a cgroup (running as uid {os.geteuid()}); run it as root or leave out the "
             "label cgroup (ctest -LE cgroup)")
    os.makedirs(work, exist_ok=True)
    try:
        version, _ = cpu_hierarchy()
        with quota_cgroup(QUOTA_US, PERIOD_US) as cgroup:
            probe_both(probe_path, work, cgroup, version)
    except CgroupError as e:
        fail(str(e))


if __name__ == "__main__":
    main()
