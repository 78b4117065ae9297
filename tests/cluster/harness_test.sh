#!/usr/bin/env bash
# The harness itself (pfarm-cluster): nodes with their own hostname, address and no route out; quotas that really
# throttle; load, quota changes on a schedule and kill; two clusters side by side; and a teardown that leaves no
# namespace, link, cgroup, state or process behind, also when the command under 'with' fails or is terminated.
#   harness_test.sh PFARM_CLUSTER NAME
set -euo pipefail
pc_path=$1 name=$2
other=$name-b
pc() { "$pc_path" --name "$name" "$@"; }
say() { echo "cluster.harness: $*"; }
fail() { echo "cluster.harness: FAILED: $*" >&2; exit 1; }
trap '"$pc_path" --name "$name" down; "$pc_path" --name "$other" down' EXIT

# What a cluster leaves on the machine: its netns, links, cgroup, state folder and processes (by cgroup).
leftovers() {
  local tag
  tag=pfc$(printf '%s' "$1" | sha1sum | cut -c1-6)
  ip netns list | grep "^$tag-" || true
  ip -o link show | grep -o "${tag}[a-z0-9]*" || true
  ls -d /sys/fs/cgroup/cpu/pfarm-cluster/"$1" /sys/fs/cgroup/pfarm-cluster/"$1" 2>/dev/null || true
  ls -d /run/pfarm-cluster/"$1" 2>/dev/null || true
}

if [ "$(id -u)" -ne 0 ]; then
  fail "must run as root (namespaces, veth pairs and cgroups): run the cluster tests as root"
fi
# Not root: a clear error, exit 1, nothing made.
set +e
msg=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$pc_path" --name "$name" up 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] && [[ $msg == *"must run as root"* ]] || fail "not root: exit $rc, '$msg'"
[ -z "$(leftovers "$name")" ] || fail "not root left: $(leftovers "$name")"

pc up --nodes 3 --hosts alpha,beta,gamma --slots 2,1,1 --quota 0.8,0.4,0.2
"$pc_path" --name "$other" up --nodes 2 --quota max --quiet
# state CLUSTER EXPR: a value from the cluster's state.json (st), by a Python expression
state() { python3 -c 'import json,sys; st = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
  /run/pfarm-cluster/"$1"/state.json "$2"; }
subnet=$(state "$name" 'st["subnet"]')
subnet_b=$(state "$other" 'st["subnet"]')
[ "$subnet" != "$subnet_b" ] || fail "two clusters on one subnet $subnet"
set +e
pc up --nodes 1 >/dev/null 2>&1 && fail "a second 'up' of the same name succeeded"
set -e

i=1
for h in alpha beta gamma; do
  got=$(pc exec $h -- hostname)
  [ "$got" = $h ] || fail "node $h says hostname '$got'"
  addr=$(pc exec $h -- ip -4 -o addr show dev eth0 | awk '{print $4}')
  [ "$addr" = "${subnet%.0/24}.$i/24" ] || fail "$h has address $addr"
  routes=$(pc exec $h -- ip route show)
  [[ $routes != *default* ]] || fail "$h has a default route: $routes"
  i=$((i + 1))
done
[ "$(hostname)" != alpha ] || fail "the host's hostname changed"
pc exec alpha -- python3 -c "
import socket; s = socket.socket(); s.settimeout(1)
try:
    s.connect(('192.0.2.1', 80)); raise SystemExit('alpha reached an address outside the cluster')
except OSError: pass" || fail "a node reached outside its subnet"
say "hostnames, addresses and routes right; no route out"

# The quota throttles: a busy loop on gamma (0.2 of a core) for 1 s uses about 0.2 s of CPU.
cg=$(state "$name" '[n for n in st["nodes"] if n["host"] == "gamma"][0]["cgroup"]')
if [ -f "$cg/cpu.cfs_quota_us" ]; then
  [ "$(cat "$cg/cpu.cfs_quota_us")" = 20000 ] && [ "$(cat "$cg/cpu.cfs_period_us")" = 100000 ] ||
    fail "gamma's quota files"
