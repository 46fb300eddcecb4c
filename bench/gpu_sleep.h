// A GPU that is kept busy while the host queues work behind it: CUDA events around that work then
// time the GPU alone. From an idle GPU they also count the host's time to submit each launch and
// copy that the GPU waits for (a copy of 10 MB timed 11 us so against 6 us on the GPU).
#pragma once

#include <cuda_runtime_api.h>

namespace inorm::bench {

// Queues a kernel that spins for `cycles` of the SM clock on `stream`.
cudaError_t enqueue_gpu_sleep(long long cycles, cudaStream_t stream);

}  // namespace inorm::bench
