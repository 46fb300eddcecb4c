#!/usr/bin/env bash
# Builds everything (all kernels, sm_90) and runs the tests: the CPU tests always, the GPU tests
# where a GPU exists (they skip with a message elsewhere). Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${INORM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --parallel "$(nproc)"
ctest --test-dir "$build" --output-on-failure --verbose "$@"
