#!/usr/bin/env bash
# Builds and runs inorm-bench: with no arguments, the seed workload (112x64x512x512 float32).
# Arguments go to inorm-bench (e.g. --suite bench/suites/public.json). Exits 2 without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${INORM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --parallel "$(nproc)" --target inorm-bench
exec "$build/inorm-bench" "$@"
