#!/usr/bin/env bash
# Installs what pfarm needs on Debian 12 (only what is missing) and builds the release preset.
# Sourced by scripts/main.sh and scripts/test.sh; safe to run again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin libgsl-dev libhwloc-dev googletest
          libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev gnuplot-nox
          python3 python3-dev pybind11-dev python3-mpi4py python3-numpy python3-pytest clang libclang-rt-14-dev
          iproute2 util-linux slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
          parallel)
# python3: the quality and scaling studies, journal_kill.sh; python3-dev, pybind11-dev, python3-mpi4py,
# python3-numpy, python3-pytest: the Python package (skeleton/python), its tests (tests/python) and benchmark
# (benchmarks/python); clang and its libFuzzer runtime: the fuzz tests (tests/fuzz); iproute2, util-linux, Slurm and
# munge: the emulated cluster of the cluster tests (tests/cluster); parallel: GNU parallel, which pfarm-run's
# comparison test (tests/run) runs beside pfarm-run
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "pfarm: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "pfarm: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
fi

# Open MPI refuses root unless told, and CI runs as root; ranks beyond the cores are allowed.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