else
  [ "$(cat "$cg/cpu.max")" = "20000 100000" ] || fail "gamma's cpu.max: $(cat "$cg/cpu.max")"
fi
used=$(pc exec gamma -- python3 -c '
import time, os
t = time.time(); c0 = time.process_time()
while time.time() - t < 1.0: pass
print(f"{time.process_time() - c0:.3f}")')
python3 -c "import sys; u = float(sys.argv[1]); sys.exit(0 if 0.1 <= u <= 0.35 else 1)" "$used" ||
  fail "a busy second on gamma (quota 0.2) used $used s of CPU"
say "a busy second at quota 0.2 used $used s of CPU"

# Load: N busy loops in the node's cgroup, for a while; a schedule; kill ends every process of the node.
pc load beta 2 --for 30 >/dev/null
procs=$(wc -l <"$(dirname "$cg")/beta/cgroup.procs")
[ "$procs" -ge 2 ] || fail "load beta 2: $procs processes in beta's cgroup"
pc kill beta
[ "$(wc -l <"$(dirname "$cg")/beta/cgroup.procs")" -eq 0 ] || fail "kill beta left processes"
pc load alpha "0:1,1:3,3:0" >/dev/null
pc quota gamma "0:0.5,3:max" >/dev/null
procs_of() { grep -c . "$(dirname "$cg")/$1/cgroup.procs" || true; }
quota_of_gamma() { cat "$cg/cpu.cfs_quota_us" 2>/dev/null || cut -d' ' -f1 "$cg/cpu.max"; }
sleep 2
[ "$(procs_of alpha)" -ge 3 ] || fail "load schedule: $(procs_of alpha) processes on alpha at 2 s, expected 3"
[ "$(quota_of_gamma)" = 50000 ] || fail "quota schedule: $(quota_of_gamma) at 2 s, expected 50000"
sleep 2
[ "$(procs_of alpha)" -eq 0 ] || fail "load schedule: $(procs_of alpha) processes on alpha at 4 s, expected 0"
case $(quota_of_gamma) in -1 | max) ;; *) fail "quota schedule: $(quota_of_gamma) at 4 s, expected unlimited" ;; esac
pc quota gamma 0.2 >/dev/null
say "load, load schedule, quota schedule and kill work"

pc rtt alpha beta --count 1000

# Teardown: with processes on every node and a schedule pending, down leaves nothing; down again is a no-op.
pc load alpha 1 >/dev/null
pc load gamma "5:2" >/dev/null
pc exec beta -- sleep 300 &
sleep 0.3
pc down
pc down
[ -z "$(leftovers "$name")" ] || fail "down left: $(leftovers "$name")"
"$pc_path" --name "$other" down
[ -z "$(leftovers "$other")" ] || fail "down left: $(leftovers "$other")"
wait || true
say "down twice: nothing left"

# 'with' tears down after a failing command, and when it is terminated.
set +e
"$pc_path" --name "$name" with --nodes 2 -- sh -c '"$PFARM_CLUSTER" load node0 1 >/dev/null; exit 3' >/dev/null
rc=$?
set -e
[ $rc -eq 3 ] || fail "with: exit $rc, expected the command's 3"
[ -z "$(leftovers "$name")" ] || fail "with, after a failing command, left: $(leftovers "$name")"
"$pc_path" --name "$name" with --nodes 2 -- sh -c '"$PFARM_CLUSTER" load node1 1 >/dev/null; sleep 300' >/dev/null &
w=$!
for _ in $(seq 1 100); do [ -e /run/pfarm-cluster/"$name"/load.node1 ] && break; sleep 0.1; done
kill -TERM $w
set +e
wait $w
rc=$?
set -e
[ $rc -ne 0 ] || fail "with, terminated: exit 0"
[ -z "$(leftovers "$name")" ] || fail "with, terminated, left: $(leftovers "$name")"
say "with: torn down after a failing command (exit 3) and after SIGTERM (exit $rc)"
