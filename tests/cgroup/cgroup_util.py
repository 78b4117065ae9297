"""A CPU cgroup for the tests of this folder: find the hierarchy with the cpu controller (v1 or v2), make a cgroup
with a quota under it (quota_cgroup: made and always removed), start a process already inside it. Needs root. Errors
are CgroupError, whose text says what is missing."""
import contextlib
import os
import subprocess
import time


class CgroupError(Exception):
    pass


def cpu_hierarchy():
    """(version, mount point) of the hierarchy holding this process's cpu controller."""
    with open("/proc/self/cgroup") as f:
        lines = [line.rstrip("\n").split(":", 2) for line in f if line.strip()]
    v1 = any("cpu" in controllers.split(",") for _, controllers, _ in lines)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            before, after = line.split(" - ", 1)
            fstype, _, options = after.split()[:3]
            point = before.split()[4].replace("\\040", " ")
            if v1 and fstype == "cgroup" and "cpu" in options.split(","):
                return 1, point
            if not v1 and fstype == "cgroup2":
                return 2, point
    raise CgroupError("no mounted cgroup hierarchy with the cpu controller (/proc/self/mountinfo)")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def make_cgroup(version, mount, quota_us, period_us, name="pfarm-cgroup-test"):
    """A new cgroup NAME-PID under the mount, limited to quota_us of CPU in every period_us; returns its path."""
    path = os.path.join(mount, f"{name}-{os.getpid()}")
    if version == 2:
        with open(os.path.join(mount, "cgroup.controllers")) as f:
            if "cpu" not in f.read().split():
                raise CgroupError(f"{mount}/cgroup.controllers lacks cpu: the cpu controller is not available in "
                                  "cgroup v2 here")
        with open(os.path.join(mount, "cgroup.subtree_control")) as f:
            enabled = "cpu" in f.read().split()
        if not enabled:
            write(os.path.join(mount, "cgroup.subtree_control"), "+cpu")
    os.mkdir(path)
    if version == 1:
        write(os.path.join(path, "cpu.cfs_period_us"), str(period_us))
        write(os.path.join(path, "cpu.cfs_quota_us"), str(quota_us))
    else:
        write(os.path.join(path, "cpu.max"), f"{quota_us} {period_us}")
    return path


def start_in(cgroup, argv, **kwargs):
    """Starts argv with its first instruction already in the cgroup (the child joins before exec)."""
    procs = os.path.join(cgroup, "cgroup.procs")
    return subprocess.Popen(argv, preexec_fn=lambda: write(procs, "0"), **kwargs)


def remove_cgroup(cgroup):
    """Removes the cgroup, waiting up to 5 s for its last process to leave it; CgroupError if it stays."""
    for _ in range(50):
        try:
            os.rmdir(cgroup)
            return
        except OSError:
            time.sleep(0.1)
    raise CgroupError(f"could not remove {cgroup}")


@contextlib.contextmanager
def quota_cgroup(quota_us, period_us, name="pfarm-cgroup-test"):
    """A cgroup limited to quota_us of CPU in every period_us under this process's cpu hierarchy, for the with-block;
    removed after it (its processes must have exited by then)."""
    cgroup = make_cgroup(*cpu_hierarchy(), quota_us, period_us, name)
    try:
        yield cgroup
    finally:
        remove_cgroup(cgroup)
