// kGroupRegisters: small slices (up to 1024 elements, 2048 for aligned half types). A group of
// 4 to 32 lanes loads its slice into registers once; the statistics are an exact two-pass over
// those registers (mean, then deviations with their residual), so x is read once and y written once.
#include <array>
#include <cub/warp/warp_reduce.cuh>
#include <utility>

#include "config.h"
#include "kernels/common.cuh"
#include "kernels/launchers.h"

namespace inorm::detail {
namespace {

template <typename T, int kGroup, int kItems, bool kVector>
__global__ void __launch_bounds__(kGroupCtaThreads) group_forward_kernel(const KernelArgs args) {
  using Acc = AccOf<T>;
  constexpr int kVec = kVector ? kVecOf<T> : 1;
  constexpr int kSlicesPerCta = kGroupCtaThreads / kGroup;
  using WarpReduce = cub::WarpReduce<Acc, kGroup>;
  __shared__ typename WarpReduce::TempStorage reduce_storage[kSlicesPerCta];

  const int group = threadIdx.x / kGroup;
  const int lane = threadIdx.x % kGroup;
  const int64_t slice = static_cast<int64_t>(blockIdx.x) * kSlicesPerCta + group;
  const bool active = slice < args.num_slices;
  const int64_t len = args.slice_len;
  const int64_t offset = active ? slice * len : 0;
  const T* x = static_cast<const T*>(args.x) + offset;
  T* y = static_cast<T*>(args.y) + offset;

  // Item j of this lane starts at element (j * kGroup + lane) * kVec; with kVector, len is a
  // multiple of kVec so an item is either whole or absent.
  auto item_valid = [&](int j) {
    return active && (static_cast<int64_t>(j) * kGroup + lane) * kVec < len;
  };
  Acc values[kItems][kVec];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t first = (static_cast<int64_t>(j) * kGroup + lane) * kVec;
    if (item_valid(j)) {
      if constexpr (kVector) {
        const Pack<T> pack = load_pack_streaming(x + first);
#pragma unroll
        for (int k = 0; k < kVec; ++k) values[j][k] = Traits<T>::to_acc(pack.v[k]);
      } else {
        values[j][0] = Traits<T>::to_acc(__ldcs(x + first));
      }
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) values[j][k] = Acc(0);
    }
  }

  Acc sum = Acc(0);
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) sum += values[j][k];
  }
  sum = __shfl_sync(0xffffffffu, WarpReduce(reduce_storage[group]).Sum(sum), 0, kGroup);
  const Acc count = static_cast<Acc>(len);
  const Acc mean_hi = sum / count;

  Acc dev_sum = Acc(0);
  Acc dev_sq = Acc(0);
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (item_valid(j)) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const Acc d = values[j][k] - mean_hi;
        dev_sum += d;
        dev_sq += d * d;
      }
    }
  }
  __syncwarp();
  dev_sum = __shfl_sync(0xffffffffu, WarpReduce(reduce_storage[group]).Sum(dev_sum), 0, kGroup);
  __syncwarp();
  dev_sq = __shfl_sync(0xffffffffu, WarpReduce(reduce_storage[group]).Sum(dev_sq), 0, kGroup);
  if (!active) return;

  // Corrected two-pass: dev_sum / count is what the rounded mean_hi missed.
  const Acc mean_lo = dev_sum / count;
  const SliceAffine<Acc> affine =
      finish_slice<Acc>(args, slice, mean_hi, mean_lo, dev_sq - dev_sum * mean_lo, lane == 0);

#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (!item_valid(j)) continue;
    const int64_t first = (static_cast<int64_t>(j) * kGroup + lane) * kVec;
    if constexpr (kVector) {
      Pack<T> pack;
#pragma unroll
      for (int k = 0; k < kVec; ++k) pack.v[k] = Traits<T>::from_acc(affine.apply(values[j][k]));
      store_pack_l2(y + first, pack);
    } else {
      __stcs(y + first, Traits<T>::from_acc(affine.apply(values[j][0])));
    }
  }
}

using KernelFn = void (*)(KernelArgs);

template <typename T, std::size_t... I>
constexpr std::array<KernelFn, sizeof...(I)> group_kernel_table(std::index_sequence<I...>) {
  return {&group_forward_kernel<T, kGroupConfigs[I].group, kGroupConfigs[I].items,
                                kGroupConfigs[I].vector>...};
}

}  // namespace

Status launch_group(const Plan& plan, const KernelArgs& args, cudaStream_t stream) {
  return dispatch_dtype(plan.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    static constexpr auto table =
        group_kernel_table<T>(std::make_index_sequence<kNumGroupConfigs>{});
    for (int i = 0; i < kNumGroupConfigs; ++i) {
      const GroupConfig& config = kGroupConfigs[i];
      if (config.group == plan.group_size && config.items == plan.items_per_lane &&
          config.vector == plan.vector_io) {
        table[i]<<<static_cast<unsigned>(plan.grid), kGroupCtaThreads, 0, stream>>>(args);
        return cuda_status(cudaGetLastError(), "group_registers launch");
      }
    }
    return Status(StatusCode::kInvalidArgument,
                  "inorm: the plan names a group configuration that is not compiled in");
  });
}

}  // namespace inorm::detail
