// kSplitSlice: slices too large for the shared memory of the whole chip (and only those).
// Two kernels: partial statistics per (slice, part), then normalization of each piece of a part
// (kSplitNormalizeCtasPerPart CTAs a part) after combining its slice's partials. x is read twice;
// the second kernel walks the pieces in reverse so its first reads find what the first kernel read
// last still in L2, and is launched early (programmatic dependent launch) to fill the slots the
// first one frees.
//
// Partials are (count, mean, M2) in float64: a part's stages merge with Chan's formula; a slice's
// partials combine around the first part's mean with two block-wide sums, in a fixed order, so the
// statistics are robust to data far from zero and the same from run to run.
#include <cub/block/block_reduce.cuh>
#include <cuda/barrier>
#include <cuda/ptx>

#include "config.h"
#include "kernels/chunk_stats.cuh"
#include "kernels/common.cuh"
#include "kernels/launchers.h"
#include "plan_internal.h"

namespace inorm::detail {
namespace {

__device__ __forceinline__ SplitPartial merge(const SplitPartial& a, const SplitPartial& b) {
  if (b.count == 0.0) return a;
  if (a.count == 0.0) return b;
  const double count = a.count + b.count;
  const double delta = b.mean - a.mean;
  return {count, a.mean + delta * (b.count / count), a.m2 + b.m2 + delta * delta * (a.count * b.count / count)};
}

// The slice's statistics from its parts' partials, the same in every CTA: the count-weighted mean
// of the parts' means around part 0's (one block-wide sum of (count, weighted offset)), then
// M2 = sum of (M2_i + count_i * (mean_i - mean)^2) (another). Two sums and one division per CTA:
// merging the partials pairwise by Chan's formula (a division per merge, a dependent tree) cost
// each normalize CTA 1-5 us before its first load (dev/VARIANTS.md 27).
__device__ __forceinline__ SplitPartial combine_parts(const SplitPartial* partials, int parts) {
  using Sum = cub::BlockReduce<double2, kSplitThreads>;
  using SumM2 = cub::BlockReduce<double, kSplitThreads>;
  __shared__ union {
    typename Sum::TempStorage sum;
    typename SumM2::TempStorage sum_m2;
  } storage;
  __shared__ SplitPartial slice_stats;
  const double base = partials[0].mean;
  double2 local{0.0, 0.0};  // (count, count * (mean - base))
#pragma unroll 1
  for (int i = threadIdx.x; i < parts; i += kSplitThreads) {
    local.x += partials[i].count;
    local.y += partials[i].count * (partials[i].mean - base);
  }
  const double2 total =
      Sum(storage.sum).Reduce(local, [](double2 a, double2 b) { return double2{a.x + b.x, a.y + b.y}; });
  if (threadIdx.x == 0) slice_stats = SplitPartial{total.x, base + total.y / total.x, 0.0};
  __syncthreads();
  const double mean = slice_stats.mean;
  double m2 = 0.0;
#pragma unroll 1
  for (int i = threadIdx.x; i < parts; i += kSplitThreads) {
    const double d = partials[i].mean - mean;
    m2 += partials[i].m2 + partials[i].count * d * d;
  }
  m2 = SumM2(storage.sum_m2).Sum(m2);
  if (threadIdx.x == 0) slice_stats.m2 = m2;
  __syncthreads();
  return slice_stats;
}

// The part's statistics, stage by stage: a bulk async copy into shared memory, exact two-pass
// statistics of the stage there (ChunkView, as the shared_resident path), merged in float64.
template <typename T>
__global__ void __launch_bounds__(kSplitThreads, kSplitCtasPerSm) split_stats_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  using Chunk = ChunkView<T, kSplitThreads>;
  extern __shared__ __align__(128) unsigned char smem[];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> loaded;
  __shared__ typename Chunk::TempStorage reduce_storage;
  __shared__ Acc broadcast;

  const int64_t slice = blockIdx.x / args.parts_per_slice;
  const int64_t part_begin = (blockIdx.x % args.parts_per_slice) * args.chunk_len;
  const int64_t part_end = min(part_begin + args.chunk_len, args.slice_len);
  const int64_t stage_len = static_cast<int64_t>(split_stage_len(sizeof(T)));
  const T* x = static_cast<const T*>(args.x) + slice * args.slice_len;
  if (threadIdx.x == 0) {
    init(&loaded, kSplitThreads);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine sees the barrier
  }
  __syncthreads();
  // Once every CTA of this grid has started, the normalize grid may take the slots this grid frees
  // (it waits for this grid's results before it reads anything): no launch gap, no idle tail.
  cudaTriggerProgrammaticLaunchCompletion();

