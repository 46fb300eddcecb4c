#!/usr/bin/env bash
# One full run on a GPU machine: build with all cores, GPU tests, compute-sanitizer on the small
# cases, the public suite and the seed variants. Logs and results go to $OUT (default ./gpu-out).
# Set INORM_COMMIT to the commit being measured (the device copy has no .git).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
export INORM_COMMIT=${INORM_COMMIT:-unknown}
build=${INORM_BUILD_DIR:-build-gpu}
status=0
step() {  # step NAME SECONDS COMMAND...: runs with a time limit, logs to $out/NAME.log
  local name=$1 limit=$2
  shift 2
  echo "=== $name"
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "    rc=$rc in $((SECONDS - start)) s"
  tail -n "${TAIL_LINES:-6}" "$out/$name.log" | sed 's/^/    /'
  [ $rc -eq 0 ] || status=1
}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; } >"$out/machine.txt" 2>&1
step configure 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
step build 300 cmake --build "$build" --parallel "$(nproc)"
step tests 240 "$build/inorm_gpu_tests" --gtest_brief=1
step cpu-tests 60 "$build/inorm_cpu_tests" --gtest_brief=1
step bench-suite 180 "$build/inorm-bench" --suite bench/suites/public.json \
  --json "$out/suite.json" --markdown "$out/suite.md"
step bench-variants 150 "$build/inorm-bench" --suite bench/suites/variants.json \
  --variants "${INORM_VARIANTS:-k5,k6,k8,k10,k12,k16,split}" --json "$out/variants.json" --markdown "$out/variants.md"
if [ "${INORM_SANITIZE:-1}" = 1 ]; then
  step memcheck 200 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$build/inorm_gpu_tests" --gtest_brief=1 --gtest_filter='GpuForward.EveryPathForced:GpuForward.MisalignedViews'
  step synccheck 120 compute-sanitizer --tool synccheck --error-exitcode 1 \
    "$build/inorm_gpu_tests" --gtest_brief=1 --gtest_filter='GpuForward.EveryPathForced'
fi
exit $status
