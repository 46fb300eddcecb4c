#!/usr/bin/env bash
# Builds the PyTorch package (its Python files and the extension inorm._C, with PyTorch's extension
# machinery and nvcc) into $INORM_BUILD_DIR/python (default build/python), incrementally, and
# installs nothing: use it with PYTHONPATH=build/python, or `pip install --no-build-isolation .` to
# install. Exits 3, saying what is missing, where PyTorch or nvcc is not there.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${INORM_BUILD_DIR:-build}
if ! python3 -c 'import torch' 2>/dev/null; then
  echo "build-python: PyTorch is not installed; the extension is not built"
  exit 3
fi
if ! command -v nvcc >/dev/null && [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  echo "build-python: nvcc (CUDA toolkit) not found; the extension is not built"
  exit 3
fi
export MAX_JOBS=${MAX_JOBS:-$(nproc)} TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
mkdir -p "$build"
log="$build/python-build.log"
if ! python3 setup.py build --build-base "$build/python-build" --build-lib "$build/python" >"$log" 2>&1; then
  tail -n 40 "$log"
  echo "build-python: the build failed (the whole log: $log)"
  exit 1
fi
echo "build-python: inorm built into $build/python (log: $log)"
