#!/usr/bin/env bash
# One full run on a GPU machine: the C++ part (build with all cores, GPU tests, compute-sanitizer on
# the small cases, the public suite, the seed variants) and the Python part (pip install of the
# package, pytest, python -m inorm.bench against eager PyTorch and torch.compile). Results and one
# log (run.log) go to $OUT (default ./gpu-out); the device tool brings back at most 8 files.
# INORM_ONLY picks a part: cpp, python, or bench (C++ build and benchmarks only).
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
only=${INORM_ONLY:-}
if [ "$only" != python ]; then
  step configure 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
  step build 300 cmake --build "$build" --parallel "$(nproc)"
  if [ "$only" != bench ]; then
    step tests 240 "$build/inorm_gpu_tests" --gtest_brief=1
    step cpu-tests 60 "$build/inorm_cpu_tests" --gtest_brief=1
  fi
  step bench-suite 180 "$build/inorm-bench" --suite bench/suites/public.json \
    --json "$out/suite.json" --markdown "$out/suite.md"
  step bench-variants 150 "$build/inorm-bench" --suite bench/suites/variants.json \
    --variants "${INORM_VARIANTS:-g0c1,g0c2,g0c3,g0c3-global,g0c4,g0c6,g0c6-global,pipelined}" --json "$out/variants.json" --markdown "$out/variants.md"
  if [ "$only" != bench ]; then
    step memcheck 200 compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$build/inorm_gpu_tests" --gtest_brief=1 --gtest_filter='GpuForward.EveryPathForced:GpuForward.MisalignedViews:GpuForward.SplitPipelinedOrder:GpuForward.RegisterParts'
    step synccheck 120 compute-sanitizer --tool synccheck --error-exitcode 1 \
      "$build/inorm_gpu_tests" --gtest_brief=1 --gtest_filter='GpuForward.EveryPathForced:GpuForward.SplitPipelinedOrder:GpuForward.RegisterParts'
  fi
fi
if [ -z "$only" ] || [ "$only" = python ]; then
  step pip-install 400 env MAX_JOBS="$(nproc)" TORCH_CUDA_ARCH_LIST=9.0 \
    python3 -m pip install --no-build-isolation --no-deps --no-cache-dir .
  step pytest 400 python3 -m pytest tests/python -q -rs -p no:cacheprovider
  step torch-bench 400 python3 -m inorm.bench --out "$out"
fi
exit $status
