#!/usr/bin/env bash
# One full run on a GPU machine, in parts; INORM_ONLY picks some, as a comma list (default: all):
#   tests     GPU tests (in shards side by side, as ctest runs them) and CPU tests
#   bench     the suites forward (public.json) and backward (train.json), layouts.json and
#             fused.json both passes, the variant sweeps of both passes, inorm-bench --overhead
#   cpp       tests and bench
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck and initcheck on the smallest plan of
#             every family and exchange (GpuSanitize.*), and the synccheck reproducer; where
#             INORM_SANITIZE_FILTER names tests (a gtest filter), those alone and no reproducer
#   python    pytest and pybench
#   pytest    the package built into the build directory (scripts/build-python.sh), then pytest
#   pybench   the package built so, then python -m inorm.bench forward and --train on public.json
#             (train.json), layouts.json and fused.json, and --overhead against the C++ suite's
#             times (each part fits one 600 s call of the device tool; a warm machine keeps the build)
# Every part builds with all cores into $INORM_BUILD_DIR (default build-gpu); where INORM_PREBUILT
# names a folder, the C++ parts run the binaries already built there for sm_90 instead, as when a
# build from a machine without a GPU is carried to one: inorm_gpu_tests, inorm_cpu_tests,
# inorm-bench and inorm-dev-synccheck-repro, those that the parts asked for run (each may be
# gzipped; the CPU tests, which CI runs, may be left out; configured with
# -DCMAKE_CUDA_FLAGS=--compress-mode=none -DCMAKE_CUDA_ARCHITECTURES=90-real their fatbins stay
# uncompressed and hold no PTX, so an archiver packs them far smaller: xz -9 packed a stripped
# inorm-bench in 15 MB, 44 MB with nvcc's compressed fatbins; three binaries in one xz stream whose
# dictionary outgrows a binary, 16 MB, since they share their kernels).
# Results and one log (run.log) go to $OUT (default ./gpu-out); the device tool brings back at most
# 8 files, so where INORM_PACK names a .tgz, $OUT is packed there after every step (a call cut off
# at its time limit keeps what was packed). Set INORM_COMMIT to the commit being measured (the
# device copy has no .git).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
export INORM_COMMIT=${INORM_COMMIT:-unknown}
package_build=${INORM_BUILD_DIR:-build-gpu}
build=${INORM_PREBUILT:-$package_build}
status=0
log=$out/run.log
: >"$log"
step() {  # step NAME SECONDS COMMAND...: runs with a time limit, appends its output to run.log
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  echo "=== $name" >>"$log"
  timeout "$limit" "$@" >"$out/step.log" 2>&1
  local rc=$?
  cat "$out/step.log" >>"$log"
  echo "=== $name: rc=$rc in $((SECONDS - start)) s" | tee -a "$log"
  tail -n "${TAIL_LINES:-6}" "$out/step.log" | sed 's/^/    /'
  rm -f "$out/step.log"
  [ $rc -eq 0 ] || status=1
  pack
}
pack() { [ -z "${INORM_PACK:-}" ] || tar czf "$INORM_PACK" -C "$(dirname "$out")" "$(basename "$out")"; }
gpu_tests_sharded() {  # the GPU tests in 8 shards side by side; fails if any shard does
  local shards=8 index pids=() rc=0
  trap 'kill "${pids[@]}" 2>/dev/null' TERM  # step's time limit stops the shards too
  for ((index = 0; index < shards; index++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$index "$build/inorm_gpu_tests" --gtest_brief=1 \
      >"$out/gpu-shard-$index.log" 2>&1 &
    pids+=($!)
  done
  for ((index = 0; index < shards; index++)); do
    wait "${pids[$index]}" || rc=1
    echo "--- shard $((index + 1)) of $shards"
    cat "$out/gpu-shard-$index.log"
    rm -f "$out/gpu-shard-$index.log"
  done
  return $rc
}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; } >>"$log" 2>&1
only=${INORM_ONLY:-}
part() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
[ -n "$only" ] && part cpp && only="$only,tests,bench"
[ -n "$only" ] && part python && only="$only,pytest,pybench"

if part tests || part bench || part sanitize; then
  if [ -n "${INORM_PREBUILT:-}" ]; then
    for binary in inorm_gpu_tests inorm_cpu_tests inorm-bench inorm-dev-synccheck-repro; do
      [ -f "$build/$binary.gz" ] && gunzip -f "$build/$binary.gz"
      [ -f "$build/$binary" ] && chmod +x "$build/$binary"
    done
  else
    step configure 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
    step build 300 cmake --build "$build" --parallel "$(nproc)"
  fi
fi
if part tests; then
  export -f gpu_tests_sharded
  export build out
  step tests 420 bash -c gpu_tests_sharded
  if [ -n "${INORM_PREBUILT:-}" ] && [ ! -f "$build/inorm_cpu_tests" ]; then
    echo "=== cpu-tests: not run, $build holds no inorm_cpu_tests (CI runs them)" | tee -a "$log"
  else
    step cpu-tests 60 "$build/inorm_cpu_tests" --gtest_brief=1
  fi
fi
if part bench; then
  step bench-suite 180 "$build/inorm-bench" --suite bench/suites/public.json \
    --json "$out/suite.json" --markdown "$out/suite.md"
  step bench-backward 180 "$build/inorm-bench" --backward --suite bench/suites/train.json \
    --json "$out/backward.json" --markdown "$out/backward.md"
  step bench-layouts 180 "$build/inorm-bench" --suite bench/suites/layouts.json \
    --json "$out/layouts.json" --markdown "$out/layouts.md"
  step bench-layouts-backward 180 "$build/inorm-bench" --backward --suite bench/suites/layouts.json \
    --json "$out/layouts-backward.json" --markdown "$out/layouts-backward.md"
  step bench-fused 180 "$build/inorm-bench" --suite bench/suites/fused.json \
    --json "$out/fused.json" --markdown "$out/fused.md"
  step bench-fused-backward 180 "$build/inorm-bench" --backward --suite bench/suites/fused.json \
    --json "$out/fused-backward.json" --markdown "$out/fused-backward.md"
  step bench-variants 150 "$build/inorm-bench" --suite bench/suites/variants.json \
    --variants "${INORM_VARIANTS:-g0c2,g0c3,g0c3-global,g0c6,pipelined}" --json "$out/variants.json" --markdown "$out/variants.md"
  step bench-backward-variants 150 "$build/inorm-bench" --backward --suite bench/suites/variants-backward.json \
    --variants "${INORM_BACKWARD_VARIANTS:-g0c2,g0c3,g15c2,g32c3,pipelined}" --json "$out/backward-variants.json" \
    --markdown "$out/backward-variants.md"
fi
if part sanitize; then
  # Every tool on every plan; synccheck leaves out the many-cluster launch it faults on (the
  # reproducer below shows the fault without the library; tests/gpu/sanitize_test.cpp says more).
  for tool in memcheck racecheck initcheck synccheck; do
    filter='GpuSanitize.*'
    [ "$tool" = synccheck ] && filter='GpuSanitize.*:-GpuSanitize.ManyClustersOfLargeChunks'
    filter=${INORM_SANITIZE_FILTER:-$filter}
    step "sanitize-$tool" 240 compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$build/inorm_gpu_tests" --gtest_brief=1 --gtest_filter="$filter"
  done
  # The reproducer: 21 clusters of 16 fault under synccheck in every mode, with 72 KiB of shared
  # memory a CTA or 8 (as measured, bench/results/2026-12-04-h200-split-build/gpu-tests/); one
  # cluster, no cluster launch and clusters of two pass. Recorded, not counted as a failure.
  # Not where INORM_SANITIZE_FILTER chose a few tests.
  reproducer_args=("bulk 16 72 21" "plain 16 72 21" "exchange 16 72 21" "bulk 16 72 1" "bulk 0 72 336"
                   "bulk 2 72 168" "plain 2 100 132" "bulk 16 8 21")
  [ -n "${INORM_SANITIZE_FILTER:-}" ] && reproducer_args=()
  for args in "${reproducer_args[@]}"; do
    echo "=== synccheck repro $args" >>"$log"
    timeout 60 compute-sanitizer --tool synccheck "$build/inorm-dev-synccheck-repro" $args >>"$log" 2>&1
    echo "synccheck repro $args: rc=$?" | tee -a "$log"
  done
fi
if part bench; then
  step bench-overhead 60 "$build/inorm-bench" --overhead
fi
if part pytest || part pybench; then
  # The package as scripts/test.sh builds it (build/python, nothing installed).
  step build-python 400 env INORM_BUILD_DIR="$package_build" scripts/build-python.sh
  export PYTHONPATH="$(cd "$package_build/python" 2>/dev/null && pwd)${PYTHONPATH:+:$PYTHONPATH}"
fi
if part pytest; then
  step pytest 480 python3 -m pytest tests/python -q -rs -p no:cacheprovider
fi
if part pybench; then
  step torch-bench 300 python3 -m inorm.bench --suite bench/suites/public.json --out "$out"
  step train-bench 400 python3 -m inorm.bench --train --suite bench/suites/train.json --out "$out"
  for suite in layouts fused; do
    step "torch-bench-$suite" 300 python3 -m inorm.bench --suite "bench/suites/$suite.json" --out "$out"
    step "train-bench-$suite" 400 python3 -m inorm.bench --train --suite "bench/suites/$suite.json" --out "$out"
  done
  kernel_times=()
  [ -f "$out/suite.json" ] && kernel_times=(--kernel-times "$out/suite.json")
  step overhead 300 python3 -m inorm.bench --overhead "${kernel_times[@]}" --out "$out"
fi
pack
exit $status
