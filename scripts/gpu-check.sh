#!/usr/bin/env bash
# One full run on a GPU machine: build with all cores, GPU tests, compute-sanitizer on the small
# cases, the public suite and the seed variants. Results and one log (run.log) go to $OUT
# (default ./gpu-out); the device tool brings back at most 8 files.
# Set INORM_COMMIT to the commit being measured (the device copy has no .git).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
export INORM_COMMIT=${INORM_COMMIT:-unknown}
build=${INORM_BUILD_DIR:-build-gpu}
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
  echo "=== $name: rc=$rc in $((SECONDS - start)) s"
  tail -n "${TAIL_LINES:-6}" "$out/step.log" | sed 's/^/    /'
  rm -f "$out/step.log"
  [ $rc -eq 0 ] || status=1
}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; } >>"$log" 2>&1
step configure 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
step build 300 cmake --build "$build" --parallel "$(nproc)"
if [ "${INORM_ONLY:-}" != bench ]; then  # INORM_ONLY=bench: build and benchmarks only
  step tests 240 "$build/inorm_gpu_tests" --gtest_brief=1
  step cpu-tests 60 "$build/inorm_cpu_tests" --gtest_brief=1
fi
step bench-suite 180 "$build/inorm-bench" --suite bench/suites/public.json \
  --json "$out/suite.json" --markdown "$out/suite.md"
step bench-variants 150 "$build/inorm-bench" --suite bench/suites/variants.json \
  --variants "${INORM_VARIANTS:-g0c1,g0c2,g0c3,g0c4,g0c6,g11,split}" --json "$out/variants.json" --markdown "$out/variants.md"
if [ "${INORM_ONLY:-}" != bench ]; then
  step memcheck 200 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$build/inorm_gpu_tests" --gtest_brief=1 --gtest_filter='GpuForward.EveryPathForced:GpuForward.MisalignedViews'
  step synccheck 120 compute-sanitizer --tool synccheck --error-exitcode 1 \
    "$build/inorm_gpu_tests" --gtest_brief=1 --gtest_filter='GpuForward.EveryPathForced'
fi
exit $status