  SplitPartial acc{0.0, 0.0, 0.0};  // thread 0's
  for (int64_t begin = part_begin; begin < part_end; begin += stage_len) {
    const int64_t len = min(stage_len, part_end - begin);
    const RaggedRange<T> range(x + begin, len);
    T* buf = reinterpret_cast<T*>(smem) + range.misalign;  // mirrors x modulo 16 bytes
    loaded.wait(start_chunk_load(loaded, buf, x + begin, range));
    // Ends with a barrier after the last read of buf: the next stage may overwrite it.
    const ChunkStats<Acc> stage = Chunk{buf, range, len}.statistics(reduce_storage, broadcast);
    acc = merge(acc, SplitPartial{static_cast<double>(stage.count),
                                  static_cast<double>(stage.mean) + static_cast<double>(stage.resid),
                                  static_cast<double>(stage.m2)});
  }
  if (threadIdx.x == 0) static_cast<SplitPartial*>(args.split_partials)[blockIdx.x] = acc;
}

template <typename T>
__global__ void __launch_bounds__(kSplitThreads, kSplitNormalizeCtasPerSm)
    split_normalize_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  const int64_t block = static_cast<int64_t>(gridDim.x) - 1 - blockIdx.x;  // reverse order
  const int64_t pieces_per_slice = int64_t{args.parts_per_slice} * kSplitNormalizeCtasPerPart;
  const int64_t slice = block / pieces_per_slice;
  const int64_t piece = block % pieces_per_slice;
  // Launched early (programmatic dependent launch): the statistics grid's partials are complete
  // and visible only after this wait, and y (which may be x) is written only after it.
  cudaGridDependencySynchronize();

  const SplitPartial stats = combine_parts(
      static_cast<const SplitPartial*>(args.split_partials) + slice * args.parts_per_slice, args.parts_per_slice);
  const Acc mean_hi = static_cast<Acc>(stats.mean);
  const SliceAffine<Acc> affine =
      finish_slice<Acc>(args, slice, mean_hi, static_cast<Acc>(stats.mean - static_cast<double>(mean_hi)),
                        static_cast<Acc>(stats.m2), piece == 0 && threadIdx.x == 0);

  // The part's pieces are whole 16-byte vectors (as parts are) and together cover it; a piece past
  // the end of a short last part is empty.
  constexpr int64_t kVec = kVecOf<T>;
  constexpr int64_t kPieces = kSplitNormalizeCtasPerPart;
  const int64_t part_begin = piece / kPieces * args.chunk_len;
  const int64_t part_end = min(part_begin + args.chunk_len, args.slice_len);
  const int64_t piece_len = ((args.chunk_len + kPieces - 1) / kPieces + kVec - 1) / kVec * kVec;
  const int64_t begin = min(part_end, part_begin + piece % kPieces * piece_len);
  const int64_t len = min(piece_len, part_end - begin);
  const T* src = static_cast<const T*>(args.x) + slice * args.slice_len + begin;
  T* dst = static_cast<T*>(args.y) + slice * args.slice_len + begin;
  // Plain loads: the reverse order means the first of them find the statistics pass's data in L2
  // (15-20 MB of few-huge's 201 MB; evict-first loads find more but run slower: dev/VARIANTS.md 20).
  ChunkView<T, kSplitThreads>{src, RaggedRange<T>(src, len), len}.template normalize<kSplitLoadBatch>(
      dst, affine, args.y_coaligned);
}

}  // namespace

Status launch_split(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const unsigned grid = static_cast<unsigned>(plan.grid);
    Status status = allow_max_dynamic_smem(reinterpret_cast<const void*>(&split_stats_kernel<T>));
    if (!status.ok()) return status;
    split_stats_kernel<T><<<grid, kSplitThreads, plan.smem_bytes, stream>>>(args);
    status = cuda_status(cudaGetLastError(), "split_slice statistics launch");
    if (!status.ok()) return status;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(grid * kSplitNormalizeCtasPerPart);
    config.blockDim = dim3(kSplitThreads);
    config.stream = stream;
    cudaLaunchAttribute early{};
    early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    early.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &early;
    config.numAttrs = 1;
    return cuda_status(cudaLaunchKernelEx(&config, &split_normalize_kernel<T>, args), "split_slice normalize launch");
  });
}

}  // namespace inorm::detail
