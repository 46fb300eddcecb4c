// kSharedResident: each slice lives in shared memory between its statistics and its
// normalization, so x is read once and y written once.
//
// A persistent grid of up to 6 CTAs per SM. Consecutive CTAs form groups of `ctas_per_slice`; a
// group walks its slices (group, group + groups, ...) and each CTA holds the same chunk of every
// slice: one bulk async copy in, corrected two-pass statistics from shared memory, an exchange of
// chunk statistics within the group through L2 (a release counter per slice; the cooperative launch
// guarantees that every CTA of a group is resident), a rank-ordered combination (every CTA computes
// the same bits), then 16-byte stores. The other CTAs on the SM overlap one CTA's
// reduction and exchange with their loads and stores. dev/VARIANTS.md records the designs this one
// beat (clusters with distributed shared memory, double buffering inside a CTA).
#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/ptx>

#include "config.h"
#include "kernels/chunk_stats.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"

namespace inorm::detail {
namespace {

using Barrier = cuda::barrier<cuda::thread_scope_block>;

template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads, kSharedThreadsPerSm / kThreads)
    shared_resident_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using Chunk = ChunkView<T, kThreads>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier loaded;
  __shared__ typename Chunk::TempStorage reduce_storage;
  __shared__ Acc broadcast;

  const int group_size = args.ctas_per_slice;
  const int64_t groups = gridDim.x / group_size;
  const int rank = static_cast<int>(blockIdx.x % group_size);
  const int64_t begin = min(args.slice_len, rank * args.chunk_len);
  const int64_t len = min(args.slice_len - begin, args.chunk_len);
  auto* peer_stats = reinterpret_cast<ChunkStats<Acc>*>(smem);
  unsigned char* buffer = smem + args.slot_bytes;

  if (threadIdx.x == 0) {
    init(&loaded, kThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
  }
  __syncthreads();

  for (int64_t slice = blockIdx.x / group_size; slice < args.num_slices; slice += groups) {
    const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
    const RaggedRange<T> range(src, len);
    // buf[i] holds src[i] at the same address modulo 16, so the body is 16-byte aligned.
    T* buf = reinterpret_cast<T*>(buffer) + range.misalign;
    loaded.wait(start_chunk_load(loaded, buf, src, range));
    const Chunk chunk{buf, range, len};
    const ChunkStats<Acc> mine = chunk.statistics(reduce_storage, broadcast);

    if (group_size == 1) {
      if (threadIdx.x == 0) peer_stats[0] = mine;
    } else {
      auto* partials = static_cast<ChunkStats<Acc>*>(args.chunk_partials) + slice * group_size;
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(args.slice_arrivals[slice]);
      if (threadIdx.x == 0) {
        partials[rank] = mine;
        arrivals.fetch_add(1u, cuda::memory_order_release);
      }
      for (int r = threadIdx.x; r < group_size; r += kThreads) {
        while (arrivals.load(cuda::memory_order_acquire) < static_cast<unsigned>(group_size)) {
        }
        // L2, not a possibly stale L1 line shared with another slice's partials.
        ChunkStats<Acc> peer;
        peer.count = __ldcg(&partials[r].count);
        peer.mean = __ldcg(&partials[r].mean);
        peer.resid = __ldcg(&partials[r].resid);
        peer.m2 = __ldcg(&partials[r].m2);
        peer_stats[r] = peer;
      }
    }
    __syncthreads();
    Acc mean_hi, mean_lo, m2;
    combine_chunks(peer_stats, group_size, &mean_hi, &mean_lo, &m2);
    const SliceAffine<Acc> affine =
        finish_slice<Acc>(args, slice, mean_hi, mean_lo, m2, rank == 0 && threadIdx.x == 0);
    chunk.normalize(static_cast<T*>(args.y) + slice * args.slice_len + begin, affine, args.y_coaligned);
    __syncthreads();  // the buffer and peer_stats are free for the next slice
  }
}

using KernelFn = void (*)(KernelArgs);

template <typename T>
KernelFn shared_kernel_for(int threads) {
  switch (threads) {
    case 128: return &shared_resident_kernel<T, 128>;
    case 256: return &shared_resident_kernel<T, 256>;
    case 512: return &shared_resident_kernel<T, 512>;
  }
  return nullptr;
}
static_assert(kSharedMinThreads == 128 && kSharedMaxThreads == 512,
              "shared_kernel_for lists every power of two the planner may choose");

Status shared_kernel(const Plan& plan, KernelFn* kernel) {
  const Status status = dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    *kernel = shared_kernel_for<decltype(tag)>(plan.threads);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  if (*kernel == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan names a shared_resident thread count that is not compiled in");
  }
  return allow_max_dynamic_smem(reinterpret_cast<const void*>(*kernel));
}

}  // namespace

Status launch_shared(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  KernelFn kernel = nullptr;
  Status status = shared_kernel(plan, &kernel);
  if (!status.ok()) return status;
  if (plan.ctas_per_slice > 1) {
    status = cuda_status(cudaMemsetAsync(args.slice_arrivals, 0,
                                         static_cast<std::size_t>(plan.num_slices) * sizeof(unsigned), stream),
                         "cudaMemsetAsync(slice arrivals)");
    if (!status.ok()) return status;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(plan.grid));
  config.blockDim = dim3(static_cast<unsigned>(plan.threads));
  config.dynamicSmemBytes = static_cast<std::size_t>(plan.smem_bytes);
  config.stream = stream;
  // CTAs of a group wait for each other: they must all be resident, which a cooperative launch
  // guarantees (or refuses with an error instead of hanging).
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = 1;
  config.attrs = &cooperative;
  config.numAttrs = plan.ctas_per_slice > 1 ? 1 : 0;
  return cuda_status(cudaLaunchKernelEx(&config, kernel, args), "shared_resident launch");
}

Status shared_resident_ctas_per_sm(const Plan& plan, int* ctas_per_sm) {
  KernelFn kernel = nullptr;
  const Status status = shared_kernel(plan, &kernel);
  if (!status.ok()) return status;
  return cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(ctas_per_sm, kernel, plan.threads,
                                                                   static_cast<std::size_t>(plan.smem_bytes)),
                     "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
}

}  // namespace inorm::detail
