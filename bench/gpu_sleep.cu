#include "bench/gpu_sleep.h"

namespace inorm::bench {
namespace {

__global__ void gpu_sleep_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

cudaError_t enqueue_gpu_sleep(long long cycles, cudaStream_t stream) {
  gpu_sleep_kernel<<<1, 1, 0, stream>>>(cycles);
  return cudaGetLastError();
}

}  // namespace inorm::bench
