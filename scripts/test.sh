#!/usr/bin/env bash
# Builds everything (all kernels, sm_90) and runs the tests: the CPU tests always, the GPU tests
# where a GPU exists (in shards side by side; they skip with a message elsewhere), then the Python
# tests (pytest) against the package built into build/python where PyTorch and nvcc are
# (scripts/build-python.sh; nothing is installed). Without PyTorch the tests that need it are
# skipped with one message; those that need a GPU skip with a message where there is none. Every
# suite runs; the exit status is the first failure's. Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${INORM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --parallel "$(nproc)"
status=0
ctest --test-dir "$build" --output-on-failure --verbose --parallel "$(nproc)" "$@" || status=$?
if ! python3 -c 'import pytest' 2>/dev/null; then
  echo "pytest is not installed (python3 -m pip install pytest): the Python tests did not run"
  exit $status
fi
if python3 -c 'import torch' 2>/dev/null; then
  built=0
  INORM_BUILD_DIR=$build scripts/build-python.sh || built=$?
  if [ $built -eq 0 ]; then
    export PYTHONPATH="$(cd "$build/python" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
  elif [ $built -ne 3 ]; then  # 3: nvcc missing, said; the tests that need inorm are skipped
    exit $built
  fi
fi
pytest_status=0
python3 -m pytest tests/python -q -rs -p no:cacheprovider || pytest_status=$?
[ $status -ne 0 ] || status=$pytest_status
exit $status
